"""SAC: Soft Actor-Critic (Haarnoja et al. 2018, arXiv:1801.01290; automatic entropy tuning and twin
critics from arXiv:1812.05905). Maximises return + alpha * entropy with a tanh-squashed Gaussian actor
(state-dependent log std), twin Q critics with Polyak-averaged targets, and a temperature alpha tuned towards
a target entropy."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relayrl.algorithms.replay_actor_critic import ReplayActorCritic, ReplayActorCriticConfig
from relayrl.core import checks as C
from relayrl.core.knobs import knob
from relayrl.models.tf_import import tf

if TYPE_CHECKING:
    from relayrl.models.actor_critic_models import SACModel


@dataclass
class SACConfig(ReplayActorCriticConfig):
    algo_name = "sac"

    alpha_lr: float = knob(3e-4, "training", C.number(0, strict=True), "learning rate of log(alpha)")
    initial_alpha: float = knob(
        1.0, "training", C.number(0, strict=True), "entropy temperature alpha at the start"
    )
    target_entropy: Any = knob(
        "auto",
        "training",
        C.auto_or(C.number()),
        "entropy alpha is tuned towards; 'auto' = -(action dimensions)",
    )


SAC_METRICS = ("critic_loss", "actor_loss", "alpha_loss", "alpha", "entropy", "q_mean", "target_mean")


def sac_loss(
    model: SACModel,
    mb: dict,
    hp: dict,
    target_entropy: float,
    noise: tuple | None = None,
    group: str | None = None,
) -> tuple[dict, dict]:
    """Critic, actor and temperature losses for a minibatch of M transitions (n-step rewards, discounts
    gamma^n or 0 after termination). noise = (eps_next, eps_now), each [M, A] ~ N(0, 1); drawn when None.
    group = "critic" | "actor" | "alpha": only that loss and its metrics (the learner steps the groups in
    that order, each on a fresh forward pass: CleanRL's order); None: all three from one pass."""
    from relayrl.models.tf_distributions import squashed_gaussian_sample

    obs = mb["obs"]
    if noise is None:
        rows = tf.shape(obs)[0]
        noise = (model.draw_noise(rows), model.draw_noise(rows))
    alpha = tf.exp(model.log_alpha)
    losses, metrics = {}, {}
    if group in (None, "critic"):
        # soft target: y = R + gamma^n * (min_j Q'_j(s', a') - alpha * log pi(a'|s')),  a' ~ pi(.|s')
        a_t, logp_t = squashed_gaussian_sample(model.actor.head(mb["next_obs"]), noise[0])  # [M, A], [M]
        q1_t, q2_t = model.target_critics(mb["next_obs"], a_t)  # [M] each
        y = tf.stop_gradient(mb["rewards"] + mb["discounts"] * (tf.minimum(q1_t, q2_t) - alpha * logp_t))
        q1, q2 = model.critics(obs, mb["actions"])
        losses["critic"] = 0.5 * tf.reduce_mean(mb["weights"] * (tf.square(q1 - y) + tf.square(q2 - y)))
        metrics.update(critic_loss=losses["critic"], q_mean=tf.reduce_mean(q1), target_mean=tf.reduce_mean(y))
    if group != "critic":
        a_pi, logp_pi = squashed_gaussian_sample(model.actor.head(obs), noise[1])
        metrics["entropy"] = -tf.reduce_mean(logp_pi)
    if group in (None, "actor"):
        # actor: minimise E[alpha * log pi(a|s) - min_j Q_j(s, a)], a = tanh(mean + std * eps) reparameterised
        q1_pi, q2_pi = model.critics(obs, a_pi)
        losses["actor"] = tf.reduce_mean(tf.stop_gradient(alpha) * logp_pi - tf.minimum(q1_pi, q2_pi))
        metrics["actor_loss"] = losses["actor"]
    if group in (None, "alpha"):
        # temperature: alpha rises while the policy's entropy (-log pi) is below the target, falls above it
        losses["alpha"] = -tf.reduce_mean(model.log_alpha * tf.stop_gradient(logp_pi + target_entropy))
        metrics.update(alpha_loss=losses["alpha"], alpha=alpha)
    return losses, metrics


class SAC(ReplayActorCritic):
    config_class = SACConfig
    name = "SAC"
    continuous_head = "squashed_gaussian"

    @staticmethod
    def build_learner(spec, c: SACConfig, strategy=None):
        from relayrl.learning.learner import Learner
        from relayrl.learning.spec import LearnerSpec
        from relayrl.models.actor_critic_models import SACModel

        target_entropy = (
            -float(spec.action_nvec[0]) if c.target_entropy == "auto" else float(c.target_entropy)
        )
        learner = LearnerSpec(
            functools.partial(sac_loss, target_entropy=target_entropy),
            SAC_METRICS,
            {"critic": c.lr, "actor": c.actor_lr, "alpha": c.alpha_lr},
            SAC.learner_columns(spec),
            c.train_batch_size,
            c.grad_clip,
            model_fn=lambda s: SACModel(s, c),
            sequential_groups=True,
        )
        return Learner(spec, learner, strategy)
