"""env_wrappers from the command line (--set) and a YAML --config reach every env a run makes: rewards clipped
to 0.5 and episodes cut at 7 steps show in the results; a bad wrapper is one line, exit 2."""

import json
import os
import subprocess
import sys

import pytest

WRAPPERS = (
    "[{wrapper: ClipReward, kwargs: {min_reward: 0, max_reward: 0.5}}, "
    "{wrapper: TimeLimit, kwargs: {max_episode_steps: 7}}]"
)


def relayrl(*args, timeout=240):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    command = [sys.executable, "-m", "relayrl.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("source", ["--set", "--config"])
def test_clip_reward_and_time_limit_shape_the_episodes(tmp_path, source):
    if source == "--set":
        given = ["--set", f"env_wrappers={WRAPPERS}"]
    else:
        tmp_path.joinpath("run.yaml").write_text(f"env_wrappers: {WRAPPERS}\n")
        given = ["--config", str(tmp_path / "run.yaml")]
    proc = relayrl(
        "train", "ppo", "CartPole-v1", "--stop-iters", "1", "--json", "--quiet", "--logdir", str(tmp_path),
        "--set", "train_batch_size=256", *given,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    final = json.loads(proc.stdout.strip().splitlines()[-1])
    assert final["episode_len_mean"] == 7.0 and final["episode_reward_mean"] == 3.5


def test_a_bad_wrapper_is_one_line_naming_the_entry(tmp_path):
    proc = relayrl(
        "train", "ppo", "CartPole-v1", "--stop-iters", "1", "--logdir", str(tmp_path),
        "--set", "env_wrappers=[{wrapper: TimeLimit, kwargs: {max_episode_steps: 7}}, {wrapper: os:system}]",
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "relayrl: error: env_wrappers[1] = 'os:system' is a builtin_function_or_method, "
        "not a gymnasium.Wrapper subclass"
    )
