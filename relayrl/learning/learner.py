"""Learner: the model, its optimiser and one compiled update.

`update(batch, minibatch_indices)` runs every minibatch step of an iteration (all epochs) inside a
single `tf.function` call: a call costs ~200 us here, a small PPO step well under 1 ms, so one call
per minibatch would spend a large share of the update on call overhead. Side effects (metrics to
numpy, schedules, counters) stay in Python around it.

With a `tf.distribute` strategy (MirroredStrategy over several GPUs), each minibatch is split evenly
across the replicas and their gradients are all-reduced (mean) before the same Adam step is applied to
every replica's copy; without one, TensorFlow's default strategy runs the same code on one replica.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from relayrl.models.keras_models import ActorCritic
from relayrl.models.networks import ModelSpec
from relayrl.models.tf_import import tf

# loss_fn(model, minibatch: dict[str, Tensor], hparams: dict[str, tf.Variable]) -> (loss, {name: scalar})
LossFn = Callable[[ActorCritic, dict, dict], tuple]
# prepare_fn(minibatch) -> minibatch: whole-minibatch transforms (e.g. advantage normalisation) that must
# see every row before the minibatch is split across replicas.
PrepareFn = Callable[[dict], dict]


class Adam(tf.Module):
    """Adam (Kingma & Ba 2015) as one fused ResourceApplyAdam kernel per variable: the Keras 3
    optimiser adds dozens of small ops per step, which dominate at CartPole-sized networks."""

    def __init__(
        self,
        variables: list[tf.Variable],
        lr: float,
        beta1: float = 0.9,
        beta2: float = 0.999,
        epsilon: float = 1e-5,
    ):
        super().__init__(name="adam")
        self.lr = tf.Variable(lr, dtype=tf.float32, trainable=False, name="lr")
        self.beta1, self.beta2, self.epsilon = beta1, beta2, epsilon
        self.step = tf.Variable(0, dtype=tf.int64, trainable=False, name="step")
        self.m = [tf.Variable(tf.zeros_like(v), trainable=False, name="m") for v in variables]
        self.v = [tf.Variable(tf.zeros_like(v), trainable=False, name="v") for v in variables]

    def next_step_powers(self, advance=1) -> tuple[tf.Tensor, tf.Tensor]:
        """Advance the step counter (cross-replica) by `advance` (0 or 1: a skipped, delayed update does not
        count) and return (beta1^t, beta2^t) for bias correction."""
        step = tf.cast(self.step.assign_add(tf.cast(advance, tf.int64)), tf.float32)
        return tf.pow(self.beta1, step), tf.pow(self.beta2, step)

    def apply(
        self, grads: list[tf.Tensor], variables: list[tf.Variable], b1p: tf.Tensor, b2p: tf.Tensor
    ) -> None:
        # In a replica context `.handle` is this replica's copy of a mirrored variable.
        for var, m, v, g in zip(variables, self.m, self.v, grads):
            tf.raw_ops.ResourceApplyAdam(
                var=var.handle,
                m=m.handle,
                v=v.handle,
                beta1_power=b1p,
                beta2_power=b2p,
                lr=self.lr,
                beta1=self.beta1,
                beta2=self.beta2,
                epsilon=self.epsilon,
                grad=g,
                use_locking=False,
            )


class Learner(tf.Module):
    """Loop that uses it:  metrics = learner.update(batch, idx); weights = learner.get_weights()."""

    def __init__(
        self,
        spec: ModelSpec,
        loss_fn: LossFn,
        metric_names: tuple[str, ...],
        lr: float | dict[str, float],
        grad_clip: float | None,
        hparams: dict[str, float],
        batch_spec: dict[str, tuple],
        minibatch_size: int | None,
        prepare_fn: PrepareFn | None = None,
        strategy=None,
        model_fn: Callable[[ModelSpec], tf.Module] | None = None,
        row_output: str | None = None,
        jit_compile: bool = False,
        apply_every: dict[str, int] | None = None,
    ):
        """model_fn(spec) builds the trained module (default: ActorCritic); it exposes `ordered_variables`
        (what the optimiser updates), get/set_weights, and may define `after_step(step)` (e.g. target-network
        updates), run after every SGD step. row_output names a per-row [M] loss output (e.g. TD errors for
        replay priorities) returned as `last_rows` [K, M] after each update.

        Several optimisers (actor-critic methods: SAC, TD3): a model with `variable_groups` ({name: variables},
        the first group stepped every SGD step) gets one Adam per group with lr[name]; the loss then returns
        ({name: loss}, metrics) and each group follows the gradient of its own loss only. apply_every[name] = d
        applies that group's update on every d-th SGD step only (TD3's delayed actor). grad_clip applies to
        each group's gradients separately; the reported grad_gnorm is over all groups."""
        super().__init__(name="learner")
        self.spec = spec
        self.strategy = strategy or tf.distribute.get_strategy()
        replicas = self.strategy.num_replicas_in_sync
        if replicas > 1 and (minibatch_size is None or minibatch_size % replicas):
            raise ValueError(
                f"sgd_minibatch_size = {minibatch_size} must divide evenly across {replicas} learner replicas"
            )
        with self.strategy.scope():
            self.model = (model_fn or ActorCritic)(spec)
            self.variables_ = self.model.ordered_variables
            self.groups = getattr(self.model, "variable_groups", None)
            if self.groups is None:
                self.optimizer = Adam(self.variables_, lr)
            else:
                self.optimizers = _group_optimizers(self.groups, lr)
                self.optimizer = next(iter(self.optimizers.values()))  # its step counter counts SGD steps
            self.hparams = {k: tf.Variable(float(v), trainable=False, name=k) for k, v in hparams.items()}
        self.loss_fn = loss_fn
        self.prepare_fn = prepare_fn
        self.metric_names = metric_names
        self.grad_clip = grad_clip
        self.jit_compile = jit_compile  # XLA: ~3x cheaper steps on small nets, ~1 s more to compile
        self.minibatch_size = minibatch_size  # None: one step on the whole batch, whatever its size (A2C)
        self.row_output = row_output
        self.apply_every = {name: int((apply_every or {}).get(name, 1)) for name in (self.groups or {})}
        if self.groups and self.apply_every[next(iter(self.groups))] != 1:
            raise ValueError(
                "the first variable group must be updated every step (its Adam counts the SGD steps)"
            )
        self.last_rows: np.ndarray | None = None
        self._keys = sorted(batch_spec)
        self._batch_sig = [
            tf.TensorSpec((None,) + tuple(batch_spec[k][0]), tf.as_dtype(batch_spec[k][1]))
            for k in self._keys
        ]
        self._gradients_fn = self._apply_fn = (
            None  # gradient exchange (A3C, aggregation): traced on first use
        )
        # .debugging(eager=True) turns tf.config.run_functions_eagerly on in this process before the learner is
        # built: the same step code then runs op by op in Python (tf.while_loop is a Python loop in eager mode),
        # so a breakpoint or print inside a loss sees concrete tensors. Nothing is traced.
        self.eager = tf.config.functions_run_eagerly()
        if self.eager:
            self._update_fn = self._eagerly(self._run_steps)
        else:
            self._update_fn = self._compile(
                batch_spec
            )  # traced now: before the first batch, while workers start

    # ------------------------------------------------------------------ weights
    def get_weights(self) -> list[np.ndarray]:
        return self.model.get_weights()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.model.set_weights(weights)

    def part_weights(self, part: str) -> list[np.ndarray]:
        """Weights of a part of the model the workers never see (e.g. SAC's `critics`), for export."""
        return getattr(self.model, part).get_weights()

    def set_lr(self, lr: float) -> None:
        for optimizer in getattr(self, "optimizers", {"": self.optimizer}).values():
            optimizer.lr.assign(lr)

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

    def set_hparam(self, name: str, value: float) -> None:
        self.hparams[name].assign(value)

    # ------------------------------------------------------------------ update
    def update(self, batch: dict[str, np.ndarray], minibatch_indices: np.ndarray) -> dict[str, float]:
        """Run len(minibatch_indices) SGD steps; row k of the [K, M] index array picks minibatch k."""
        if self.minibatch_size is not None and minibatch_indices.shape[1] != self.minibatch_size:
            raise ValueError(
                f"minibatch index rows have {minibatch_indices.shape[1]} entries, the update was "
                f"compiled for {self.minibatch_size}"
            )
        sums, gnorm, rows = self._update_fn(
            [batch[k] for k in self._keys], minibatch_indices.astype(np.int32)
        )
        self.last_rows = rows.numpy() if self.row_output else None
        values = (sums.numpy() / max(len(minibatch_indices), 1)).tolist()
        out = dict(zip(self.metric_names, values))
        out["grad_gnorm"] = float(gnorm.numpy()) / max(len(minibatch_indices), 1)
        for name, value in out.items():
            if not np.isfinite(value):
                raise FloatingPointError(
                    f"learner produced a non-finite {name} ({value}); lower the learning rate "
                    f"or check the rewards / observations for extreme values"
                )
        return out

    # ------------------------------------------------------------------ gradient exchange
    def compute_gradients(self, batch: dict[str, np.ndarray]) -> tuple[list[np.ndarray], dict[str, float]]:
        """Unclipped gradients of the loss on the whole batch at the current weights (nothing applied):
        what an A3C worker or a gradient-aggregating worker sends."""
        if self._gradients_fn is None and self.eager:
            self._gradients_fn = self._eagerly(self._gradients)
        if self._gradients_fn is None:
            self._gradients_fn = tf.function(
                self._gradients, input_signature=[self._batch_sig], autograph=False
            ).get_concrete_function()
        grads, metrics = self._gradients_fn([batch[k] for k in self._keys])
        return [g.numpy() for g in grads], dict(zip(self.metric_names, metrics.numpy().tolist()))

    def apply_gradients(self, grads: list[np.ndarray]) -> float:
        """Clip (global norm) and apply gradients computed elsewhere; returns their global norm."""
        if self._apply_fn is None and self.eager:
            self._apply_fn = lambda g: self._apply(
                [tf.convert_to_tensor(x, v.dtype) for x, v in zip(g, self.variables_)]
            )
        if self._apply_fn is None:
            sig = [[tf.TensorSpec(v.shape, v.dtype) for v in self.variables_]]
            self._apply_fn = tf.function(
                self._apply, input_signature=sig, autograph=False
            ).get_concrete_function()
        return float(self._apply_fn(list(grads)).numpy())

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

    def _eagerly(self, fn: Callable) -> Callable:
        """fn(columns, *rest) called op by op, the columns given the dtypes the compiled signature would cast to."""

        def run(columns: list, *rest):
            return fn([tf.convert_to_tensor(c, s.dtype) for c, s in zip(columns, self._batch_sig)], *rest)

        return run

    def _compile(self, batch_spec: dict[str, tuple]):
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

    def _replica_step(
        self, minibatch: dict, b1p: tf.Tensor, b2p: tf.Tensor
    ) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """One SGD step on this replica's slice of the minibatch, gradients averaged over replicas."""
        ctx = tf.distribute.get_replica_context()
        replicas = ctx.num_replicas_in_sync
        minibatch = self._replica_slice(ctx, minibatch)
        with tf.GradientTape() as tape:
            loss, metrics = self.loss_fn(self.model, minibatch, self.hparams)
        grads = tape.gradient(loss, self.variables_)
        # variables the loss does not use (e.g. DQN's value branch without dueling) get zero gradients
        grads = [tf.zeros_like(v) if g is None else g for g, v in zip(grads, self.variables_)]
        metric_vec = tf.stack([tf.cast(metrics[n], tf.float32) for n in self.metric_names])
        rows = tf.cast(metrics[self.row_output], tf.float32) if self.row_output else tf.zeros(0)
        if replicas > 1:  # equal slices: the mean of slice gradients is the gradient of the minibatch mean
            grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
            metric_vec = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, metric_vec)
            if self.row_output:
                rows = ctx.all_gather(rows, axis=0)
        gnorm = tf.linalg.global_norm(grads)
        if self.grad_clip is not None:
            grads, _ = tf.clip_by_global_norm(grads, self.grad_clip, use_norm=gnorm)
        self.optimizer.apply(grads, self.variables_, b1p, b2p)
        return metric_vec, gnorm, rows

    def _replica_group_step(self, minibatch: dict, powers: dict) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """One SGD step with one optimiser per variable group: each group follows the gradient of its own
        loss (e.g. the actor's loss moves only the actor, though it runs through the critics).
        powers[name] = (beta1^t, beta2^t, apply now?)."""
        ctx = tf.distribute.get_replica_context()
        replicas = ctx.num_replicas_in_sync
        minibatch = self._replica_slice(ctx, minibatch)
        with tf.GradientTape(persistent=True) as tape:
            losses, metrics = self.loss_fn(self.model, minibatch, self.hparams)
        grads = {}
        for name, variables in self.groups.items():
            g = tape.gradient(losses[name], variables)
            grads[name] = [tf.zeros_like(v) if gi is None else gi for gi, v in zip(g, variables)]
        del tape
        metric_vec = tf.stack([tf.cast(metrics[n], tf.float32) for n in self.metric_names])
        rows = tf.cast(metrics[self.row_output], tf.float32) if self.row_output else tf.zeros(0)
        if replicas > 1:
            grads = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, grads)
            metric_vec = ctx.all_reduce(tf.distribute.ReduceOp.MEAN, metric_vec)
            if self.row_output:
                rows = ctx.all_gather(rows, axis=0)
        gnorm = tf.linalg.global_norm([g for name in grads for g in grads[name]])
        for name, variables in self.groups.items():
            g = grads[name]
            if self.grad_clip is not None:
                g, _ = tf.clip_by_global_norm(g, self.grad_clip)
            b1p, b2p, apply_now = powers[name]
            apply = functools.partial(self._apply_group, name, g, variables, b1p, b2p)
            if self.apply_every[name] == 1:
                apply()
            else:
                tf.cond(apply_now, apply, lambda: tf.constant(0))
        return metric_vec, gnorm, rows

    def _apply_group(self, name, grads, variables, b1p, b2p) -> tf.Tensor:
        self.optimizers[name].apply(grads, variables, b1p, b2p)
        return tf.constant(0)

    def _group_powers(self) -> dict:
        """Per group (cross-replica): Adam's bias-correction powers and whether it steps now. The first
        group steps every SGD step; a delayed group only every apply_every[name]-th, counting from it."""
        powers = {}
        step = None
        for name, optimizer in self.optimizers.items():
            every = self.apply_every[name]
            apply_now = tf.constant(True) if step is None else tf.equal(step % every, 0)
            b1p, b2p = optimizer.next_step_powers(apply_now)
            step = optimizer.step if step is None else step
            powers[name] = (b1p, b2p, apply_now)
        return powers

    def _run_steps(self, columns: list, idx: tf.Tensor):
        batch = dict(zip(self._keys, columns))

        steps = tf.shape(idx)[0]
        after_step = getattr(self.model, "after_step", None)

        def body(k, sums, gnorm_sum, rows):
            minibatch = {key: tf.gather(t, idx[k]) for key, t in batch.items()}
            if self.prepare_fn is not None:
                minibatch = self.prepare_fn(minibatch)
            if self.groups is None:
                b1p, b2p = self.optimizer.next_step_powers()
                metrics, gnorm, step_rows = self.strategy.run(self._replica_step, args=(minibatch, b1p, b2p))
            else:
                metrics, gnorm, step_rows = self.strategy.run(
                    self._replica_group_step, args=(minibatch, self._group_powers())
                )
            # after the all-reduce every replica holds the same values: take the first
            local = self.strategy.experimental_local_results
            metrics, gnorm, step_rows = local(metrics)[0], local(gnorm)[0], local(step_rows)[0]
            if after_step is not None:
                after_step(self.optimizer.step)
            return k + 1, sums + metrics, gnorm_sum + gnorm, rows.write(k, step_rows)

        rows = tf.TensorArray(
            tf.float32,
            size=steps,
            element_shape=[self.minibatch_size] if self.row_output else [0],
            infer_shape=False,
        )
        init = (tf.constant(0), tf.zeros(len(self.metric_names)), tf.constant(0.0), rows)
        _, sums, gnorm_sum, rows = tf.while_loop(lambda k, *_: k < steps, body, init)
        return sums, gnorm_sum, rows.stack()


def _group_optimizers(groups: dict, lr: float | dict[str, float]) -> dict[str, Adam]:
    """One Adam per variable group; lr is one rate for all or {group: rate} naming every group."""
    rates = lr if isinstance(lr, dict) else {name: lr for name in groups}
    if set(rates) != set(groups):
        raise ValueError(
            f"learning rates given for {sorted(rates)}, the model's variable groups are {list(groups)}"
        )
    return {name: Adam(variables, rates[name]) for name, variables in groups.items()}
