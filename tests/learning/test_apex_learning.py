"""Ape-X with 2 Ray workers (tuned defaults) reaches episode_reward_mean 475 on CartPole-v1."""
import pytest

from relayrl import ApeXConfig

pytestmark = pytest.mark.learning


def test_apex_two_workers_solve_cartpole(ray_session):
    algo = ApeXConfig.from_tuned("CartPole-v1").rollouts(num_rollout_workers=2).debugging(seed=0).build()
    try:
        while True:
            result = algo.train()
            if result["episode_reward_mean"] >= 475 or result["timesteps_total"] >= 800_000:
                break
    finally:
        algo.stop()
    assert result["episode_reward_mean"] >= 475, result
