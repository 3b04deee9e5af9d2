"""PPO reaches episode_reward_mean 475 (last 100 episodes) on CartPole-v1 with the tuned defaults."""

import pytest

from relayrl import PPOConfig

pytestmark = pytest.mark.learning
MAX_STEPS = 200_000


def train_until(config, threshold: float = 475.0):
    algo = config.build()
    try:
        while True:
            result = algo.train()
            if result["episode_reward_mean"] >= threshold or result["timesteps_total"] >= MAX_STEPS:
                return result
    finally:
        algo.stop()


def test_ppo_solves_cartpole_in_process():
    result = train_until(PPOConfig.from_tuned("CartPole-v1").debugging(seed=0))
    assert result["episode_reward_mean"] >= 475, result
    assert result["workers/healthy"] == 1


def test_ppo_solves_cartpole_with_two_ray_workers(ray_session):
    config = PPOConfig.from_tuned("CartPole-v1").rollouts(num_rollout_workers=2).debugging(seed=0)
    result = train_until(config)
    assert result["episode_reward_mean"] >= 475, result
    assert result["workers/healthy"] == 2
