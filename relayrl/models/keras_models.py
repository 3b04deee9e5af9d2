"""Keras actor-critic built from a `ModelSpec`.

The variable order equals the numpy weights layout of networks.py, so `get_weights()` /
`set_weights()` exchange plain lists of arrays with rollout workers and checkpoints.
"""

from __future__ import annotations

import numpy as np

from relayrl.models.model_parts import WeightList, network_input, obs_statistics, zeros_batch
from relayrl.models.networks import ModelSpec
from relayrl.models.tf_import import tf


def actor_critic(spec: ModelSpec, name: str = "actor_critic"):
    """The network of `spec`: relayrl's ActorCritic, or the adapter around your own tf.keras.Model."""
    if spec.custom is not None and spec.custom.model_cls is not None:
        from relayrl.models.custom_models import CustomActorCritic

        return CustomActorCritic(spec, name=name)
    return ActorCritic(spec, name=name)


class ActorCritic(WeightList, tf.Module):
    """Policy (dist inputs) and value heads; call -> (dist_inputs [B, D], values [B])."""

    def __init__(self, spec: ModelSpec, name: str = "actor_critic"):
        super().__init__(name=name)
        self.spec = spec
        # model.compute_dtype "bfloat16": the torso computes in bfloat16 on float32 weights (Keras' mixed
        # policy; the dense layers cast in _apply), the heads and the losses in float32
        self.compute_dtype = tf.as_dtype(spec.compute_dtype)
        torso_policy = "mixed_bfloat16" if spec.compute_dtype == "bfloat16" else None
        self.torso = [self._layer(layer, f"torso_{i}", torso_policy) for i, layer in enumerate(spec.torso)]
        self.pi = [self._layer(layer, f"pi_{i}") for i, layer in enumerate(spec.pi)]
        self.log_std = (
            tf.Variable(tf.zeros(spec.action_nvec[0]), name="log_std")
            if spec.action_kind == "gaussian"
            else None
        )
        self.vf = [self._layer(layer, f"vf_{i}") for i, layer in enumerate(spec.vf)]
        self.obs_norm = obs_statistics(spec)
        self._flatten_at = sum(1 for layer in spec.torso if layer.kind == "conv")
        # Build every layer now so the variables exist (and can be set) before the first call.
        self(zeros_batch(spec))

    @staticmethod
    def _layer(layer, name: str, dtype: str | None = None) -> tf.keras.layers.Layer:
        if layer.kind == "conv":
            return tf.keras.layers.Conv2D(
                layer.shape[-1],
                layer.shape[0],
                strides=layer.stride,
                activation=layer.activation,
                name=name,
                dtype=dtype,
            )
        return tf.keras.layers.Dense(layer.shape[-1], activation=layer.activation, name=name, dtype=dtype)

    def features(self, obs: tf.Tensor) -> tf.Tensor:
        x = tf.cast(network_input(self.spec, obs, self.obs_norm), self.compute_dtype)
        for i, layer in enumerate(self.torso):
            if i == self._flatten_at and self._flatten_at > 0:
                x = tf.reshape(x, (tf.shape(x)[0], -1))
            x = _apply(layer, x)
        if self._flatten_at == len(self.torso) and self._flatten_at > 0:
            x = tf.reshape(x, (tf.shape(x)[0], -1))
        return tf.cast(x, tf.float32)

    def __call__(self, obs: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        h = self.features(obs)
        return self.head(obs, h), self.value(obs, h)

    def head(self, obs: tf.Tensor, features: tf.Tensor | None = None) -> tf.Tensor:
        """The policy branch alone: logits, means, or Q-values / advantages for DQN, [B, D]."""
        x = self.features(obs) if features is None else features
        for layer in self.pi:
            x = _apply(layer, x)
        return x

    def value(self, obs: tf.Tensor, features: tf.Tensor | None = None) -> tf.Tensor:
        v = self.features(obs) if features is None else features
        for layer in self.vf:
            v = _apply(layer, v)
        return v[:, 0]

    @property
    def ordered_variables(self) -> list[tf.Variable]:
        out: list[tf.Variable] = []
        for layer in self.torso + self.pi:
            out += [layer.kernel, layer.bias]
        if self.log_std is not None:
            out.append(self.log_std)
        for layer in self.vf:
            out += [layer.kernel, layer.bias]
        return out

    @property
    def policy_variables(self) -> list[tf.Variable]:
        """Torso and policy branch: what SAC / TD3 train as the actor (its value branch is never used)."""
        return [v for layer in self.torso + self.pi for v in (layer.kernel, layer.bias)]

    @property
    def weight_variables(self) -> list[tf.Variable]:
        """The weights list layout of networks.py: the trained variables, then the observation statistics."""
        return self.ordered_variables + self.obs_norm


def _apply(layer: tf.keras.layers.Layer, x: tf.Tensor) -> tf.Tensor:
    """Dense layers as matmul + bias + activation on the layer's own variables: the same maths as
    Keras' Dense.__call__ (with its cast of the weights to the input's dtype under a mixed policy) without
    its Python dispatch, which doubles the trace time of the update."""
    if isinstance(layer, tf.keras.layers.Dense) and layer.built:
        return layer.activation(tf.matmul(x, tf.cast(layer.kernel, x.dtype)) + tf.cast(layer.bias, x.dtype))
    return layer(x)


class TFForward:
    """Same interface as numpy_forward.NumpyActorCritic, for networks numpy can't run (conv torsos):
    one `tf.function` call per batched step."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.model = actor_critic(spec)
        dtype = tf.uint8 if spec.obs_kind == "image" else tf.float32
        sig = [tf.TensorSpec((None,) + tuple(spec.obs_shape), dtype)]
        self._pi = tf.function(lambda x: self.model(x)[0], input_signature=sig)
        self._vf = tf.function(lambda x: self.model(x)[1], input_signature=sig)
        self._both = tf.function(lambda x: self.model(x), input_signature=sig)

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.model.set_weights(weights)

    def dist_inputs(self, obs: np.ndarray) -> np.ndarray:
        return self._pi(obs).numpy()

    def value(self, obs: np.ndarray) -> np.ndarray:
        return self._vf(obs).numpy()

    def forward(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(dist_inputs, values) of one pass through the torso: a conv torso costs as much as the env step."""
        dist_inputs, values = self._both(obs)
        return dist_inputs.numpy(), values.numpy()

    def log_std(self) -> np.ndarray:
        return self.model.log_std.numpy()
