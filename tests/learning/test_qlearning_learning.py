"""Tabular Q-learning on FrozenLake-v1 4x4 (slippery): greedy success rate over 1,000 evaluation episodes."""

import pytest

from relayrl import QLearningConfig

pytestmark = pytest.mark.learning


def frozenlake_config(workers: int):
    return (
        QLearningConfig.from_tuned("FrozenLake-v1")
        .rollouts(num_rollout_workers=workers, num_envs_per_worker=16 // max(workers, 1))
        .debugging(seed=0)
    )


def train_and_evaluate(config, steps: int = 250_000):
    algo = config.build()
    try:
        while algo.timesteps_total < steps:
            algo.train()
        return algo.evaluate(1000, seed=123)
    finally:
        algo.stop()


def test_tabular_q_solves_slippery_frozenlake_in_process():
    result = train_and_evaluate(frozenlake_config(0))
    assert result["episodes"] == 1000
    assert result["episode_reward_mean"] >= 0.70, result


def test_tabular_q_merges_two_ray_workers(ray_session):
    result = train_and_evaluate(frozenlake_config(2))
    assert result["episode_reward_mean"] >= 0.70, result
