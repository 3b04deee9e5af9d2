"""Twin Q critics Q1(s, a), Q2(s, a) for the actor-critic replay methods (TD3: Fujimoto et al. 2018,
SAC: Haarnoja et al. 2018), and Polyak averaging of target networks.

The two critics are stored stacked ([2, in, out] kernels) and run as one batched matmul per layer: at
Pendulum-sized networks the update is dominated by per-op cost, so one op for both critics instead of two
is a direct saving. Initialisation is seeded numpy (uniform +-1/sqrt(fan_in), PyTorch's Linear default,
as in CleanRL and Stable-Baselines3), so a run with a fixed seed repeats.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from relayrl.networks import ACTIVATIONS
from relayrl.tf_import import tf

TF_ACTIVATIONS = {"tanh": "tanh", "relu": "relu", "elu": "elu", "swish": "swish"}


class TwinQ(tf.Module):
    """Loop that uses it:  q1, q2 = critics(obs, actions)   # obs [B, O], actions [B, A] -> [B], [B]."""

    def __init__(self, obs_dim: int, action_dim: int, hiddens: Sequence[int], activation: str, seed: int | None,
                 name: str = "twin_q"):
        super().__init__(name=name)
        assert activation in ACTIVATIONS, activation
        self.activation = getattr(tf.nn, TF_ACTIVATIONS[activation])
        rng = np.random.default_rng(seed)
        sizes = [obs_dim + action_dim, *hiddens, 1]
        self.kernels, self.biases = [], []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            bound = 1.0 / np.sqrt(fan_in)
            self.kernels.append(tf.Variable(rng.uniform(-bound, bound, (2, fan_in, fan_out)).astype(np.float32), name=f"w{i}"))
            self.biases.append(tf.Variable(rng.uniform(-bound, bound, (2, 1, fan_out)).astype(np.float32), name=f"b{i}"))

    @property
    def ordered_variables(self) -> list[tf.Variable]:
        return [v for pair in zip(self.kernels, self.biases) for v in pair]

    def __call__(self, obs: tf.Tensor, actions: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = tf.concat([tf.cast(obs, tf.float32), tf.cast(actions, tf.float32)], axis=-1)  # [B, O + A]
        # first layer: one [B, in] input against both critics' kernels -> [2, B, h]
        x = tf.einsum("bi,kio->kbo", x, self.kernels[0]) + self.biases[0]
        for kernel, bias in zip(self.kernels[1:], self.biases[1:]):
            x = tf.matmul(self.activation(x), kernel) + bias  # [2, B, h] @ [2, h, h']
        return x[0, :, 0], x[1, :, 0]

    def get_weights(self) -> list[np.ndarray]:
        return [v.numpy() for v in self.ordered_variables]

    def set_weights(self, weights: list[np.ndarray]) -> None:
        for var, w in zip(self.ordered_variables, weights, strict=True):
            var.assign(w)


def polyak(targets: Sequence[tf.Variable], sources: Sequence[tf.Variable], tau: float) -> None:
    """target <- tau * source + (1 - tau) * target, for every pair (soft target update)."""
    for t, s in zip(targets, sources):
        t.assign(tau * s + (1.0 - tau) * t)
