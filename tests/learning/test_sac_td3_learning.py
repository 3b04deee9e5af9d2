"""SAC and TD3 reach a mean of the last 10 episodes >= -200 on Pendulum-v1 within 20,000 env steps
(tuned defaults, in-process), with a fixed seed and three times with the default seed=None: the path users
take, where the target critics once started as other random networks than the critics (issue 17). Seeds
0-9 solve in 3,200-6,400 env steps (benchmarks/adam_epsilon.py, TD3's actor then orthogonal; with its
fan-in start, seeds 0-2 at 3,614: benchmarks/offpolicy_pendulum.py), so the budget leaves room for noise."""

import pytest

from relayrl import SACConfig, TD3Config

pytestmark = pytest.mark.learning
MAX_STEPS = 20_000


def train_until(config, threshold: float = -200.0):
    algo = config.reporting(metrics_num_episodes_for_smoothing=10).build()
    try:
        while True:
            result = algo.train()
            solved = result["episodes_total"] >= 10 and result["episode_reward_mean"] >= threshold
            if solved or result["timesteps_total"] >= MAX_STEPS:
                return result
    finally:
        algo.stop()


@pytest.mark.parametrize("seed", [0, None, None, None], ids=["seed0", "unseeded1", "unseeded2", "unseeded3"])
@pytest.mark.parametrize("config_class", [SACConfig, TD3Config], ids=["sac", "td3"])
def test_solves_pendulum_within_20k_steps(config_class, seed):
    result = train_until(config_class.from_tuned("Pendulum-v1").debugging(seed=seed))
    assert result["episode_reward_mean"] >= -200, result
    assert result["timesteps_total"] <= MAX_STEPS
    assert result["learner/num_updates_total"] >= 1_000  # it learnt, rather than started lucky
