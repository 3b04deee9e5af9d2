"""GradientWorker: a RolloutWorker that also computes the loss gradients of its own fragments.

Used by A3C (gradients go to the ParameterServer, applied as they arrive) and by the gradient-aggregation
mode of A2C (the learner averages the workers' gradients). It imports TensorFlow, unlike the sampling-only
RolloutWorker: a numpy forward pass cannot differentiate.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from relayrl.core.types import Fragment
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import SamplerSettings, batch_spec


@dataclass
class LossRecipe:
    """What a process needs to rebuild an algorithm's loss: picklable (module-level functions, numbers)."""

    loss_fn: Callable
    metric_names: tuple
    hparams: dict
    prepare: Callable[[dict], dict]  # whole-fragment post-processing before the loss
    minibatch_prepare: Callable[[dict], dict] | None = (
        None  # per-minibatch transform (PPO's advantage normalisation)
    )


def no_preparation(batch: dict) -> dict:
    """LossRecipe.prepare for losses that take the fragment as sampled."""
    return batch


def make_gradient_learner(
    settings: SamplerSettings, recipe: LossRecipe, lr: float = 1e-3, grad_clip: float | None = None
):
    """A Learner for this loss whose update is one step on the whole batch (gradients in or out)."""
    from relayrl.learning.learner import Learner
    from relayrl.learning.spec import LearnerSpec

    loss = (recipe.loss_fn, recipe.metric_names)
    learner = LearnerSpec(
        *loss,
        lr,
        batch_spec(settings.spec),
        None,
        grad_clip,
        recipe.hparams,
        prepare_fn=recipe.minibatch_prepare,
    )
    return Learner(settings.spec, learner)


class GradientWorker(RolloutWorker):
    """Loop that uses it:  worker.set_weights(w, v); fragment, grads, metrics = worker.sample_gradients()."""

    def __init__(self, settings: SamplerSettings, recipe: LossRecipe, worker_index: int = 0):
        super().__init__(settings, worker_index)
        self.recipe = recipe
        self.learner = make_gradient_learner(settings, recipe)

    def set_weights(self, weights: list[np.ndarray], version: int) -> None:
        super().set_weights(weights, version)
        self.learner.set_weights(weights)

    def sample_gradients(self) -> tuple[Fragment, list[np.ndarray], dict[str, float]]:
        """Sample one fragment and return it without its columns (the learner only needs its stats and
        version), the loss gradients at the weights it was sampled with, and the loss metrics."""
        fragment = self.sample()
        start = time.perf_counter()
        grads, metrics = self.learner.compute_gradients(self.recipe.prepare(fragment.data))
        metrics["rows"] = float(len(fragment))
        metrics["grad_time_s"] = time.perf_counter() - start
        fragment.data = {}
        return fragment, grads, metrics

    def sample_and_keep(self, num_rows: int | None = None) -> tuple[Fragment, int]:
        """Sample a fragment and keep its columns here for `minibatch_gradients` (several SGD steps on the
        same data, as PPO takes); return it without columns, and its row count. With `num_rows`, exactly
        that many rows are kept (a resampled fragment standing in for a lost one whose row count the SGD
        plan was made for: dropped reset steps make counts vary): extra rows are cut, missing ones repeat
        rows from the start. The fragment keeps its advantages column (one float per row): the driver
        normalises each minibatch's advantages over the whole minibatch, across workers."""
        fragment = self.sample()
        self._kept = self.recipe.prepare(fragment.data)
        rows = len(fragment)
        if num_rows is not None and num_rows != rows:
            take = np.arange(num_rows) % rows
            self._kept = {k: v[take] for k, v in self._kept.items()}
            rows = num_rows
        fragment.data = {"advantages": self._kept["advantages"]} if "advantages" in self._kept else {}
        return fragment, rows

    def minibatch_gradients(
        self, rows: np.ndarray, advantage_stats: tuple[float, float] | None = None
    ) -> tuple[list[np.ndarray], dict[str, float]]:
        """Gradients of the loss on rows `rows` of the kept fragment, at the current weights; with
        advantage_stats = (mean, std) of the whole minibatch's advantages (all workers' shares), the
        advantages normalised by them, as the sample-shipping learner does (a share's own statistics would
        differ: a 1-row share normalises to 0 and loses its gradient)."""
        batch = {k: v[rows] for k, v in self._kept.items()}
        if advantage_stats is not None:
            mean, std = advantage_stats
            batch["advantages"] = ((batch["advantages"] - mean) / (std + 1e-8)).astype(np.float32)
        grads, metrics = self.learner.compute_gradients(batch)
        metrics["rows"] = float(len(rows))
        return grads, metrics


def weighted_mean_gradients(per_worker: list[tuple[list[np.ndarray], float]]) -> list[np.ndarray]:
    """Row-weighted mean of per-worker mean gradients: the gradient of the mean loss over all rows."""
    total = sum(rows for _, rows in per_worker)
    return [sum(g[i] * (rows / total) for g, rows in per_worker) for i in range(len(per_worker[0][0]))]
