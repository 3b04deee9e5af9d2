"""A3C and IMPALA with 2 Ray workers learn CartPole-v1 (real training, fixed seeds)."""

import pytest

from relayrl import A3CConfig, IMPALAConfig

pytestmark = pytest.mark.learning


def train_until(config, threshold: float = 475.0, max_steps: int = 500_000):
    algo = config.build()
    try:
        while True:
            result = algo.train()
            if result["episode_reward_mean"] >= threshold or result["timesteps_total"] >= max_steps:
                return result
    finally:
        algo.stop()


def test_a3c_with_two_workers_solves_cartpole(ray_session):
    result = train_until(
        A3CConfig().environment("CartPole-v1").rollouts(num_rollout_workers=2).debugging(seed=0)
    )
    assert result["episode_reward_mean"] >= 475, result
    assert result["learner/staleness_mean"] >= 0  # gradients applied as they arrived


def test_impala_with_two_workers_solves_cartpole(ray_session):
    result = train_until(
        IMPALAConfig().environment("CartPole-v1").rollouts(num_rollout_workers=2).debugging(seed=0)
    )
    assert result["episode_reward_mean"] >= 475, result
    assert result["learner/policy_lag_max"] >= 0
