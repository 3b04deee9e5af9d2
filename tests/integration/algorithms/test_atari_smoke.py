"""Atari out of the box: PPO, IMPALA and DQN each train a few tiny iterations on a plain 'ALE/Breakout-v5' id
with the default preprocessing and Nature CNN, and export a SavedModel that takes uint8 (B, 84, 84, 4) frames
(scaled inside its graph) and acts as the trained network does."""

import numpy as np
import pytest

from relayrl import DQNConfig, IMPALAConfig, PPOConfig

pytest.importorskip("ale_py")
BREAKOUT = "ALE/Breakout-v5"
SMALL = {
    "ppo": lambda: PPOConfig().training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1),
    "impala": lambda: IMPALAConfig().training(train_batch_size=32),
    "dqn": lambda: DQNConfig().training(train_batch_size=16, replay_buffer_capacity=256, learning_starts=32),
}


@pytest.mark.parametrize("algo_name", sorted(SMALL))
def test_a_few_iterations_on_breakout_then_a_uint8_saved_model(algo_name, tmp_path):
    import tensorflow as tf

    config = (
        SMALL[algo_name]()
        .environment(BREAKOUT)
        .rollouts(num_envs_per_worker=2, rollout_fragment_length=16)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert algo.spec.obs_shape == (84, 84, 4)
        assert [layer.shape for layer in algo.spec.torso] == [  # the Nature CNN
            (8, 8, 4, 32),
            (4, 4, 32, 64),
            (3, 3, 64, 64),
            (7 * 7 * 64, 512),
        ]
        for _ in range(2):  # DQN: the second one learns (learning_starts 32)
            result = algo.train()
        assert result["timesteps_total"] == 64
        export_dir = algo.export_policy(str(tmp_path / "policy"))
        weights = algo.learner.get_weights()
    finally:
        algo.stop()
    serve = tf.saved_model.load(export_dir).signatures["serving_default"]
    observation = serve.structured_input_signature[1]["observation"]
    assert observation.dtype == tf.uint8 and observation.shape.as_list() == [None, 84, 84, 4]
    frames = np.random.default_rng(0).integers(0, 256, (5, 84, 84, 4), dtype=np.uint8)
    actions = serve(observation=tf.constant(frames))["action"].numpy()
    assert actions.shape == (5,) and set(actions.tolist()) <= {0, 1, 2, 3}
    # the worker's forward pass on the same uint8 frames with the same weights picks the same actions
    from relayrl.models.policy import Policy

    policy = Policy(algo.spec, algo.action_space)
    policy.set_weights(weights, 0)
    np.testing.assert_array_equal(policy.compute_actions(frames, explore=False), actions)


def test_bfloat16_torso_trains_and_exports_a_float32_saved_model(tmp_path):
    """model.compute_dtype = "bfloat16" trains on float32 weights; the export computes in float32 (serving
    hardware often lacks bfloat16), so its values are the float32 network's on the trained weights."""
    import dataclasses

    import tensorflow as tf

    from relayrl.models.keras_models import actor_critic

    config = (
        SMALL["ppo"]()
        .training(model={"compute_dtype": "bfloat16"})
        .environment(BREAKOUT)
        .rollouts(num_envs_per_worker=2, rollout_fragment_length=16)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert algo.spec.compute_dtype == "bfloat16"
        result = algo.train()
        assert np.isfinite(result["learner/total_loss"])
        export_dir = algo.export_policy(str(tmp_path / "policy"))
        weights = algo.learner.get_weights()
        spec = algo.spec
    finally:
        algo.stop()
    assert {w.dtype for w in weights} == {np.dtype(np.float32)}
    value = tf.saved_model.load(export_dir).signatures["value"]
    frames = np.random.default_rng(0).integers(0, 256, (8, 84, 84, 4), dtype=np.uint8)
    served = value(observation=tf.constant(frames))["value"].numpy()
    float32_net, bfloat16_net = (
        actor_critic(dataclasses.replace(spec, compute_dtype="float32")),
        actor_critic(spec),
    )
    float32_net.set_weights(weights)
    bfloat16_net.set_weights(weights)
    np.testing.assert_allclose(served, float32_net.value(tf.constant(frames)).numpy(), rtol=1e-4, atol=1e-5)
    assert not np.allclose(served, bfloat16_net.value(tf.constant(frames)).numpy(), rtol=1e-4, atol=1e-5)
