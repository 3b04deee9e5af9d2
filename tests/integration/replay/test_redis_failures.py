"""Redis as a dependency that fails, with real redis-server processes that each test freezes (SIGSTOP), kills
or restarts: the replay rides out a blip, gives up after redis_deadline_s or at --stop-time, and
`relayrl train` then ends by its deadline with one line naming the address (exit 1); an unusable Redis at
start-up is bad input (exit 2). The password never appears in any output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from relayrl.replay.redis_replay import RedisReplay, RedisStartError
from relayrl.replay.redis_retry import ReplayUnavailableError
from tests.helpers.paths import ROOT


def rows(start: int, n: int) -> dict[str, np.ndarray]:
    actions = np.arange(start, start + n)
    return {"obs": actions.astype(np.float32).reshape(n, 1), "actions": actions}


def later(seconds: float, action) -> threading.Timer:
    timer = threading.Timer(seconds, action)
    timer.start()
    return timer


# ---------------------------------------------------------------------------------------- the replay itself
def test_a_frozen_server_for_less_than_the_deadline_is_ridden_out(redis_factory):
    server = redis_factory()
    replay = RedisReplay(
        server.address, server.password, capacity=1000, key_prefix="blip", timeout_s=0.2, deadline_s=20
    )
    replay.add(rows(0, 10))
    server.signal(signal.SIGSTOP)
    timer = later(1.0, lambda: server.signal(signal.SIGCONT))
    try:
        started = time.monotonic()
        replay.add(rows(10, 10))  # times out a few times (requests queue in the frozen server), then succeeds
        assert time.monotonic() - started >= 0.9
    finally:
        timer.join()
        server.signal(signal.SIGCONT)
    # the requests that timed out were delivered to the server when it woke up: nothing was written twice
    assert len(replay) == 20
    assert sorted(replay.sample(200)["actions"].tolist())[-1] <= 19
    entries = replay.client.lrange("blip:blocks", 0, -1)
    assert len(entries) == len(set(entries)) == 2


def test_a_restart_with_aof_is_ridden_out_and_keeps_every_row(redis_factory):
    server = redis_factory(appendonly=True)
    replay = RedisReplay(
        server.address,
        server.password,
        capacity=1000,
        key_prefix="restart",
        timeout_s=0.5,
        deadline_s=20,
        appendonly=True,
    )
    replay.add(rows(0, 30))
    server.signal(signal.SIGKILL)  # appendfsync always: every acknowledged write is in the AOF
    server.proc.wait(timeout=10)
    timer = later(1.0, server.start)  # same port, password and directory
    try:
        replay.add(rows(30, 30))  # connection refused, with backoff, until the new server answers
    finally:
        timer.join()
    assert replay.checksum()[0] == len(replay) == 60
    np.testing.assert_array_equal(np.sort(replay.sample(500)["actions"]) < 60, True)


@pytest.mark.parametrize("run_deadline_first", [False, True])
def test_a_frozen_server_past_the_deadline_raises_one_line_naming_it(redis_factory, run_deadline_first):
    server = redis_factory()
    replay = RedisReplay(
        server.address,
        server.password,
        capacity=100,
        key_prefix="frozen",
        timeout_s=0.3,
        deadline_s=30 if run_deadline_first else 1.5,
    )
    replay.add(rows(0, 5))
    if run_deadline_first:  # the CLI's --stop-time end comes before redis_deadline_s
        replay.give_up_by = time.monotonic() + 1.5
    server.signal(signal.SIGSTOP)
    started = time.monotonic()
    with pytest.raises(ReplayUnavailableError) as caught:
        replay.add(rows(5, 5))
    waited = time.monotonic() - started
    assert 1.4 <= waited <= 1.5 + 0.3 + 1.0 + 2.0  # deadline + one socket timeout + one backoff + slack
    message = str(caught.value)
    assert message.startswith(f"Redis at {server.address} failed for ") and "\n" not in message
    assert ("--stop-time" if run_deadline_first else "redis_deadline_s = 1.5 s") in message
    assert server.password not in message
    server.signal(signal.SIGCONT)
    assert len(RedisReplay(server.address, server.password, capacity=100, key_prefix="frozen")) >= 5  # kept


def test_start_up_failures_are_bad_input_without_the_password(redis_factory):
    server = redis_factory()
    with pytest.raises(RedisStartError, match="refused the password") as caught:
        RedisReplay(server.address, "wrong-" + server.password, capacity=10)
    assert server.password not in str(caught.value)
    server.signal(signal.SIGSTOP)  # accepts connections (the kernel does) but never answers
    try:
        started = time.monotonic()
        with pytest.raises(RedisStartError, match=r"did not answer in 0.5 s \(redis_timeout_s\)"):
            RedisReplay(server.address, server.password, capacity=10, timeout_s=0.5)
        assert time.monotonic() - started < 5
    finally:
        server.signal(signal.SIGCONT)
    server.stop()
    with pytest.raises(RedisStartError, match=f"cannot use Redis at {server.address}: ConnectionError"):
        RedisReplay(server.address, server.password, capacity=10)
    for bad in ("nocolon", "127.0.0.1:99999", "127.0.0.1:", ":6379", "127.0.0.1:6379x"):
        with pytest.raises(ValueError, match="redis_address = .* is invalid: allowed: 'host:port'"):
            RedisReplay(bad, "x", capacity=10)


# ---------------------------------------------------------------------------------------- relayrl train
class TrainRun:
    """`relayrl train dqn CartPole-v1` on a Redis replay in a subprocess, password in its environment;
    stderr read as it comes, so a test can act once the first progress line shows training under way."""

    def __init__(self, server, logdir: Path, *extra: str, password: str | None = None):
        self.password = server.password if password is None else password
        env = dict(
            os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT), RELAYRL_REDIS_PASSWORD=self.password
        )
        cmd = [
            sys.executable,
            "-m",
            "relayrl.cli",
            "train",
            "dqn",
            "CartPole-v1",
            "--workers",
            "0",
            "--logdir",
            str(logdir),
            "--set",
            "replay_backend=redis",
            "--set",
            f"redis_address={server.address}",
            "--set",
            "learning_starts=100",
            *extra,
        ]
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        self.lines: list[str] = []
        self.training = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("iter "):
                self.training.set()

    def wait_training(self) -> None:
        if not self.training.wait(timeout=120):
            self.proc.kill()
            pytest.fail("no progress line within 120 s:\n" + "\n".join(self.lines[-30:]))

    def finish(self, timeout: float) -> tuple[int, str, str]:
        """(exit code, stdout, stderr); the run is killed (and the test fails) past `timeout` seconds."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            pytest.fail(f"relayrl train still running after {timeout} s: it hangs on the dead Redis")
        self._reader.join(timeout=10)
        return code, self.proc.stdout.read(), "\n".join(self.lines)


