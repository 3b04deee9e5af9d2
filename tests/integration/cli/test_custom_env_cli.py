"""`relayrl train ppo mod:Env-v0` with mod.py in the folder it runs from: in the driver (--workers 0) and on a
Ray worker (--workers 1: Ray puts the driver's working directory on its workers' sys.path). `python -P`
leaves the current folder off sys.path, as the `relayrl` console script does."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

GO_RIGHT = textwrap.dedent(
    """
    import gymnasium as gym
    import numpy as np


    class GoRight(gym.Env):
        observation_space = gym.spaces.Box(-10.0, 10.0, (1,), np.float32)
        action_space = gym.spaces.Discrete(2)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            self.x = 0
            return np.zeros(1, np.float32), {}

        def step(self, action):
            self.x += 1 if action == 1 else -1
            return np.array([self.x], np.float32), float(action == 1), abs(self.x) >= 5, False, {}


    gym.register("GoRight-v0", entry_point=GoRight, max_episode_steps=20, reward_threshold=4.0)
    """
)


def relayrl(cwd, *args, timeout=240):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    command = [sys.executable, "-P", "-m", "relayrl.cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture
def env_folder(tmp_path):
    tmp_path.joinpath("goright.py").write_text(GO_RIGHT)
    return tmp_path


@pytest.mark.parametrize("workers", ["0", "1"])
def test_train_a_module_env_from_its_folder(env_folder, workers):
    proc = relayrl(
        env_folder, "train", "ppo", "goright:GoRight-v0", "--stop-iters", "1", "--workers", workers,
        "--logdir", str(env_folder / "log"), "--json", "--quiet", "--set", "train_batch_size=256",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    final = json.loads(proc.stdout.strip().splitlines()[-1])
    assert final["training_iteration"] == 1 and final["timesteps_total"] > 200
    assert 0 < final["episode_len_mean"] <= 20  # GoRight's own episodes: its module ran where they were made


def test_without_stop_flags_the_module_envs_threshold_is_used(env_folder):
    # the threshold (4.0) is reached in seconds; without it the run would go on to a million steps
    proc = relayrl(
        env_folder, "train", "ppo", "goright:GoRight-v0", "--logdir", str(env_folder / "log"), "--json",
        "--quiet", "--set", "train_batch_size=256", "--set", "lr=0.01", timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1])["episode_reward_mean"] >= 4.0


def test_a_module_that_is_not_importable_is_one_line_saying_how(tmp_path):
    proc = relayrl(tmp_path, "train", "ppo", "goright:GoRight-v0", "--stop-iters", "1")
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "relayrl: error: env 'goright:GoRight-v0': cannot import 'goright' (No module named 'goright'); "
        "run relayrl from the folder that holds it, or add that folder to PYTHONPATH"
    )
