"""DQN's TensorFlow side (Mnih et al. 2015; double Q: van Hasselt et al. 2016, arXiv:1509.06461; dueling:
Wang et al. 2016, arXiv:1511.06581): online and target Q-networks and the n-step TD loss. Kept apart from
algos/dqn.py so that importing DQNConfig (CLI checks, Tune, Ray workers) never imports TensorFlow."""

from __future__ import annotations

import numpy as np

from relayrl.models.tf_import import tf

DQN_METRICS = ("loss", "q_mean", "td_abs_mean", "target_mean")


class QModel(tf.Module):
    """Online and target Q-networks (dueling: Q = V + A - mean A). Workers get the online weights; acting
    greedily on the advantage branch equals acting on Q, since V and mean A do not depend on the action."""

    def __init__(self, spec, dueling: bool, target_update_freq: int, tau: float | None):
        super().__init__(name="q_model")
        from relayrl.models.keras_models import actor_critic

        self.online, self.target = actor_critic(spec, name="online"), actor_critic(spec, name="target")
        self.dueling, self.update_freq, self.tau = dueling, target_update_freq, tau
        self.ordered_variables = self.online.ordered_variables

    def q(self, obs: tf.Tensor, target: bool = False) -> tf.Tensor:
        net = self.target if target else self.online
        if not self.dueling:
            return net.head(obs)  # [B, A]
        adv, value = net(obs)  # one pass: [B, A], [B]
        return value[:, None] + adv - tf.reduce_mean(adv, axis=1, keepdims=True)

    def get_weights(self) -> list[np.ndarray]:
        return self.online.get_weights()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.online.set_weights(weights)
        self.target.set_weights(weights)

    def after_step(self, step: tf.Tensor) -> None:
        online, target = self.online.ordered_variables, self.target.ordered_variables
        if self.tau is not None:
            for t, o in zip(target, online):
                t.assign(self.tau * o + (1.0 - self.tau) * t)
            return

        def copy():
            for t, o in zip(target, online):
                t.assign(o)
            return tf.constant(0)

        tf.cond(step % self.update_freq == 0, copy, lambda: tf.constant(0))


def huber(x: tf.Tensor, delta: float) -> tf.Tensor:
    abs_x = tf.abs(x)
    return tf.where(abs_x <= delta, 0.5 * tf.square(x), delta * (abs_x - 0.5 * delta))


def dqn_loss(
    model: QModel, mb: dict, hp: dict, double_q: bool = True, huber_delta: float = 1.0
) -> tuple[tf.Tensor, dict]:
    """Importance-weighted Huber loss on (double) n-step TD errors for a minibatch of M transitions."""
    q_tm1 = model.q(mb["obs"])  # [M, A]
    a_tm1 = tf.cast(mb["actions"], tf.int32)
    q_taken = tf.gather(q_tm1, a_tm1, axis=1, batch_dims=1)  # [M]
    q_t_target = model.q(mb["next_obs"], target=True)  # [M, A]
    if double_q:  # the online net picks the action, the target net values it
        a_t = tf.argmax(model.q(mb["next_obs"]), axis=1, output_type=tf.int32)
        q_t = tf.gather(q_t_target, a_t, axis=1, batch_dims=1)
    else:
        q_t = tf.reduce_max(q_t_target, axis=1)
    # n-step target: R (already discounted sum) + gamma^n * Q(s_{t+n}); discount 0 after termination
    target = tf.stop_gradient(mb["rewards"] + mb["discounts"] * q_t)
    td = q_taken - target
    loss = tf.reduce_mean(mb["weights"] * huber(td, huber_delta))
    return loss, {
        "loss": loss,
        "q_mean": tf.reduce_mean(q_taken),
        "td_abs_mean": tf.reduce_mean(tf.abs(td)),
        "target_mean": tf.reduce_mean(target),
        "td_abs": tf.abs(td),
    }
