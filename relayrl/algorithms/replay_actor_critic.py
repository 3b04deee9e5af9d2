"""What SAC and TD3 share: continuous-control actor-critics trained off-policy from a replay buffer.

Workers run only the actor (numpy forward, tanh-bounded actions) and send transitions; the learner holds the
actor, the twin critics and their targets, and runs `replay_ratio` gradient steps per sampled env step, all
of an iteration's steps in one compiled call. Each algorithm supplies its model, loss and exploration.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from relayrl.algorithms.base import Algorithm
from relayrl.algorithms.state import InProcessReplayCheckpoint
from relayrl.core import checks as C
from relayrl.core.config import Config
from relayrl.core.knobs import DEFAULT_MODEL, MODEL_CHECKS, knob
from relayrl.replay import UniformReplay
from relayrl.sampling.settings import Exploration, Sampling

ACTOR_CRITIC_MODEL = dict(DEFAULT_MODEL, fcnet_hiddens=[256, 256], fcnet_activation="relu")


@dataclass
class ReplayActorCriticConfig(Config):
    # shared fields with this family's meaning and defaults
    num_envs_per_worker: int = knob(
        1, "rollouts", C.integer(1), "vectorised envs stepped together by each worker"
    )
    rollout_fragment_length: Any = knob(
        8, "rollouts", C.integer(1), "env steps per env per iteration (then the learner trains)"
    )
    train_batch_size: int = knob(256, "training", C.batch_size(), "replay rows per gradient step")
    lr: float = knob(3e-4, "training", C.number(0, strict=True), "critic learning rate")
    model: dict = knob(
        ACTOR_CRITIC_MODEL,
        "training",
        C.model(MODEL_CHECKS),
        "actor network: fcnet_hiddens, fcnet_activation",
    )
    # the family's own
    actor_lr: float = knob(3e-4, "training", C.number(0, strict=True), "actor learning rate")
    critic_hiddens: list = knob(
        [256, 256],
        "training",
        C.int_list(min_len=1),
        "hidden layer sizes of each critic (activation as the actor's)",
    )
    tau: float = knob(0.005, "training", C.number(0, 1), "Polyak coefficient of the target networks")
    replay_ratio: float = knob(
        1.0, "training", C.number(0, strict=True), "gradient steps per env step sampled"
    )
    replay_buffer_capacity: int = knob(100_000, "training", C.integer(1), "transitions kept in replay")
    learning_starts: int = knob(1_000, "training", C.integer(0), "env steps sampled before the first update")
    n_step: int = knob(1, "training", C.integer(1), "steps of reward before bootstrapping")

    def resolved_fragment_length(self) -> int:
        return int(self.rollout_fragment_length)

    def validate(self) -> None:
        super().validate()
        name = type(self).__name__
        if self.train_batch_size > self.replay_buffer_capacity:
            raise ValueError(
                f"{name}.train_batch_size = {self.train_batch_size} is invalid: allowed: at most "
                f"replay_buffer_capacity ({self.replay_buffer_capacity})"
            )
        if self.lr_schedule is not None:
            raise ValueError(
                f"{name}.lr_schedule = {self.lr_schedule!r} is invalid: allowed: None (set lr and actor_lr)"
            )


class ReplayActorCritic(InProcessReplayCheckpoint, Algorithm):
    """training_step: sample -> replay.add -> K = replay_ratio * new steps gradient steps in one call ->
    sync."""

    action_kinds = ("gaussian",)
    action_space_hint = " (it needs continuous Box actions: for a Discrete action space use dqn or ppo)"
    metric_names: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: ReplayActorCriticConfig):
        super().__init__(config)
        self.replay = UniformReplay(config.replay_buffer_capacity, seed=config.seed)
        self._update_debt = 0.0  # fractional gradient steps owed by the replay ratio
        self.num_updates_total = 0
        self.learn_time_total_s = 0.0  # for gradient updates/s of the compiled update alone

    @classmethod
    def check_env(cls, config: Config):
        obs_space, action_space, spec = super().check_env(config)
        if spec.obs_kind == "image":
            raise ValueError(
                f"{cls.name} critics are MLPs over (obs, action): image observations are not supported; "
                f"allowed: Box vector or Discrete observations"
            )
        return obs_space, action_space, spec

    @classmethod
    def learner_columns(cls, spec) -> dict[str, tuple]:
        from relayrl.sampling.settings import batch_spec

        return {**batch_spec(spec, "transitions"), "weights": ((), np.float32)}

    def exploration(self) -> Exploration:
        """How the workers explore (none by default: SAC's actor samples its own actions)."""
        return Exploration()

    def worker_sampling(self) -> Sampling:
        return Sampling("transitions", n_step=self.config.n_step, explore=self.exploration())

    def training_step(self) -> dict[str, float]:
        c: ReplayActorCriticConfig = self.config
        # uniform random actions until learning_starts, as SB3 and CleanRL: a fresh actor covers little of
        # the action space (TD3's tanh(~0) + N(0, 0.1): std 0.1). Said on every call: a re-created or
        # resumed worker follows too. Exploration(uniform=...) leaves each worker's own noise settings.
        warm_up = Exploration(uniform=self.timesteps_total < c.learning_starts)
        with self.timers("sample"):
            fragments = self.workers.sample(warm_up)
        steps_before = self.timesteps_total
        self.record_fragments(fragments)
        for fragment in fragments:
            self.replay.add(fragment.data)
        metrics: dict[str, float] = {
            "replay_size": float(len(self.replay)),
            "num_updates_total": float(self.num_updates_total),
        }
        if self.timesteps_total < c.learning_starts:
            return metrics
        num_updates = self.owed_updates(self.timesteps_total - steps_before, c.replay_ratio)
        if num_updates == 0:
            return metrics
        with self.timers("learn"):
            batch = self.replay.sample(num_updates * c.train_batch_size)
            start = time.perf_counter()
            metrics.update(
                self.learner.update(batch, np.arange(len(batch["weights"])).reshape(num_updates, -1))
            )
            self.learn_time_total_s += time.perf_counter() - start
        self.num_updates_total += num_updates
        metrics.update(
            num_updates=float(num_updates),
            num_updates_total=float(self.num_updates_total),
            update_time_total_s=self.learn_time_total_s,
        )
        with self.timers("sync"):
            self.publish_weights()
        return metrics

    def export_model(self):
        """The actor serves actions; `value` is the twin critics' minimum at the served (deterministic)
        action, Q(s, mu(s)): these methods have no state-value head."""
        from relayrl.models.actor_critic_models import twin_critics
        from relayrl.models.tf_import import tf

        model = super().export_model()
        critics = twin_critics(self.spec, self.config, name="critics")
        critics.set_weights(self.learner.part_weights("critics"))
        model.critics = critics  # tracked: its variables are saved with the SavedModel
        num_actions = self.spec.action_nvec[0]

        def served_action_value(obs):
            action = tf.tanh(model.head(obs)[:, :num_actions])  # the critics' action scale, [-1, 1]
            return tf.minimum(*critics(obs, action))

        model.value = served_action_value
        return model
