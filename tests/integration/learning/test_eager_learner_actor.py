"""Eager debugging reaches a learner that runs in its own Ray actor (learner_placement='actor'), and its
update there equals the compiled one."""

import numpy as np

from relayrl.algorithms.ppo import PPOConfig


def test_eager_learner_in_a_ray_actor_matches_the_compiled_one(ray_session):
    runs = []
    for eager in (False, True):
        algo = (
            PPOConfig()
            .environment("CartPole-v1")
            .training(train_batch_size=512, sgd_minibatch_size=128, num_sgd_iter=2)
            .resources(learner_placement="actor")
            .debugging(seed=3, eager=eager)
            .build()
        )
        try:
            assert algo.learner.placement["eager"] is eager  # reported by the learner's own process
            result = algo.train()
            runs.append((result["learner/total_loss"], algo.learner.get_weights()))
        finally:
            algo.stop()
    (loss_compiled, w_compiled), (loss_eager, w_eager) = runs
    assert abs(loss_eager - loss_compiled) <= 1e-5 * max(1.0, abs(loss_compiled))
    for a, b in zip(w_compiled, w_eager):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
