"""The learner's TensorFlow twins of distributions.py: log-probabilities and entropies."""

from __future__ import annotations

import numpy as np

from relayrl.models.networks import ModelSpec
from relayrl.models.tf_import import tf

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
    return tf.add_n(
        [tf.gather(tf.nn.log_softmax(p), actions[:, i], axis=1, batch_dims=1) for i, p in enumerate(parts)]
    )


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


def squashed_gaussian_sample(dist_inputs: tf.Tensor, noise: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
    """SAC's reparameterised tanh-Gaussian sample and its log-probability (Haarnoja et al. 2018, App. C).

    dist_inputs [B, 2A] = [mean, log_std] (log_std clipped as on the workers), noise [B, A] ~ N(0, 1):
    u = mean + std * noise, a = tanh(u),
    log pi(a|s) = sum_i [log N(u_i; mean_i, std_i) - log(1 - tanh(u_i)^2)],
    with log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2u)), stable for large |u|.
    Returns (a [B, A], logp [B])."""
    from relayrl.models.distributions import LOG_STD_MAX, LOG_STD_MIN

    mean, log_std = tf.split(dist_inputs, 2, axis=-1)
    log_std = tf.clip_by_value(log_std, LOG_STD_MIN, LOG_STD_MAX)
    u = mean + tf.exp(log_std) * noise
    gauss_logp = -0.5 * (noise * noise + LOG_2PI) - log_std
    log_det = 2.0 * (np.log(2.0) - u - tf.nn.softplus(-2.0 * u))
    return tf.tanh(u), tf.reduce_sum(gauss_logp - log_det, axis=-1)
