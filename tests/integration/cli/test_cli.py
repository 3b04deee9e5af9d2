"""The CLI as users run it: a real subprocess, real Ray, JSON result, TensorBoard files, clear errors."""

import json
import os
import subprocess
import sys

import pytest

RELAYRL = [sys.executable, "-m", "relayrl.cli"]


def run_cli(*args, timeout=240):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    return subprocess.run(RELAYRL + list(args), capture_output=True, text=True, timeout=timeout, env=env)


def test_train_with_two_ray_workers_prints_json_and_writes_tensorboard(tmp_path):
    proc = run_cli(
        "train",
        "ppo",
        "CartPole-v1",
        "--workers",
        "2",
        "--stop-iters",
        "3",
        "--seed",
        "0",
        "--logdir",
        str(tmp_path),
        "--json",
        "--set",
        "lr=0.001",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    final = json.loads(proc.stdout.strip().splitlines()[-1])
    assert final["training_iteration"] == 3 and final["workers/healthy"] == 2
    assert final["solved"] is False and final["time_to_solve_s"] is None
    assert final["time_total_s"] > 0 and final["wall_time_s"] >= final["time_total_s"]
    assert "tensorboard --logdir" in proc.stderr
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(tmp_path))
    from relayrl.models.tf_import import (
        _CHATTER,
    )  # TensorFlow's native start-up lines stay out of relayrl's stderr

    assert not [line for line in proc.stderr.splitlines() if _CHATTER.match(line) or "cuda" in line], (
        proc.stderr
    )


def test_stop_reward_reports_time_to_solve(tmp_path):
    proc = run_cli(
        "train",
        "ppo",
        "CartPole-v1",
        "--stop-reward",
        "30",
        "--stop-timesteps",
        "20000",
        "--logdir",
        str(tmp_path),
        "--json",
        "--quiet",
        "--seed",
        "0",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    final = json.loads(proc.stdout.strip().splitlines()[-1])
    assert final["solved"] is True and final["episode_reward_mean"] >= 30
    assert 0 < final["time_to_solve_s"] <= final["wall_time_s"]


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["train", "dqnn", "CartPole-v1"],
            "unknown algorithm 'dqnn' (did you mean 'dqn'?); allowed: a2c, a3c, apex, dqn, impala, ppo, "
            "qlearning, reinforce, sac, td3",
        ),
        (["train", "ppo", "CartPol-v1"], "unknown environment id 'CartPol-v1'"),
        (["train", "ppo", "CartPole-v1", "--set", "lrr=0.1"], "unknown key 'lrr'"),
        (["train", "ppo", "CartPole-v1", "--set", "lr=-1"], "PPOConfig.lr = -1 is invalid"),
        (["train", "ppo", "CartPole-v1", "--set", "lr"], "expected KEY=VALUE"),
        (["train", "ppo", "CartPole-v1", "--set", "model.fcnet_hiddens=[0]"], "fcnet_hiddens"),
        (["train", "ppo", "Blackjack-v1", "--stop-iters", "1"], "observation space Tuple"),
        (
            ["train", "ppo", "CartPole-v1", "--workers", "two"],
            "argument --workers: 'two' is invalid: allowed: an integer >= 0",
        ),
        (
            ["train", "a3c", "CartPole-v1", "--workers", "0"],
            "A3CConfig.num_rollout_workers = 0 is invalid: allowed: an integer >= 1",
        ),
        (
            ["train", "a2c", "CartPole-v1", "--set", "update_mode=gradients"],
            "update_mode = 'gradients' is invalid with num_rollout_workers = 0",
        ),
        (["train", "impala", "CartPole-v1", "--set", "queue_full=wait"], "allowed: one of 'drop', 'block'"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(args, message):
    proc = run_cli(*args, timeout=120)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("relayrl")]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("algo,workers", [("a2c", "0"), ("impala", "2")])
def test_onpolicy_and_async_family_run_from_the_cli(tmp_path, algo, workers):
    proc = run_cli(
        "train",
        algo,
        "CartPole-v1",
        "--workers",
        workers,
        "--stop-iters",
        "3",
        "--seed",
        "0",
        "--logdir",
        str(tmp_path),
        "--json",
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    final = json.loads(proc.stdout.strip().splitlines()[-1])
    assert final["training_iteration"] == 3 and final["timesteps_total"] > 0
