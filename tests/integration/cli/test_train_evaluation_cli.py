"""`relayrl train --set evaluation_interval=1`: evaluation keys in the JSON result, TensorBoard, progress.csv
and the progress line, with a Ray rollout worker; --keep-best keeps the best evaluated checkpoint and is
refused without evaluation."""

import csv
import json
import os
import subprocess
import sys

import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from relayrl.persistence import checkpoint

RELAYRL = [sys.executable, "-m", "relayrl.cli"]
EVAL = "evaluation/episode_reward_mean"


def run_cli(*args, timeout=240):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    return subprocess.run(RELAYRL + list(args), capture_output=True, text=True, timeout=timeout, env=env)


def test_evaluation_reaches_json_tensorboard_csv_and_progress_and_keep_best(tmp_path):
    proc = run_cli(
        "train", "ppo", "CartPole-v1", "--workers", "1", "--stop-iters", "3", "--seed", "0",
        "--logdir", str(tmp_path), "--json", "--keep-best", "--checkpoint-every", "2",
        "--set", "evaluation_interval=1", "--set", "evaluation_episodes=3", "--set", "train_batch_size=128",
        "--set", "sgd_minibatch_size=64", "--set", "num_sgd_iter=1",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    final = json.loads(proc.stdout.strip().splitlines()[-1])
    assert final["workers/healthy"] == 1 and final["evaluation/episodes"] == 3
    for key in ("_min", "_max", "_std"):
        assert f"evaluation/episode_reward{key}" in final
    assert "  eval " in proc.stderr and "steps/s  elapsed " in proc.stderr and "ETA " in proc.stderr
    assert "last evaluation" in proc.stderr

    with open(tmp_path / "progress.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [float(r[EVAL]) for r in rows][-1] == final[EVAL] and len(rows) == 3
    assert all(r["evaluation/episode_len_mean"] and r["evaluation/episode_reward_std"] for r in rows)

    acc = EventAccumulator(str(tmp_path), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.value for e in acc.Scalars(EVAL)] == pytest.approx([float(r[EVAL]) for r in rows])  # float32

    best_iteration = max(range(3), key=lambda i: float(rows[i][EVAL])) + 1  # the first of equals
    state = checkpoint.verify(str(tmp_path / "checkpoints" / "best"), algo="ppo")
    assert state["iteration"] == best_iteration
    best = json.loads((tmp_path / "checkpoints" / "best.json").read_text())
    assert best == {EVAL: float(rows[best_iteration - 1][EVAL]), "training_iteration": best_iteration}
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["best", "best.json", "ckpt-0000002"]


def test_keep_best_without_evaluation_is_refused_in_one_line(tmp_path):
    logdir = tmp_path / "run"
    proc = run_cli("train", "ppo", "CartPole-v1", "--stop-iters", "1", "--keep-best", "--logdir", str(logdir))
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "relayrl: error: --keep-best needs evaluation while training; allowed: set evaluation_interval "
        "(--set evaluation_interval=N, or config.evaluation(evaluation_interval=N))"
    ]
    assert not logdir.exists()  # refused before anything was written
