"""LearnerSpec: what an algorithm's learner is (model, loss, optimiser groups, hyper-parameters, batch
layout), as plain data. Each algorithm returns one from its `build_learner`; `Algorithm.make_learner` builds
the Learner from it in the process that hosts it (the driver, or a Ray actor holding the GPUs)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# loss_fn(model, minibatch: dict[str, Tensor], hparams: dict[str, tf.Variable]) -> (loss, {name: scalar});
# with optimiser groups, loss is {group: loss}.
LossFn = Callable[[Any, dict, dict], tuple]
# prepare_fn(minibatch) -> minibatch: whole-minibatch transforms (e.g. advantage normalisation) that must
# see every row before the minibatch is split across replicas.
PrepareFn = Callable[[dict], dict]
# batch_fn(learner, batch) -> (rows, extra metrics): numpy, in the learner's process, before the update.
BatchFn = Callable[[Any, dict], tuple[dict, dict]]


@dataclass(frozen=True)
class LearnerSpec:
    """The learner of one algorithm.

    model_fn(spec) builds the trained module (None: keras_models.actor_critic). It exposes
    `ordered_variables` (what the optimiser updates) and get/set_weights, and may define
    `after_step(step)` (e.g. target-network updates, run after every SGD step) and `variable_groups`
    ({name: variables}, the first group stepped every SGD step): then each group gets its own Adam with
    lr[name], the loss returns ({name: loss}, metrics) and each group follows the gradient of its own loss
    only (SAC, TD3). apply_every[name] = d applies that group's update on every d-th SGD step only (TD3's
    delayed actor).

    minibatch_size None: one step on the whole batch, whatever its size (A2C). row_output names a per-row
    loss output (e.g. DQN's TD errors, for replay priorities) returned as `last_rows` after each update.
    batch_fn prepares a batch where the learner's network is (IMPALA's V-trace). jit_compile: XLA; no
    algorithm turns it on: on these CPUs it made the Atari PPO update 40-60x slower (docs/benchmarks.md)."""

    loss_fn: LossFn
    metric_names: tuple[str, ...]
    lr: float | dict[str, float]
    batch_spec: dict[str, tuple]
    minibatch_size: int | None = None
    grad_clip: float | None = None
    hparams: dict[str, float] = field(default_factory=dict)
    prepare_fn: PrepareFn | None = None
    batch_fn: BatchFn | None = None
    model_fn: Callable[[Any], Any] | None = None
    row_output: str | None = None
    apply_every: dict[str, int] = field(default_factory=dict)
    # variable groups stepped one after another, each on a forward pass made after the previous group's
    # step; loss_fn then takes group=name and returns ({name: loss}, the metrics that pass computes)
    sequential_groups: bool = False
    jit_compile: bool = False
