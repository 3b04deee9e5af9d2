"""Learner: the model, its optimiser(s) and one compiled update, built from a LearnerSpec.

`update(batch, minibatch_indices)` runs every minibatch step of an iteration in one `tf.function` call
(relayrl.learning.steps); side effects (metrics to numpy, schedules, counters) stay in Python around it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from relayrl.learning.optimizer import Adam, group_optimizers
from relayrl.learning.spec import LearnerSpec
from relayrl.learning.steps import CompiledSteps
from relayrl.models.keras_models import actor_critic
from relayrl.models.networks import ModelSpec
from relayrl.models.tf_import import tf


class Learner(CompiledSteps, tf.Module):
    """Loop that uses it:  metrics = learner.update(batch, idx); weights = learner.get_weights()."""

    def __init__(self, spec: ModelSpec, learner_spec: LearnerSpec, strategy=None):
        super().__init__(name="learner")
        ls = learner_spec
        self.spec = spec
        self.strategy = strategy or tf.distribute.get_strategy()
        replicas = self.strategy.num_replicas_in_sync
        if replicas > 1 and (ls.minibatch_size is None or ls.minibatch_size % replicas):
            raise ValueError(
                f"sgd_minibatch_size = {ls.minibatch_size} must divide evenly across {replicas} learner "
                f"replicas"
            )
        # The attributes below (model, variables_, groups, optimizer(s), hparams) are what a checkpoint holds.
        with self.strategy.scope():
            self.model = (ls.model_fn or actor_critic)(spec)
            self.variables_ = self.model.ordered_variables
            self.groups = getattr(self.model, "variable_groups", None)
            if self.groups is None:
                self.optimizer = Adam(self.variables_, ls.lr)
            else:
                self.optimizers = group_optimizers(self.groups, ls.lr)
                self.optimizer = next(iter(self.optimizers.values()))  # its step counter counts SGD steps
            self.hparams = {k: tf.Variable(float(v), trainable=False, name=k) for k, v in ls.hparams.items()}
        self.loss_fn, self.prepare_fn, self.batch_fn = ls.loss_fn, ls.prepare_fn, ls.batch_fn
        self.metric_names = ls.metric_names
        self.grad_clip = ls.grad_clip
        self.jit_compile = ls.jit_compile
        self.minibatch_size = ls.minibatch_size
        self.row_output = ls.row_output
        self.sequential_groups = ls.sequential_groups
        self.apply_every = {name: int(ls.apply_every.get(name, 1)) for name in (self.groups or {})}
        if self.groups and self.apply_every[next(iter(self.groups))] != 1:
            raise ValueError(
                "the first variable group must be updated every step (its Adam counts the SGD steps)"
            )
        self.last_rows: np.ndarray | None = None
        self._keys = sorted(ls.batch_spec)
        self._batch_sig = [
            tf.TensorSpec((None,) + tuple(ls.batch_spec[k][0]), tf.as_dtype(ls.batch_spec[k][1]))
            for k in self._keys
        ]
        # traced on first use: gradient exchange (A3C, aggregation) and the forward pass (IMPALA's V-trace)
        self._gradients_fn = self._apply_fn = self._forward_fn = None
        # .debugging(eager=True) turns tf.config.run_functions_eagerly on in this process before the learner
        # is built (placement.build_eagerly): the same step code then runs op by op in Python (tf.while_loop
        # is a Python loop in eager mode), so a breakpoint or print inside a loss sees concrete tensors.
        self.eager = tf.config.functions_run_eagerly()
        # compiled now, before the first batch, while the workers start
        self._update_fn = self._eagerly(self._run_steps) if self.eager else self._compile()

    # ------------------------------------------------------------------ weights and settings
    def get_weights(self) -> list[np.ndarray]:
        return self.model.get_weights()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.model.set_weights(weights)

    def part_weights(self, part: str) -> list[np.ndarray]:
        """Weights of a part of the model the workers never see (e.g. SAC's `critics`), for export."""
        return getattr(self.model, part).get_weights()

    def set_lr(self, lr: float) -> None:
        for group in self.optimizer_groups():
            group.optimizer.lr.assign(lr)

    def tunable_variables(self) -> list:
        """Learning-rate and loss hyper-parameter variables (Ray Tune's PBT writes new values into them)."""
        return [group.optimizer.lr for group in self.optimizer_groups()] + list(self.hparams.values())

    def set_hparam(self, name: str, value: float) -> None:
        self.hparams[name].assign(value)

    @property
    def placement(self) -> dict:
        """Where this learner runs: its process and what that process's TensorFlow sees (as a learner in a
        Ray actor reports it)."""
        import os
        import socket

        from relayrl.learning.placement import device_report

        return {"pid": os.getpid(), "host": socket.gethostname(), **device_report(self)}

    def save_checkpoint(self, directory: str) -> None:
        """A tf.train.Checkpoint of the model(s), the optimiser state and the hyper-parameter variables."""
        tf.train.Checkpoint(learner=self).write(f"{directory}/learner")

    def restore_checkpoint(self, directory: str) -> None:
        """Read save_checkpoint's files back. They come from a checkpoint: a truncated, garbage or mismatched
        file (another model, other shapes) raises CheckpointError naming it, never TensorFlow's own error."""
        from relayrl.core.saved_state import CheckpointError

        try:
            tf.train.Checkpoint(learner=self).read(f"{directory}/learner").assert_existing_objects_matched()
        except (tf.errors.OpError, ValueError, AssertionError, TypeError, KeyError, IndexError) as exc:
            first = next((line for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
            raise CheckpointError(
                f"learner/learner.index and its data file cannot be restored into this "
                f"{type(self.model).__name__}: {first}"
            ) from None

    # ------------------------------------------------------------------ update
    def update(self, batch: dict[str, np.ndarray], minibatch_indices: np.ndarray) -> dict[str, float]:
        """Run len(minibatch_indices) SGD steps; row k of the [K, M] index array picks minibatch k (rows of
        the batch after the spec's batch_fn, when it has one)."""
        if self.minibatch_size is not None and minibatch_indices.shape[1] != self.minibatch_size:
            raise ValueError(
                f"minibatch index rows have {minibatch_indices.shape[1]} entries, the update was "
                f"compiled for {self.minibatch_size}"
            )
        extra: dict[str, float] = {}
        if self.batch_fn is not None:
            batch, extra = self.batch_fn(self, batch)
        sums, counts, gnorm, rows = self._update_fn(
            [batch[k] for k in self._keys], minibatch_indices.astype(np.int32)
        )
        self.last_rows = rows.numpy() if self.row_output else None
        # each metric's mean over the steps that computed it (TD3's actor loss: its delayed steps only);
        # a metric no step computed (a one-step update the delay skips) is left out, not reported as 0
        out = {
            name: float(total) / float(count)
            for name, total, count in zip(self.metric_names, sums.numpy(), counts.numpy())
            if count > 0
        }
        out["grad_gnorm"] = float(gnorm.numpy()) / max(len(minibatch_indices), 1)
        for name, value in out.items():
            if not np.isfinite(value):
                raise FloatingPointError(
                    f"learner produced a non-finite {name} ({value}); lower the learning rate "
                    f"or check the rewards / observations for extreme values"
                )
        return {**out, **extra}

    def forward(self, obs: np.ndarray) -> tuple[np.ndarray, ...]:
        """The model's outputs on a batch of observations, here (e.g. on the learner's GPU)."""
        if self._forward_fn is None:
            sig = [self._batch_sig[self._keys.index("obs")]]
            forward = tf.function(lambda x: self.model(x), input_signature=sig)
            # eager: the plain tf.function honours run_functions_eagerly, its concrete function would not
            self._forward_fn = forward if self.eager else forward.get_concrete_function()
        return tuple(t.numpy() for t in self._forward_fn(obs))

    # ------------------------------------------------------------------ gradient exchange
    def compute_gradients(self, batch: dict[str, np.ndarray]) -> tuple[list[np.ndarray], dict[str, float]]:
        """Unclipped gradients of the loss on the whole batch at the current weights (nothing applied):
        what an A3C worker or a gradient-aggregating worker sends."""
        if self._gradients_fn is None:
            self._gradients_fn = self._function(self._gradients, [self._batch_sig])
        grads, metrics = self._gradients_fn([batch[k] for k in self._keys])
        return [g.numpy() for g in grads], dict(zip(self.metric_names, metrics.numpy().tolist()))

    def apply_gradients(self, grads: list[np.ndarray]) -> float:
        """Clip (global norm) and apply gradients computed elsewhere; returns their global norm."""
        if self._apply_fn is None:
            self._apply_fn = self._function(
                self._apply, [[tf.TensorSpec(v.shape, v.dtype) for v in self.variables_]]
            )
        return float(self._apply_fn(list(grads)).numpy())

    def _function(self, fn: Callable, sig: list) -> Callable:
        """fn compiled for its signature, or (eager debugging) called op by op on arguments cast to it."""
        if not self.eager:
            return tf.function(fn, input_signature=sig, autograph=False).get_concrete_function()
        return self._eagerly(fn, sig[0])

    def _gradients(self, columns: list):
        batch = dict(zip(self._keys, columns))
        if self.prepare_fn is not None:
            batch = self.prepare_fn(batch)
        with tf.GradientTape() as tape:
            loss, metrics = self.loss_fn(self.model, batch, self.hparams)
        grads = tape.gradient(loss, self.variables_)
        grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, self.variables_)]
        return grads, tf.stack([tf.cast(metrics[n], tf.float32) for n in self.metric_names])

    def _apply(self, grads: list):
        gnorm = tf.linalg.global_norm(grads)
        if self.grad_clip is not None:
            grads, _ = tf.clip_by_global_norm(grads, self.grad_clip, use_norm=gnorm)
        b1p, b2p = self.optimizer.next_step_powers()
        self.optimizer.apply(grads, self.variables_, b1p, b2p)
        return gnorm
