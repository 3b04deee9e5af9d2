"""Gradient exchange on real Ray: A2C's gradient-aggregation mode equals sample shipping for one worker;
A3C's parameter server records staleness."""

import numpy as np
import pytest

from relayrl import A2CConfig, A3CConfig, PPOConfig


def two_iterations_weights(
    update_mode: str, algo: str = "a2c", workers: int = 1, model: dict | None = None
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    if algo == "a2c":
        config = A2CConfig().training(normalize_advantages=True, model=model or {})
    else:  # 2 epochs of 2 minibatches: 4 SGD steps per iteration, each one gradient round trip
        config = PPOConfig().training(num_sgd_iter=2, sgd_minibatch_size=32, model=model or {})
    config = (
        config.environment("CartPole-v1")
        .rollouts(num_rollout_workers=workers, num_envs_per_worker=4)
        .training(update_mode=update_mode, train_batch_size=64)
        .debugging(seed=3)
    )
    algo = config.build()
    try:
        initial = algo.learner.get_weights()
        for _ in range(2):
            algo.train()
        return initial, algo.learner.get_weights()
    finally:
        algo.stop()


@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_gradient_aggregation_equals_sample_shipping_for_one_worker(ray_session, algo):
    initial, shipped = two_iterations_weights("samples", algo)
    initial_too, aggregated = two_iterations_weights("gradients", algo)
    for a, b, w0, w0_too in zip(shipped, aggregated, initial, initial_too):
        np.testing.assert_array_equal(w0, w0_too)  # same seed, same start
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert max(np.abs(a - w0).max() for a, w0 in zip(shipped, initial)) > 1e-4  # both really trained


@pytest.mark.parametrize("algo", ["a2c", "ppo"])
def test_gradient_aggregation_takes_the_sample_shipping_steps_with_two_workers(ray_session, algo):
    """Advantages are standardised over the whole (mini)batch, not per worker fragment or share, and the
    observation statistics the batch was sampled with hold through all of PPO's SGD steps."""
    model = {"normalize_obs": True}
    initial, shipped = two_iterations_weights("samples", algo, workers=2, model=model)
    _, aggregated = two_iterations_weights("gradients", algo, workers=2, model=model)
    for a, b in zip(shipped, aggregated):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
    assert max(np.abs(a - w0).max() for a, w0 in zip(shipped, initial)) > 1e-4


def test_a3c_applies_gradients_without_barrier_and_records_staleness(ray_session):
    config = (
        A3CConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=2, num_envs_per_worker=4, rollout_fragment_length=8)
        .training(train_batch_size=256)
    )
    algo = config.debugging(seed=0).build()
    try:
        result = algo.train()
        result = algo.train()
    finally:
        algo.stop()
    assert result["learner/updates"] >= 4  # one server update per fragment, 32 steps each
    assert result["weights_version"] >= 8
    assert 0 <= result["learner/staleness_mean"] <= result["learner/staleness_max"]
    assert 0.0 <= result["learner/worker_idle_fraction"] <= 1.0
