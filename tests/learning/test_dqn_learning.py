"""DQN (tuned defaults) reaches episode_reward_mean 475 over the last 100 episodes on CartPole-v1."""

import pytest

from relayrl import DQNConfig

pytestmark = pytest.mark.learning


def test_dqn_solves_cartpole():
    algo = DQNConfig.from_tuned("CartPole-v1").debugging(seed=0).build()
    try:
        while True:
            result = algo.train()
            if result["episode_reward_mean"] >= 475 or result["timesteps_total"] >= 150_000:
                break
    finally:
        algo.stop()
    assert result["episode_reward_mean"] >= 475, result