def assert_one_line_failure(code: int, stderr: str, expected_code: int, *needles: str) -> str:
    assert code == expected_code, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("relayrl: error: "), stderr[-3000:]
    for needle in needles:
        assert needle in last, last
    return last


def assert_secret_nowhere(secret: str, *texts: str, folder: Path | None = None) -> None:
    for text in texts:
        assert secret not in text
    if folder is not None:
        leaking = [p for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
        assert leaking == [], leaking


def test_train_with_a_frozen_redis_ends_at_its_stop_time(redis_factory, tmp_path):
    server = redis_factory()
    stop_time, timeout_s = 6.0, 1.0
    run = TrainRun(
        server,
        tmp_path,
        "--stop-time",
        str(stop_time),
        "--set",
        f"redis_timeout_s={timeout_s}",
        "--set",
        "redis_deadline_s=300",
    )  # only --stop-time can end the wait in time
    try:
        run.wait_training()
        server.signal(signal.SIGSTOP)
        frozen_at = time.monotonic()
        code, stdout, stderr = run.finish(timeout=120)
        waited = time.monotonic() - frozen_at
    finally:
        server.signal(signal.SIGCONT)
    last = assert_one_line_failure(
        code, stderr, 1, f"ReplayUnavailableError: Redis at {server.address}", "--stop-time"
    )
    assert waited <= stop_time + timeout_s + 1.0 + 10.0, last  # far below a hang (redis_deadline_s = 300)
    assert time.monotonic() - run.started <= stop_time + 60.0  # start-up (TensorFlow import) + stop-time
    assert_secret_nowhere(server.password, stdout, stderr, folder=tmp_path)


def test_train_with_a_killed_redis_ends_after_its_deadline_and_aof_keeps_the_replay(redis_factory, tmp_path):
    server = redis_factory(appendonly=True)
    deadline_s, timeout_s = 3.0, 1.0
    run = TrainRun(
        server,
        tmp_path,
        "--stop-time",
        "120",
        "--set",
        f"redis_timeout_s={timeout_s}",
        "--set",
        f"redis_deadline_s={deadline_s}",
        "--set",
        "redis_appendonly=true",
        "--set",
        "redis_key_prefix=killed",
    )
    run.wait_training()
    server.signal(signal.SIGKILL)
    killed_at = time.monotonic()
    code, stdout, stderr = run.finish(timeout=90)
    waited = time.monotonic() - killed_at
    last = assert_one_line_failure(
        code,
        stderr,
        1,
        f"ReplayUnavailableError: Redis at {server.address}",
        f"redis_deadline_s = {deadline_s} s",
    )
    assert waited <= deadline_s + timeout_s + 1.0 + 10.0, last  # far below --stop-time 120
    assert_secret_nowhere(server.password, stdout, stderr, folder=tmp_path)
    server.proc.wait(timeout=10)
    server.start()  # the AOF brings back what the run wrote
    assert len(RedisReplay(server.address, server.password, capacity=10**6, key_prefix="killed")) >= 100


@pytest.mark.parametrize("case", ["wrong password", "unreachable", "bad address"])
def test_train_refuses_an_unusable_redis_at_start_with_one_line(redis_factory, tmp_path, case):
    server = redis_factory()
    secret = "hunter2-" + server.password
    extra = {
        "wrong password": ["--set", f"redis_password={secret}"],  # given on the command line: worst case
        "unreachable": ["--set", "redis_address=127.0.0.1:1"],
        "bad address": ["--set", "redis_address=127.0.0.1:99999"],
    }[case]
    run = TrainRun(server, tmp_path, "--stop-iters", "1", *extra, password=secret)
    code, stdout, stderr = run.finish(timeout=120)
    needle = {
        "wrong password": f"Redis at {server.address} refused the password",
        "unreachable": "cannot use Redis at 127.0.0.1:1: ConnectionError",
        "bad address": "DQNConfig.redis_address = '127.0.0.1:99999' is invalid",
    }[case]
    assert_one_line_failure(code, stderr, 2, needle)
    assert_secret_nowhere(secret, stdout, stderr, folder=tmp_path)
