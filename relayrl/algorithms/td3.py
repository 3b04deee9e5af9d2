"""TD3: Twin Delayed DDPG (Fujimoto et al. 2018, arXiv:1802.09477). A deterministic tanh actor trained
through the first of twin Q critics; targets use the smaller critic (clipped double Q) at a smoothed target
action; the actor and all targets update every `policy_delay` critic steps. Workers explore with Gaussian
noise whose scale may differ per worker (exploration_noise .. exploration_noise_max, geometric)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from relayrl.algorithms.replay_actor_critic import ReplayActorCritic, ReplayActorCriticConfig
from relayrl.core import checks as C
from relayrl.core.knobs import knob
from relayrl.models.tf_import import tf
from relayrl.sampling.settings import Exploration

if TYPE_CHECKING:
    from relayrl.models.actor_critic_models import TD3Model


@dataclass
class TD3Config(ReplayActorCriticConfig):
    algo_name = "td3"

    lr: float = knob(1e-3, "training", C.number(0, strict=True), "critic learning rate")
    actor_lr: float = knob(1e-3, "training", C.number(0, strict=True), "actor learning rate")
    policy_delay: int = knob(2, "training", C.integer(1), "critic steps per actor (and target) update")
    target_noise: float = knob(
        0.2, "training", C.number(0), "std of the target policy smoothing noise (actions in [-1, 1])"
    )
    target_noise_clip: float = knob(0.5, "training", C.number(0), "the smoothing noise is clipped to +-this")
    exploration_noise: float = knob(
        0.1, "training", C.number(0), "std of the workers' Gaussian action noise (actions in [-1, 1])"
    )
    exploration_noise_max: Any = knob(
        None,
        "training",
        C.optional(C.number(0, strict=True)),
        "with several workers: worker i explores with std spread geometrically from exploration_noise "
        "(first) to this (last); None = all equal",
    )


TD3_METRICS = ("critic_loss", "actor_loss", "q_mean", "target_mean")


def td3_loss(
    model: TD3Model,
    mb: dict,
    hp: dict,
    target_noise: float,
    noise_clip: float,
    noise: tf.Tensor | None = None,
    group: str | None = None,
) -> tuple[dict, dict]:
    """Critic and actor losses for a minibatch of M transitions (actions in [-1, 1]; n-step rewards,
    discounts gamma^n or 0 after termination). noise [M, A] ~ N(0, 1) for the smoothing; drawn when None.
    group = "critic" | "actor": only that loss and its metrics (the learner steps the critics first, then
    the actor against the updated critics, as in the TD3 paper); None: both from one pass."""
    obs = mb["obs"]
    losses, metrics = {}, {}
    if group in (None, "critic"):
        if noise is None:
            noise = model.draw_noise(tf.shape(obs)[0])
        # target policy smoothing: a' = clip(pi'(s') + clip(sigma * eps, -c, c), -1, 1)
        smoothing = tf.clip_by_value(target_noise * noise, -noise_clip, noise_clip)
        a_t = tf.clip_by_value(tf.tanh(model.target_actor.head(mb["next_obs"])) + smoothing, -1.0, 1.0)
        q1_t, q2_t = model.target_critics(mb["next_obs"], a_t)  # [M] each
        # clipped double Q: y = R + gamma^n * min(Q'_1, Q'_2)(s', a')
        y = tf.stop_gradient(mb["rewards"] + mb["discounts"] * tf.minimum(q1_t, q2_t))
        q1, q2 = model.critics(obs, mb["actions"])
        losses["critic"] = tf.reduce_mean(mb["weights"] * (tf.square(q1 - y) + tf.square(q2 - y)))
        metrics.update(critic_loss=losses["critic"], q_mean=tf.reduce_mean(q1), target_mean=tf.reduce_mean(y))
    if group in (None, "actor"):
        # deterministic policy gradient through the first critic: maximise Q_1(s, pi(s))
        q1_pi, _ = model.critics(obs, tf.tanh(model.actor.head(obs)))
        losses["actor"] = -tf.reduce_mean(q1_pi)
        metrics["actor_loss"] = losses["actor"]
    return losses, metrics


class TD3(ReplayActorCritic):
    config_class = TD3Config
    name = "TD3"
    continuous_head = "deterministic"

    def exploration(self) -> Exploration:
        c: TD3Config = self.config
        if c.exploration_noise_max is None:
            return Exploration(sigma=c.exploration_noise)
        return Exploration(
            sigma=c.exploration_noise, sigma_max=c.exploration_noise_max, num_workers=c.num_rollout_workers
        )

    @staticmethod
    def build_learner(spec, c: TD3Config, strategy=None):
        from relayrl.learning.learner import Learner
        from relayrl.learning.spec import LearnerSpec
        from relayrl.models.actor_critic_models import TD3Model

        learner = LearnerSpec(
            functools.partial(td3_loss, target_noise=c.target_noise, noise_clip=c.target_noise_clip),
            TD3_METRICS,
            {"critic": c.lr, "actor": c.actor_lr},
            TD3.learner_columns(spec),
            c.train_batch_size,
            c.grad_clip,
            model_fn=lambda s: TD3Model(s, c),
            apply_every={"actor": c.policy_delay},
            sequential_groups=True,
        )
        return Learner(spec, learner, strategy)
