"""Evaluation while training: evaluation/... keys every evaluation_interval iterations, on envs seeded apart
from the training envs, for a policy-gradient, a Q-network and a tabular algorithm (no Ray: 0 workers)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from relayrl.algorithms.dqn import DQNConfig
from relayrl.algorithms.periodic_evaluation import EVALUATION_SEED_OFFSET, evaluate_now, evaluation_seed
from relayrl.algorithms.ppo import PPOConfig
from relayrl.algorithms.qlearning import QLearningConfig
from relayrl.envs.make import env_seed, make_vector_env

EVAL_KEYS = {
    "evaluation/episode_reward_mean",
    "evaluation/episode_reward_min",
    "evaluation/episode_reward_max",
    "evaluation/episode_reward_std",
    "evaluation/episode_len_mean",
    "evaluation/episodes",
    "evaluation/time_s",
}


def ppo(**evaluation):
    return (
        PPOConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=0)
        .training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=1)
        .evaluation(**evaluation)
        .debugging(seed=5)
    )


def test_evaluation_keys_every_interval_and_only_then():
    with ppo(evaluation_interval=2, evaluation_episodes=3).build() as algo:
        results = [algo.train() for _ in range(4)]
    assert [EVAL_KEYS <= set(r) for r in results] == [False, True, False, True]
    assert not any(k.startswith("evaluation/") for k in results[0])
    r = results[1]
    assert r["evaluation/episodes"] == 3
    assert r["evaluation/episode_reward_min"] <= r["evaluation/episode_reward_mean"]
    assert r["evaluation/episode_reward_mean"] <= r["evaluation/episode_reward_max"]
    assert r["evaluation/episode_reward_std"] >= 0
    assert r["evaluation/episode_len_mean"] == r["evaluation/episode_reward_mean"]  # CartPole: +1 a step


def test_no_evaluation_without_interval():
    with ppo().build() as algo:
        assert not any(k.startswith("evaluation/") for k in algo.train())


def test_evaluation_seeds_are_apart_from_training_seeds():
    assert evaluation_seed(None) is None
    seed = 5
    training_seeds = {env_seed(seed, w) + i for w in range(1000) for i in range(16)}
    eval_seeds = {evaluation_seed(seed) + i for i in range(16)}
    assert not training_seeds & eval_seeds
    first_obs = []
    for s in (env_seed(seed, 0), evaluation_seed(seed)):
        vec = make_vector_env("CartPole-v1", {}, 1)
        first_obs.append(vec.reset(seed=s)[0])
        vec.close()
    assert not np.allclose(first_obs[0], first_obs[1])
    assert evaluation_seed(seed) == seed + EVALUATION_SEED_OFFSET


def test_a_round_replays_the_evaluation_seeds():
    """The result's evaluation is exactly evaluate_now on evaluation_seed(config.seed), deterministic."""
    with ppo(evaluation_interval=1, evaluation_episodes=4).build() as algo:
        r = algo.train()
        again = evaluate_now(algo, 4, evaluation_seed(5))
    assert again["episode_reward_mean"] == r["evaluation/episode_reward_mean"]
    assert again["episode_reward_std"] == r["evaluation/episode_reward_std"]


@pytest.mark.parametrize("explore", [False, True])
def test_dqn_evaluates_greedy_or_at_its_current_epsilon(explore):
    config = (
        DQNConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=0)
        .training(learning_starts=64, train_batch_size=32)
        .evaluation(evaluation_interval=1, evaluation_episodes=2, evaluation_explore=explore)
        .debugging(seed=1)
    )
    with config.build() as algo:
        r = algo.train()
    assert r["evaluation/episodes"] == 2 and math.isfinite(r["evaluation/episode_reward_mean"])


def test_tabular_q_learning_evaluates():
    config = (
        QLearningConfig()
        .environment("FrozenLake-v1", env_config={"is_slippery": False})
        .rollouts(num_rollout_workers=0)
        .evaluation(evaluation_interval=1, evaluation_episodes=5)
        .debugging(seed=0)
    )
    with config.build() as algo:
        r = algo.train()
    assert r["evaluation/episodes"] == 5
    assert 0.0 <= r["evaluation/episode_reward_mean"] <= 1.0


def test_a_policy_server_refuses_evaluation_at_build():
    """Its episodes come from external clients: there is no env of its own to evaluate on."""
    from relayrl.policy_server.serve import ServedAlgorithm

    with pytest.raises(ValueError, match="evaluation_interval = 3 is invalid for a policy server") as info:
        ServedAlgorithm(ppo(evaluation_interval=3))
    assert "\n" not in str(info.value)
