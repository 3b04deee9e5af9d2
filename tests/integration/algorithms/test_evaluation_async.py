"""Evaluation while training for the asynchronous algorithms on real Ray: Ape-X (learner never waits for
workers) and A3C (a parameter server); the evaluation runs on the driver with the learner's weights."""

import math

import pytest

from relayrl.algorithms.a3c import A3CConfig
from relayrl.algorithms.apex import ApeXConfig


@pytest.mark.parametrize("name", ["apex", "a3c"])
def test_async_algorithms_evaluate_every_interval(ray_session, name):
    if name == "apex":
        config = ApeXConfig().training(
            learning_starts=64, train_batch_size=32, updates_per_iteration=4, num_replay_shards=1
        )
        config.evaluation(evaluation_explore=True)  # Ape-X explores as its first worker: epsilon_1
    else:
        config = A3CConfig().training(train_batch_size=64)
    config.environment("CartPole-v1").rollouts(num_rollout_workers=1).debugging(seed=0)
    config.evaluation(evaluation_interval=2, evaluation_episodes=2)
    with config.build() as algo:
        results = [algo.train() for _ in range(2)]
        assert algo.compute_single_action([0.0, 0.0, 0.0, 0.0]) in (0, 1)
    assert "evaluation/episodes" not in results[0]
    assert results[1]["evaluation/episodes"] == 2
    assert math.isfinite(results[1]["evaluation/episode_reward_mean"])
