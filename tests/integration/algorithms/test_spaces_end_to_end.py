"""Every supported space trains end to end in-process: Box actions (Pendulum), images through the conv
torso, Discrete observations (FrozenLake), callables as envs."""

import numpy as np
import pytest

from relayrl import PPOConfig
from tests.helpers.fakes import ImageEnv


@pytest.mark.parametrize(
    "env,extra",
    [
        ("Pendulum-v1", {}),
        ("FrozenLake-v1", {}),
        (ImageEnv, {"model": {"fcnet_hiddens": [32]}}),
    ],
)
def test_ppo_iterations_run_and_stay_finite(env, extra):
    config = (
        PPOConfig()
        .environment(env)
        .rollouts(num_envs_per_worker=4)
        .training(train_batch_size=128, sgd_minibatch_size=32, num_sgd_iter=2, **extra)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        for _ in range(2):
            result = algo.train()
    finally:
        algo.stop()
    assert result["timesteps_total"] > 0
    assert all(np.isfinite(result[k]) for k in ("learner/total_loss", "learner/entropy", "learner/kl"))
    assert algo.episodes._iteration_returns == []  # per-iteration returns never pile up (soak regression)


def test_pendulum_actions_reach_the_env_clipped_to_bounds():
    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .rollouts(num_envs_per_worker=2)
        .training(train_batch_size=64, sgd_minibatch_size=32)
    )
    algo = config.build()
    try:
        worker = algo.workers.worker
        raw = np.full((2, 1), 5.0, np.float32)
        np.testing.assert_array_equal(worker.policy.env_actions(raw), np.full((2, 1), 2.0, np.float32))
    finally:
        algo.stop()
