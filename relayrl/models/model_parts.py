"""What relayrl's networks (keras_models) and the adapters of your own models (custom_models) share: the
network input, the observation statistics, the weights list."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from relayrl.models.obs_stats import OBS_CLIP
from relayrl.models.tf_import import tf

if TYPE_CHECKING:
    from relayrl.models.networks import ModelSpec


class WeightList:
    """get_weights / set_weights over `weight_variables`: the flat list of arrays workers and checkpoints
    exchange."""

    weight_variables: list

    def get_weights(self) -> list[np.ndarray]:
        return [v.numpy() for v in self.weight_variables]

    def set_weights(self, weights: list[np.ndarray]) -> None:
        variables = self.weight_variables
        if len(weights) != len(variables):
            raise ValueError(f"expected {len(variables)} weight arrays, got {len(weights)}")
        for var, w in zip(variables, weights):
            if tuple(var.shape) != tuple(np.shape(w)):
                raise ValueError(f"weight {var.name}: expected shape {tuple(var.shape)}, got {np.shape(w)}")
            var.assign(w)


def obs_statistics(spec: ModelSpec) -> list[tf.Variable]:
    """Running observation mean and std: set by the driver, never trained (not in ordered_variables)."""
    if not spec.obs_norm:
        return []
    return [
        tf.Variable(tf.zeros(spec.obs_shape), trainable=False, name="obs_mean"),
        tf.Variable(tf.ones(spec.obs_shape), trainable=False, name="obs_std"),
    ]


def network_input(spec: ModelSpec, obs: tf.Tensor, obs_norm: list) -> tf.Tensor:
    """What the first layer sees: float32, images scaled to [0, 1], normalised when model.normalize_obs."""
    x = tf.cast(obs, tf.float32)
    if spec.obs_kind == "image":
        x = x / 255.0
    if obs_norm:
        x = tf.clip_by_value((x - obs_norm[0]) / obs_norm[1], -OBS_CLIP, OBS_CLIP)
    return x


def zeros_batch(spec: ModelSpec, rows: int = 1) -> tf.Tensor:
    """A batch of zero observations as the workers send them (images uint8), to build a model with."""
    return tf.zeros((rows,) + tuple(spec.obs_shape), tf.uint8 if spec.obs_kind == "image" else tf.float32)
