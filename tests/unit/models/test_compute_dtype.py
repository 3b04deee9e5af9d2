"""model.compute_dtype = "bfloat16": the built-in torso computes in bfloat16 on float32 weights (mixed
precision), the heads in float32; the weights list, and so checkpoints and broadcasts, do not change."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.models.keras_models import TFForward, actor_critic
from relayrl.models.tf_import import tf

FRAMES = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
VECTOR = gym.spaces.Box(-1.0, 1.0, (6,), np.float32)


def spec(obs_space: gym.Space, dtype: str) -> networks.ModelSpec:
    return networks.spec_from_spaces(
        obs_space, gym.spaces.Discrete(4), {**DEFAULT_MODEL, "compute_dtype": dtype}
    )


def op_dtypes(model, obs: np.ndarray, op_type: str) -> set:
    """The dtypes of the `op_type` ops in the traced forward pass."""
    graph = tf.function(lambda x: model(x)).get_concrete_function(tf.TensorSpec(obs.shape, obs.dtype)).graph
    return {op.get_attr("T") for op in graph.get_operations() if op.type == op_type}


def frames(rows: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (rows, 84, 84, 4), dtype=np.uint8)


def test_bfloat16_runs_the_convolutions_in_bfloat16_on_float32_weights_and_returns_float32():
    mixed = actor_critic(spec(FRAMES, "bfloat16"))
    obs = frames(8)
    assert op_dtypes(mixed, obs, "Conv2D") == {tf.bfloat16}
    assert {w.dtype for w in mixed.get_weights()} == {np.dtype(np.float32)}
    logits, values = mixed(obs)
    assert logits.dtype == tf.float32 and values.dtype == tf.float32
    assert op_dtypes(actor_critic(spec(FRAMES, "float32")), obs, "Conv2D") == {tf.float32}


def test_bfloat16_outputs_match_float32_on_the_same_weights_within_bfloat16_precision():
    full, mixed = actor_critic(spec(FRAMES, "float32")), actor_critic(spec(FRAMES, "bfloat16"))
    mixed.set_weights(full.get_weights())  # the same weights list layout
    obs = frames(16, seed=1)
    (lf, vf), (lm, vm) = full(obs), mixed(obs)
    # bfloat16 keeps 8 bits of mantissa: ~0.4% relative error per rounding, a few % after the torso
    np.testing.assert_allclose(lm.numpy(), lf.numpy(), atol=0.05 * float(np.abs(lf).max()) + 1e-3)
    np.testing.assert_allclose(vm.numpy(), vf.numpy(), atol=0.05 * float(np.abs(vf).max()) + 1e-3)
    assert not np.array_equal(vm.numpy(), vf.numpy())  # it did compute in bfloat16


def test_bfloat16_gradients_reach_every_float32_variable():
    mixed = actor_critic(spec(FRAMES, "bfloat16"))
    with tf.GradientTape() as tape:
        logits, values = mixed(frames(4, seed=2))
        loss = tf.reduce_mean(tf.square(values)) + tf.reduce_mean(tf.square(logits))
    grads = tape.gradient(loss, mixed.ordered_variables)
    assert all(g is not None and g.dtype == tf.float32 for g in grads)
    assert all(float(tf.reduce_sum(tf.abs(g))) > 0 for g in grads)


def test_workers_act_with_the_learner_arithmetic():
    """numpy has no bfloat16: a bfloat16 MLP leaves the numpy forward pass for TFForward, whose outputs are
    the learner model's."""
    assert networks.spec_from_spaces(VECTOR, gym.spaces.Discrete(4), DEFAULT_MODEL).numpy_forward_ok
    mlp = spec(VECTOR, "bfloat16")
    assert not mlp.numpy_forward_ok
    worker, learner = TFForward(mlp), actor_critic(mlp)
    worker.set_weights(learner.get_weights())
    obs = np.random.default_rng(3).uniform(-1, 1, (5, 6)).astype(np.float32)
    logits, values = worker.forward(obs)
    # the same bfloat16 graph: equal up to float32 summation order (bfloat16 against float32 differs ~1e-2)
    np.testing.assert_allclose(logits, learner(obs)[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(values, learner(obs)[1].numpy(), rtol=1e-5, atol=1e-6)


def test_bfloat16_with_your_own_model_is_refused():
    model = {
        **DEFAULT_MODEL,
        "compute_dtype": "bfloat16",
        "custom_model": "tests.helpers.custom_models:PolicyValueNet",
    }
    with pytest.raises(ValueError, match=r"^model.compute_dtype is for relayrl's own networks"):
        networks.spec_from_spaces(VECTOR, gym.spaces.Discrete(4), model)
