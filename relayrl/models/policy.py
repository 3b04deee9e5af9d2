"""Policy: a network forward pass plus its action distribution, with versioned weights.

Used where actions are chosen (rollout workers, evaluation). MLP policies run in numpy and never
import TensorFlow; conv policies fall back to one `tf.function` call per batched step.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from relayrl.models import distributions
from relayrl.models.networks import ModelSpec, preprocess_obs
from relayrl.models.numpy_forward import NumpyActorCritic


class Policy:
    """Loop that uses it:  actions, extras = policy.act(obs)  ->  env.step(actions)."""

    def __init__(
        self, spec: ModelSpec, action_space: gym.Space, seed: int | None = None, explore: dict | None = None
    ):
        self.spec = spec
        if spec.numpy_forward_ok:
            self.net = NumpyActorCritic(spec)
        else:
            from relayrl.models.keras_models import (
                TFForward,
            )  # imports TensorFlow: only conv policies pay for it

            self.net = TFForward(spec)
        self.rng = np.random.default_rng(seed)
        self.version = -1
        self._weights: list[np.ndarray] = []
        self._low = self._high = None
        if spec.action_kind in distributions.CONTINUOUS:
            self._low, self._high = action_space.low.astype(np.float32), action_space.high.astype(np.float32)
        self._epsilon: float | None = None  # epsilon-greedy over the head's outputs (Q-values) when set
        self._sigma_log: np.ndarray | None = None  # log of the deterministic head's exploration std
        self._uniform = False  # tanh heads: uniform random actions (SAC/TD3 before learning_starts)
        self.set_explore(explore or {})

    def set_explore(self, explore: dict) -> None:
        """Exploration settings that change during training: {"epsilon": e} for epsilon-greedy on
        Q-values (categorical heads), {"sigma": s} for the deterministic head's Gaussian noise,
        {"uniform": True} for uniform random actions over a tanh head's [-1, 1] (the action space's Box)."""
        if "epsilon" in explore:
            self._epsilon = float(explore["epsilon"])
        if "uniform" in explore:
            self._uniform = bool(explore["uniform"]) and self.spec.action_kind in (
                "squashed_gaussian",
                "deterministic",
            )
        if "sigma" in explore:
            self._sigma_log = np.full(
                self.spec.action_nvec[0], np.log(max(float(explore["sigma"]), 1e-12)), np.float32
            )

    # ------------------------------------------------------------------ weights
    def set_weights(self, weights: list[np.ndarray], version: int) -> None:
        self._weights = weights
        self.net.set_weights(weights)
        self.version = version

    def get_weights(self) -> list[np.ndarray]:
        return self._weights

    # ------------------------------------------------------------------ acting
    def draw_noise(self, steps: int, batch: int) -> np.ndarray:
        """Exploration noise for `steps` batched calls of `batch` rows, drawn in one go."""
        if self._epsilon is not None:  # [coin, random action] uniforms per row
            return self.rng.random((steps, batch, 2), dtype=np.float32)
        if self._uniform:  # the actions themselves
            shape = (steps, batch, self.spec.action_nvec[0])
            return self.rng.uniform(-1.0, 1.0, shape).astype(np.float32)
        width = (
            self.spec.action_nvec[0]
            if self.spec.action_kind in distributions.CONTINUOUS
            else self.spec.dist_dim
        )
        return distributions.draw_noise(self.spec.action_kind, (steps, batch, width), self.rng)

    def _log_std(self) -> np.ndarray | None:
        if self.spec.action_kind == "gaussian":
            return self.net.log_std()
        return self._sigma_log if self.spec.action_kind == "deterministic" else None

    def _choose(self, dist_inputs: np.ndarray, noise: np.ndarray | None) -> np.ndarray:
        if self._uniform and noise is not None:
            return noise
        if self._epsilon is not None:
            greedy = dist_inputs.argmax(axis=-1)
            if noise is None:
                return greedy
            random_action = (noise[:, 1] * dist_inputs.shape[-1]).astype(np.int64)
            return np.where(noise[:, 0] < self._epsilon, random_action, greedy)
        return distributions.sample(
            self.spec.action_kind, self.spec.action_nvec, dist_inputs, self._log_std(), noise
        )

    def compute_actions(
        self, x: np.ndarray, explore: bool = True, noise: np.ndarray | None = None
    ) -> np.ndarray:
        """Network-space actions for preprocessed observations x (unclipped for gaussians).
        `noise` (from draw_noise) replaces the per-call draw when the caller pre-draws it."""
        dist_inputs = self.net.dist_inputs(x)
        if explore and noise is None:
            noise = self.draw_noise(1, len(x))[0]
        return self._choose(dist_inputs, noise if explore else None)

    def sample_step(self, x: np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The sampler's per-step call: (actions, dist_inputs); the dist inputs are kept so the
        fragment's behaviour log-probs need no second forward pass."""
        dist_inputs = self.net.dist_inputs(x)
        return self._choose(dist_inputs, noise), dist_inputs

    def sample_step_with_values(self, x: np.ndarray, noise: np.ndarray) -> tuple[np.ndarray, ...]:
        """sample_step and the value estimates of the same forward pass (a TF network: one call)."""
        dist_inputs, values = self.net.forward(x)
        return self._choose(dist_inputs, noise), dist_inputs, values

    def log_prob(self, dist_inputs: np.ndarray, actions: np.ndarray) -> np.ndarray:
        log_std = self.net.log_std() if self.spec.action_kind == "gaussian" else None
        return distributions.log_prob(
            self.spec.action_kind, self.spec.action_nvec, dist_inputs, log_std, actions
        )

    def env_actions(self, actions: np.ndarray) -> np.ndarray:
        """What the env receives: gaussian samples clipped to the Box bounds; tanh heads' [-1, 1]
        actions rescaled to the bounds."""
        if self._low is None:
            return actions
        if self.spec.action_kind == "gaussian":
            return np.clip(actions, self._low, self._high)
        return self._low + (actions + 1.0) * 0.5 * (self._high - self._low)

    def logp_and_values(self, x: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Behaviour log-probs and value estimates for a whole fragment in one batched pass."""
        dist_inputs = self.net.dist_inputs(x)
        log_std = self.net.log_std() if self.spec.action_kind == "gaussian" else None
        logp = distributions.log_prob(
            self.spec.action_kind, self.spec.action_nvec, dist_inputs, log_std, actions
        )
        return logp, self.net.value(x).astype(np.float32)

    def act(self, obs: np.ndarray, explore: bool = True) -> tuple[np.ndarray, dict]:
        """Batch of raw observations -> (env actions, {"actions", "logp", "vf_preds"})."""
        x = preprocess_obs(self.spec, obs)
        actions = self.compute_actions(x, explore)
        logp, values = self.logp_and_values(x, actions)
        return self.env_actions(actions), {"actions": actions, "logp": logp, "vf_preds": values}
