"""Exports and evaluation of an Algorithm's current policy: a SavedModel, a .tflite file, or episodes here.

Loop that uses it:  algo.train() ...; algo.export_policy(dir); algo.evaluate(num_episodes=20)
"""

from __future__ import annotations

import dataclasses

import gymnasium as gym
import numpy as np

from relayrl.core.config import Config
from relayrl.core.contracts import LearnerLike
from relayrl.models import networks


class PolicyExports:
    """Mixed into Algorithm: what leaves the training process (export_*) and evaluate()."""

    config: Config
    learner: LearnerLike
    spec: networks.ModelSpec
    obs_space: gym.Space
    action_space: gym.Space
    iteration: int

    @property
    def export_spec(self) -> networks.ModelSpec:
        """The spec of what leaves the process: float32 arithmetic whatever model.compute_dtype trains with.
        The weights are float32 either way; serving hardware often has no bfloat16 units, and TFLite runs
        float32 or quantised models."""
        return dataclasses.replace(self.spec, compute_dtype="float32")

    def export_model(self):
        """A tf.Module on this process with head(obs) -> dist inputs and value(obs), holding the current
        weights: what export_policy serves."""
        from relayrl.models.keras_models import actor_critic

        model = actor_critic(self.export_spec)
        model.set_weights(self.learner.get_weights())
        return model

    def export_policy(self, export_dir: str) -> str:
        """A SavedModel with `serving_default` (observation -> deterministic action) and `value`; loading it
        needs TensorFlow only."""
        from relayrl.persistence.export import export_saved_model

        self._check_weights_finite("export")
        return export_saved_model(
            self.export_model(), self.export_spec, self.obs_space, self.action_space, export_dir, self.config
        )

    def export_tflite(self, path: str, quantize: str = "none") -> str:
        """A .tflite file (`path`, or path/policy.tflite for a directory) with the SavedModel's two
        signatures; quantize: "none" (float32), "float16" or "int8" (post-training, calibrated on env
        observations)."""
        from relayrl.persistence.tflite_export import export_tflite

        return export_tflite(self, path, quantize).path

    def _check_weights_finite(self, what: str) -> None:
        for i, w in enumerate(self.learner.get_weights()):
            if not np.all(np.isfinite(w)):
                raise FloatingPointError(
                    f"refusing to {what}: weight array {i} holds NaN or Inf (iteration {self.iteration})"
                )

    def evaluate(
        self, num_episodes: int = 100, seed: int | None = None, explore: bool = False
    ) -> dict[str, float]:
        """Episodes with the current weights on fresh envs here: deterministic actions (greedy / mean), or
        with explore=True the training exploration (DQN: its current epsilon)."""
        from relayrl.algorithms.periodic_evaluation import evaluate_now

        return evaluate_now(self, num_episodes, seed=seed, explore=explore)
