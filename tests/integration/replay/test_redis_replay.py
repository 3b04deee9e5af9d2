"""Replay in a real Redis server: round trip, FIFO capacity, clear errors, a learner killed with SIGKILL whose
successor finds every stored transition (count and checksum) and keeps training, and a CLI run whose output,
log directory and checkpoints hold the password nowhere. (Redis failing: test_redis_failures.py.)"""

import json
import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from relayrl import DQNConfig
from relayrl.replay.redis_replay import RedisReplay, RedisStartError
from tests.helpers.paths import HELPERS, ROOT


def rows(start, n):
    return {
        "obs": np.arange(start, start + n, dtype=np.float32).reshape(n, 1),
        "actions": np.arange(start, start + n),
    }


def test_round_trip_capacity_and_checksum(redis_server):
    replay = RedisReplay(
        redis_server["address"], redis_server["password"], capacity=250, key_prefix="t-roundtrip", seed=0
    )
    replay.clear()
    for i in range(4):
        replay.add(rows(100 * i, 100))
    assert len(replay) == 300  # blocks are evicted whole: 400 rows -> drop the oldest 100, keep >= capacity
    batch = replay.sample(500)
    assert set(batch["actions"].tolist()) <= set(range(100, 400)) and len(batch["actions"]) == 500
    np.testing.assert_array_equal(batch["obs"][:, 0], batch["actions"].astype(np.float32))  # rows stay intact
    rows_counted, digest = replay.checksum()
    again = RedisReplay(
        redis_server["address"], redis_server["password"], capacity=250, key_prefix="t-roundtrip"
    )
    assert again.checksum() == (rows_counted, digest) == (300, digest)


def test_bad_password_and_unreachable_server_are_clear(redis_server):
    with pytest.raises(RedisStartError, match="refused the password"):
        RedisReplay(redis_server["address"], "wrong-password", capacity=10)
    with pytest.raises(RedisStartError, match="cannot use Redis at 127.0.0.1:1: ConnectionError"):
        RedisReplay("127.0.0.1:1", "x", capacity=10)
    with pytest.raises(ValueError, match="redis_password is not set"):
        DQNConfig().environment("CartPole-v1").training(replay_backend="redis").validate()


def test_killed_learner_successor_finds_every_transition(redis_server):
    prefix = "t-killed-learner"
    RedisReplay(redis_server["address"], redis_server["password"], capacity=10, key_prefix=prefix).clear()
    script = HELPERS / "dqn_redis_learner.py"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.Popen(
        [sys.executable, str(script), redis_server["address"], redis_server["password"], prefix],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()[-3000:]
        before = json.loads(line)
    finally:
        proc.send_signal(signal.SIGKILL)  # the learner dies without any chance to clean up
        proc.wait(timeout=30)
    assert before["rows"] > 0 and before["rows"] == before["timesteps_total"]
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_envs_per_worker=4, rollout_fragment_length=50)
        .training(
            replay_backend="redis",
            redis_address=redis_server["address"],
            redis_password=redis_server["password"],
            redis_key_prefix=prefix,
            replay_buffer_capacity=100_000,
            learning_starts=400,
            train_batch_size=32,
        )
        .debugging(seed=1)
    )
    algo = config.build()
    try:
        assert algo.replay.checksum() == (before["rows"], before["checksum"])
        result = algo.train()  # the stored experience counts towards learning_starts: it learns at once
        assert result["learner/num_updates"] > 0
        assert len(algo.replay) == before["rows"] + result["env_steps_this_iter"]
    finally:
        algo.stop()


def test_a_run_writes_the_password_nowhere(redis_server, tmp_path):
    """Worst case: the password on the command line. Neither the output nor any file of the run (config.json,
    progress.csv, TensorBoard events, the checkpoint's config.json and state.json) holds it."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    password = redis_server["password"]
    cmd = [
        sys.executable,
        "-m",
        "relayrl.cli",
        "train",
        "dqn",
        "CartPole-v1",
        "--workers",
        "0",
        "--stop-iters",
        "3",
        "--checkpoint-at-end",
        "--json",
        "--logdir",
        str(tmp_path),
        "--set",
        "replay_backend=redis",
        "--set",
        f"redis_address={redis_server['address']}",
        "--set",
        f"redis_password={password}",
        "--set",
        "redis_key_prefix=t-secret-run",
        "--set",
        "learning_starts=100",
    ]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert list(tmp_path.glob("checkpoints/ckpt-*/state.json")) and (tmp_path / "config.json").exists()
    assert password not in done.stdout + done.stderr
    leaking = [p for p in tmp_path.rglob("*") if p.is_file() and password.encode() in p.read_bytes()]
    assert leaking == []
