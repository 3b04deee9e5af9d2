"""The learner-side TensorFlow models of the actor-critic replay methods (TD3: Fujimoto et al. 2018,
SAC: Haarnoja et al. 2018): twin Q critics Q1(s, a), Q2(s, a), Polyak averaging of target networks, and each
algorithm's module of actor + critics + targets. Kept out of algos/sac.py and algos/td3.py so that importing a
config (the CLI, validation) never imports TensorFlow.

The two critics are stored stacked ([2, in, out] kernels) and run as one batched matmul per layer: at
Pendulum-sized networks the update is dominated by per-op cost, so one op for both critics instead of two
is a direct saving. Initialisation is seeded numpy (uniform +-1/sqrt(fan_in), PyTorch's Linear default,
as in CleanRL and Stable-Baselines3), so a run with a fixed seed repeats.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from relayrl.models.keras_models import actor_critic
from relayrl.models.numpy_forward import ACTIVATIONS
from relayrl.models.tf_import import tf

if TYPE_CHECKING:
    from relayrl.algorithms.sac import SACConfig
    from relayrl.algorithms.td3 import TD3Config

TF_ACTIVATIONS = {"tanh": "tanh", "relu": "relu", "elu": "elu", "swish": "swish"}


class TwinQ(tf.Module):
    """Loop that uses it:  q1, q2 = critics(obs, actions)   # obs [B, O], actions [B, A] -> [B], [B]."""

    def __init__(
        self,
        obs_dim: int,
        action_dim: int,
        hiddens: Sequence[int],
        activation: str,
        seed: int | None,
        name: str = "twin_q",
    ):
        super().__init__(name=name)
        assert activation in ACTIVATIONS, activation
        self.activation = getattr(tf.nn, TF_ACTIVATIONS[activation])
        rng = np.random.default_rng(seed)
        sizes = [obs_dim + action_dim, *hiddens, 1]
        self.kernels, self.biases = [], []
        for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            bound = 1.0 / np.sqrt(fan_in)
            self.kernels.append(
                tf.Variable(rng.uniform(-bound, bound, (2, fan_in, fan_out)).astype(np.float32), name=f"w{i}")
            )
            self.biases.append(
                tf.Variable(rng.uniform(-bound, bound, (2, 1, fan_out)).astype(np.float32), name=f"b{i}")
            )

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


def twin_critics(spec, c: SACConfig | TD3Config, name: str):
    """SAC's / TD3's twin critics: yours (model.custom_critic, custom_models.CustomTwinQ) or TwinQ MLPs."""
    if spec.custom is not None and spec.custom.critic_cls is not None:
        from relayrl.models.custom_models import CustomTwinQ

        return CustomTwinQ(spec, name=name)
    obs_dim, action_dim = int(np.prod(spec.obs_shape)), spec.action_nvec[0]
    return TwinQ(obs_dim, action_dim, c.critic_hiddens, c.model["fcnet_activation"], c.seed, name=name)


def polyak(targets: Sequence[tf.Variable], sources: Sequence[tf.Variable], tau: float) -> None:
    """target <- tau * source + (1 - tau) * target, for every pair (soft target update)."""
    for t, s in zip(targets, sources):
        t.assign(tau * s + (1.0 - tau) * t)


class SACModel(tf.Module):
    """Actor (the workers' layout), twin critics, their Polyak targets and log(alpha)."""

    def __init__(self, spec, c: SACConfig):
        super().__init__(name="sac_model")
        self.action_dim = spec.action_nvec[0]
        self.actor = actor_critic(spec, name="actor")
        self.critics = twin_critics(spec, c, name="critics")
        self.target_critics = twin_critics(spec, c, name="target_critics")
        self.target_critics.set_weights(self.critics.get_weights())
        self.log_alpha = tf.Variable(np.log(c.initial_alpha), dtype=tf.float32, name="log_alpha")
        self.tau = c.tau
        self.rng = (
            tf.random.Generator.from_seed(c.seed)
            if c.seed is not None
            else tf.random.Generator.from_non_deterministic_state()
        )
        self.ordered_variables = self.actor.ordered_variables
        self.variable_groups = {
            "critic": self.critics.ordered_variables,
            "actor": self.actor.policy_variables,
            "alpha": [self.log_alpha],
        }

    def draw_noise(self, rows: tf.Tensor) -> tf.Tensor:
        return self.rng.normal(tf.stack([rows, self.action_dim]))

    def get_weights(self) -> list[np.ndarray]:
        return self.actor.get_weights()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.actor.set_weights(weights)

    def after_step(self, step: tf.Tensor) -> None:
        polyak(self.target_critics.ordered_variables, self.critics.ordered_variables, self.tau)


class TD3Model(tf.Module):
    """Actor (the workers' layout) and twin critics, each with a Polyak-averaged target."""

    def __init__(self, spec, c: TD3Config):
        super().__init__(name="td3_model")
        self.action_dim = spec.action_nvec[0]
        self.actor, self.target_actor = (
            actor_critic(spec, name="actor"),
            actor_critic(spec, name="target_actor"),
        )
        self.critics = twin_critics(spec, c, name="critics")
        self.target_critics = twin_critics(spec, c, name="target_critics")
        self.target_critics.set_weights(self.critics.get_weights())
        self.tau, self.policy_delay = c.tau, c.policy_delay
        self.rng = (
            tf.random.Generator.from_seed(c.seed)
            if c.seed is not None
            else tf.random.Generator.from_non_deterministic_state()
        )
        self.ordered_variables = self.actor.ordered_variables
        self.variable_groups = {
            "critic": self.critics.ordered_variables,
            "actor": self.actor.policy_variables,
        }

    def draw_noise(self, rows: tf.Tensor) -> tf.Tensor:
        return self.rng.normal(tf.stack([rows, self.action_dim]))

    def get_weights(self) -> list[np.ndarray]:
        return self.actor.get_weights()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.actor.set_weights(weights)
        self.target_actor.set_weights(weights)

    def after_step(self, step: tf.Tensor) -> None:
        """Targets follow on the actor's (delayed) steps only, as in the paper."""

        def update():
            polyak(self.target_critics.ordered_variables, self.critics.ordered_variables, self.tau)
            polyak(self.target_actor.policy_variables, self.actor.policy_variables, self.tau)
            return tf.constant(0)

        tf.cond(step % self.policy_delay == 0, update, lambda: tf.constant(0))
