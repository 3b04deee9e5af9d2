"""The learner's update: every minibatch step of an iteration (all epochs) inside one `tf.function` call.

A call costs ~200 us here, a small PPO step well under 1 ms, so one call per minibatch would spend a large
share of the update on call overhead. With a `tf.distribute` strategy (MirroredStrategy over several GPUs),
each minibatch is split evenly across the replicas and their gradients are all-reduced (mean) before the
same Adam step is applied to every replica's copy; without one, TensorFlow's default strategy runs the same
code on one replica. One step serves every model: a model without `variable_groups` is one group.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from relayrl.learning.optimizer import OptimizerGroup
from relayrl.models.tf_import import tf

WHOLE_MODEL = "model"  # the one group of a model without variable_groups


class CompiledSteps:
    """The SGD steps of `Learner` (a mixin: it uses the learner's model, loss_fn, prepare_fn, hparams,
    metric_names, grad_clip, minibatch_size, row_output, strategy, groups, optimizer(s) and apply_every)."""

    def optimizer_groups(self) -> list[OptimizerGroup]:
        if self.groups is None:
            return [OptimizerGroup(WHOLE_MODEL, self.variables_, self.optimizer, 1)]
        return [
            OptimizerGroup(name, variables, self.optimizers[name], self.apply_every[name])
            for name, variables in self.groups.items()
        ]

    def _eagerly(self, fn: Callable, sig: list | None = None) -> Callable:
        """fn(columns, *rest) called op by op, the columns given the dtypes the compiled signature would cast
        to (`sig`, by default the batch's)."""
        sig = self._batch_sig if sig is None else sig

        def run(columns: list, *rest):
            return fn([tf.convert_to_tensor(c, s.dtype) for c, s in zip(columns, sig)], *rest)

        return run

    def _compile(self):
        sig = (self._batch_sig, tf.TensorSpec((None, self.minibatch_size), tf.int32))
        # autograph=False: the loop is an explicit tf.while_loop, which traces faster than converted code.
        # Calling the concrete function skips tf.function's per-call signature matching (~2 ms here).
        fn = tf.function(self._run_steps, input_signature=sig, autograph=False, jit_compile=self.jit_compile)
        return fn.get_concrete_function()

    def _replica_slice(self, ctx, minibatch: dict) -> dict:
        """This replica's equal share of the minibatch rows (the whole minibatch on one replica)."""
        replicas = ctx.num_replicas_in_sync
        if replicas == 1:
            return minibatch
        rows = self.minibatch_size // replicas
        start = ctx.replica_id_in_sync_group * rows
        return {key: t[start : start + rows] for key, t in minibatch.items()}

    def _replica_step(self, minibatch: dict, powers: dict) -> tuple[tf.Tensor, ...]:
        """One SGD step on this replica's slice of the minibatch, gradients averaged over replicas. Each
        group follows the gradient of its own loss (e.g. SAC's actor loss moves only the actor, though it
        runs through the critics). With sequential_groups, the groups step one after another, each on a
        forward pass made after the previous group's step (the critics first, then the actor against the
        updated critics, as the TD3 paper, CleanRL and SB3 do), and a delayed group's pass runs only on the
        steps it applies (TD3's actor: half its passes would be thrown away). powers[name] = (beta1^t,
        beta2^t, apply?). Returns the metrics, which of them this step computed (1/0), the global norm of
        the gradients it applied and the row output."""
        ctx = tf.distribute.get_replica_context()
        minibatch = self._replica_slice(ctx, minibatch)
        groups = self.optimizer_groups()
        passes = [[group] for group in groups] if self.sequential_groups else [groups]
        n = len(self.metric_names)
        metric_vec, computed, sq_norm, every_step = tf.zeros(n), tf.zeros(n), tf.constant(0.0), {}
        named = set()  # the metrics some pass computes (recorded while tracing, a branch's included)
        for part in passes:
            delayed = self.sequential_groups and part[0].every > 1
            if delayed and ctx.num_replicas_in_sync == 1:

                def run(part=part):
                    metrics, part_sq = self._step_part(part, minibatch, ctx, powers)
                    named.update(metrics)
                    return (*self._as_vectors(metrics), part_sq)

                def skip():
                    return tf.zeros(n), tf.zeros(n), tf.constant(0.0)

                part_vec, part_mask, part_sq = tf.cond(powers[part[0].name][2], run, skip)
            else:
                metrics, part_sq = self._step_part(part, minibatch, ctx, powers)
                named.update(metrics)
                part_vec, part_mask = self._as_vectors(metrics)
                # several replicas run a delayed pass on every step (no collectives inside a branch)
                # and count it only when applied
                if delayed:
                    applied = tf.cast(powers[part[0].name][2], tf.float32)
                    part_mask, part_sq = part_mask * applied, part_sq * applied
                else:
                    every_step.update(metrics)
            metric_vec = tf.where(part_mask > 0, part_vec, metric_vec)
            computed, sq_norm = tf.maximum(computed, part_mask), sq_norm + part_sq
        if set(self.metric_names) - named and not tf.executing_eagerly():  # eager: a skipped branch never ran
            raise KeyError(f"the loss computes no {sorted(set(self.metric_names) - named)}")
        rows = tf.cast(every_step[self.row_output], tf.float32) if self.row_output else tf.zeros(0)
        if ctx.num_replicas_in_sync > 1:
            metric_vec = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, metric_vec)
            if self.row_output:
                rows = ctx.all_gather(rows, axis=0)
        return metric_vec, computed, tf.sqrt(sq_norm), rows

    def _step_part(
        self, part: list[OptimizerGroup], minibatch: dict, ctx, powers: dict
    ) -> tuple[dict, tf.Tensor]:
        """The gradients of the groups in `part` from one forward pass, applied; the pass's metrics and the
        squared global norm of its gradients."""
        grads, metrics = self._pass_gradients(part, minibatch, ctx)
        for group in part:
            self._apply_group(group, grads[group.name], powers[group.name])
        return metrics, tf.square(tf.linalg.global_norm([g for name in grads for g in grads[name]]))

    def _as_vectors(self, metrics: dict) -> tuple[tf.Tensor, tf.Tensor]:
        """metrics as a vector over metric_names (0 where a pass did not compute one) and its 1/0 mask."""
        vec = tf.stack([tf.cast(metrics.get(name, 0.0), tf.float32) for name in self.metric_names])
        return vec, tf.constant([float(name in metrics) for name in self.metric_names])

    def _pass_gradients(self, part: list[OptimizerGroup], minibatch: dict, ctx) -> tuple[dict, dict]:
        """One forward pass of the loss and the gradients of each group in `part` (averaged over replicas)
        of its own loss. A sequential pass asks the loss for its one group only (loss_fn(..., group=name))."""
        with tf.GradientTape(persistent=len(part) > 1) as tape:
            if self.sequential_groups:
                losses, metrics = self.loss_fn(self.model, minibatch, self.hparams, group=part[0].name)
            else:
                losses, metrics = self.loss_fn(self.model, minibatch, self.hparams)
        if self.groups is None:
            losses = {WHOLE_MODEL: losses}
        grads = {}
        for group in part:
            g = tape.gradient(losses[group.name], group.variables)
            # variables the loss does not use (e.g. DQN's value branch without dueling) get zero gradients
            grads[group.name] = [tf.zeros_like(v) if gi is None else gi for gi, v in zip(g, group.variables)]
        del tape
        if ctx.num_replicas_in_sync > 1:  # equal slices: the mean of slice gradients is the minibatch's
            grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
        return grads, metrics

    def _apply_group(self, group: OptimizerGroup, grads: list, powers: tuple) -> None:
        if self.grad_clip is not None:
            grads, _ = tf.clip_by_global_norm(grads, self.grad_clip)
        b1p, b2p, apply_now = powers
        apply = functools.partial(group.optimizer.apply, grads, group.variables, b1p, b2p)
        if group.every == 1:
            apply()
        else:
            tf.cond(apply_now, apply, lambda: tf.constant(0))

    def _group_powers(self) -> dict:
        """Per group (cross-replica): Adam's bias-correction powers and whether it steps now. The first
        group steps every SGD step; a delayed group only every apply_every[name]-th, counting from it."""
        powers = {}
        step = None
        for group in self.optimizer_groups():
            apply_now = tf.constant(True) if step is None else tf.equal(step % group.every, 0)
            b1p, b2p = group.optimizer.next_step_powers(apply_now)
            step = group.optimizer.step if step is None else step
            powers[group.name] = (b1p, b2p, apply_now)
        return powers

    def _run_steps(self, columns: list, idx: tf.Tensor):
        batch = dict(zip(self._keys, columns))
        steps = tf.shape(idx)[0]
        after_step = getattr(self.model, "after_step", None)

        def body(k, sums, counts, gnorm_sum, rows):
            minibatch = {key: tf.gather(t, idx[k]) for key, t in batch.items()}
            if self.prepare_fn is not None:
                minibatch = self.prepare_fn(minibatch)
            metrics, computed, gnorm, step_rows = self.strategy.run(
                self._replica_step, args=(minibatch, self._group_powers())
            )
            # after the all-reduce every replica holds the same values: take the first
            local = self.strategy.experimental_local_results
            metrics, computed = local(metrics)[0], local(computed)[0]
            gnorm, step_rows = local(gnorm)[0], local(step_rows)[0]
            if after_step is not None:
                after_step(self.optimizer.step)
            return k + 1, sums + metrics, counts + computed, gnorm_sum + gnorm, rows.write(k, step_rows)

        rows = tf.TensorArray(
            tf.float32,
            size=steps,
            element_shape=[self.minibatch_size] if self.row_output else [0],
            infer_shape=False,
        )
        n = len(self.metric_names)
        init = (tf.constant(0), tf.zeros(n), tf.zeros(n), tf.constant(0.0), rows)
        _, sums, counts, gnorm_sum, rows = tf.while_loop(lambda k, *_: k < steps, body, init)
        return sums, counts, gnorm_sum, rows.stack()
