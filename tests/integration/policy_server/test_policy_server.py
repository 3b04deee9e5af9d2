"""`relayrl serve` as users run it: a real server process, real client processes over HTTP on loopback."""

import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from tests.helpers.paths import ROOT

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(ROOT))


def start_server(tmp_path, *args):
    """Start `relayrl serve` on a free port; return (process, url, stderr file)."""
    err = tmp_path / "server.err"
    proc = subprocess.Popen(
        [sys.executable, "-m", "relayrl.cli", "serve", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=err.open("w"),
        text=True,
        env=ENV,
        cwd=ROOT,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        match = re.search(r"serving \S+ on (http://\S+:\d+)", err.read_text())
        if match:
            return proc, match.group(1), err
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"server did not start: {err.read_text()[-2000:]}")


@pytest.mark.learning
def test_four_client_processes_train_ppo_on_cartpole_to_400(tmp_path):
    server, url, err = start_server(
        tmp_path,
        "ppo",
        "--env",
        "CartPole-v1",
        "--seed",
        "0",
        "--stop-reward",
        "400",
        "--stop-time",
        "240",
        "--json",
        "--quiet",
    )
    clients = [
        subprocess.Popen(
            [
                sys.executable,
                "examples/external_cartpole.py",
                "--address",
                url,
                "--seed",
                str(i),
                "--max-seconds",
                "240",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=ENV,
            cwd=ROOT,
        )
        for i in range(4)
    ]
    try:
        out, _ = server.communicate(timeout=260)
        for client in clients:  # the server stopped: every client notices and exits by itself
            c_out, c_err = client.communicate(timeout=30)
            assert client.returncode == 0, c_err[-2000:]
            assert int(re.search(r"played (\d+) episodes", c_out).group(1)) > 0
    finally:
        for p in [server, *clients]:
            if p.poll() is None:
                p.kill()
    assert server.returncode == 0, err.read_text()[-2000:]
    final = json.loads(out.strip().splitlines()[-1])
    print(
        f"\nserver final: reward {final['episode_reward_mean']:.1f} after {final['timesteps_total']} steps, "
        f"{final['training_iteration']} iterations, {final['wall_time_s']:.1f} s"
    )
    assert final["episode_reward_mean"] >= 400, final
    assert final["weights_version"] == final["training_iteration"] > 0


@pytest.mark.parametrize(
    "args,message",
    [
        (["serve", "dqnn", "--env", "CartPole-v1"], "unknown algorithm 'dqnn'; allowed: ppo"),
        (["serve", "ppo", "--env", "CartPole-v1", "--port", "70000"], "--port 70000: allowed 0..65535"),
        (["serve", "ppo", "--env", "CartPol-v1"], "unknown environment id 'CartPol-v1'"),
        (["serve", "ppo", "--env", "no_such_module:X-v0"], "cannot import 'no_such_module'"),
        (["serve", "ppo", "--env", "text_commands:TextCommands-v0"], "is Text: pass a codec"),
    ],
)
def test_serve_bad_input_is_one_line_on_stderr_and_exit_2(args, message):
    assert_refused(args, message)


@pytest.mark.parametrize(
    "flag,value,allowed",
    [
        ("--max-episodes", "0", "allowed: an integer >= 1 and <= 10000000"),
        ("--max-episodes", "lots", "allowed: an integer >= 1"),
        ("--episode-timeout-s", "-1", "allowed: a finite number > 0 and <= 86400.0"),
        ("--episode-timeout-s", "inf", "allowed: a finite number > 0"),
        ("--max-connections", "1e3", "allowed: an integer >= 1 and <= 65536"),
        ("--read-timeout-s", "nan", "allowed: a finite number > 0 and <= 86400.0"),
        ("--read-timeout-s", "0", "allowed: a finite number > 0"),
        ("--batch-wait-ms", "-3", "allowed: a finite number >= 0 and <= 1000"),
        ("--stop-iters", "0", "allowed: an integer >= 1"),
    ],
)
def test_serve_limit_flags_refuse_bad_values_in_one_line(flag, value, allowed):
    assert_refused(
        ["serve", "ppo", "--env", "CartPole-v1", flag, value],
        f"argument {flag}: {value!r} is invalid: {allowed}",
    )


def assert_refused(args: list[str], message: str) -> None:
    env = dict(ENV, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'examples'}")
    proc = subprocess.run(
        [sys.executable, "-m", "relayrl.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("relayrl")]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_serve_outlives_poisoned_data_on_ipv6_loopback_with_every_limit_set(tmp_path):
    """`relayrl serve` with each limit flag, on ::1 where the machine has it: a client sends rewards that
    overflow float32 (refused) and whose squares would overflow the update (dropped with a warning); the
    server trains its 3 iterations on the rest and exits 0 by itself."""
    from relayrl.policy_server import PolicyClient, PolicyServerError

    host = "::1" if socket.has_ipv6 and _binds("::1") else "127.0.0.1"
    server, url, err = start_server(
        tmp_path,
        "ppo",
        "--env",
        "CartPole-v1",
        "--host",
        host,
        "--seed",
        "0",
        "--set",
        "train_batch_size=64",
        "--set",
        "sgd_minibatch_size=32",
        "--max-episodes",
        "100",
        "--episode-timeout-s",
        "60",
        "--max-connections",
        "16",
        "--read-timeout-s",
        "5",
        "--stop-iters",
        "3",
        "--json",
        "--quiet",
    )
    client = PolicyClient(url, reconnect_s=2)
    try:
        eid = client.start_episode()
        client.get_action(eid, [0.0] * 4)
        client.log_returns(eid, 1e39)
        with pytest.raises(PolicyServerError, match="reward must be a number within float32's range"):
            client.get_action(eid, [0.0] * 4)
        for _ in range(10):
            client.get_action(eid, [0.0] * 4)
            client.log_returns(eid, 1e20)
        client.end_episode(eid, [0.0] * 4)
        try:
            while True:  # ordinary episodes until the server has trained 3 iterations and gone
                eid = client.start_episode()
                for _ in range(50):
                    client.get_action(eid, [0.01, 0.0, 0.0, 0.0])
                    client.log_returns(eid, 1.0)
                client.end_episode(eid, [0.0] * 4, truncated=True)
        except ConnectionError:
            pass
        out, _ = server.communicate(timeout=60)
    finally:
        client.close()
        if server.poll() is None:
            server.kill()
    log = err.read_text()
    assert server.returncode == 0, log[-2000:]
    assert f"serving ppo on http://{'[::1]' if host == '::1' else host}:" in log
    assert "dropping 11 steps of episode" in log and "Traceback" not in log, log[-2000:]
    final = json.loads(out.strip().splitlines()[-1])
    assert final["training_iteration"] == 3 and final["weights_version"] == 3


def _binds(host: str) -> bool:
    try:
        with socket.socket(socket.AF_INET6) as sock:
            sock.bind((host, 0))
        return True
    except OSError:
        return False
