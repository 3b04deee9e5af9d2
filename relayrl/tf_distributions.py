"""The learner's TensorFlow twins of distributions.py: log-probabilities and entropies."""
from __future__ import annotations

import numpy as np

from relayrl.networks import ModelSpec
from relayrl.tf_import import tf

LOG_2PI = float(np.log(2.0 * np.pi))


def _split(spec: ModelSpec, dist_inputs: tf.Tensor) -> list[tf.Tensor]:
    return tf.split(dist_inputs, list(spec.action_nvec), axis=-1)


def log_prob(spec: ModelSpec, dist_inputs: tf.Tensor, log_std, actions: tf.Tensor) -> tf.Tensor:
    """log pi(a|s), [B]."""
    if spec.action_kind == "gaussian":
        z = (actions - dist_inputs) * tf.exp(-log_std)
        return tf.reduce_sum(-0.5 * (z * z + LOG_2PI) - log_std, axis=-1)
    if spec.action_kind == "categorical":
        logp = tf.nn.log_softmax(dist_inputs)
        return tf.gather(logp, tf.cast(actions, tf.int32), axis=1, batch_dims=1)
    parts = _split(spec, dist_inputs)
    actions = tf.cast(actions, tf.int32)
    return tf.add_n([
        tf.gather(tf.nn.log_softmax(p), actions[:, i], axis=1, batch_dims=1) for i, p in enumerate(parts)
    ])


def entropy(spec: ModelSpec, dist_inputs: tf.Tensor, log_std) -> tf.Tensor:
    """Entropy of the action distribution, [B]."""
    if spec.action_kind == "gaussian":
        per_dim = 0.5 * (1.0 + LOG_2PI) + log_std
        return tf.fill(tf.shape(dist_inputs)[:1], tf.reduce_sum(per_dim))
    parts = [dist_inputs] if spec.action_kind == "categorical" else _split(spec, dist_inputs)
    total = 0.0
    for p in parts:
        logp = tf.nn.log_softmax(p)
        total += -tf.reduce_sum(tf.exp(logp) * logp, axis=-1)
    return total
