"""The learner's optimiser: Adam as one fused kernel per variable, and one Adam per variable group."""

from __future__ import annotations

from typing import NamedTuple

from relayrl.models.tf_import import tf


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
    ) -> tf.Tensor:
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
        return tf.constant(0)  # a value, so that tf.cond can skip a delayed group's step


class OptimizerGroup(NamedTuple):
    """Variables stepped by one Adam, following the gradient of the loss of the same name, every
    `every`-th SGD step."""

    name: str
    variables: list
    optimizer: Adam
    every: int


def group_optimizers(groups: dict, lr: float | dict[str, float]) -> dict[str, Adam]:
    """One Adam per variable group; lr is one rate for all or {group: rate} naming every group."""
    rates = lr if isinstance(lr, dict) else {name: lr for name in groups}
    if set(rates) != set(groups):
        raise ValueError(
            f"learning rates given for {sorted(rates)}, the model's variable groups are {list(groups)}"
        )
    return {name: Adam(variables, rates[name]) for name, variables in groups.items()}
