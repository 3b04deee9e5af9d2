"""DQN (Mnih et al. 2015) with the usual extensions: double Q-learning (van Hasselt et al. 2016), dueling
heads (Wang et al. 2016), n-step returns, prioritised replay (Schaul et al. 2016), Huber loss, a target
network updated every N gradient steps or by Polyak averaging, and a linear epsilon schedule."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl.algorithms.base import Algorithm
from relayrl.algorithms.epsilon_greedy import EpsilonGreedyConfig
from relayrl.algorithms.state import InProcessReplayCheckpoint
from relayrl.core import checks as C
from relayrl.core.knobs import knob
from relayrl.core.ops import piecewise_linear
from relayrl.replay import PrioritizedReplay, UniformReplay
from relayrl.sampling.settings import Exploration, Sampling


@dataclass
class DQNConfig(EpsilonGreedyConfig):
    algo_name = "dqn"

    # shared fields with DQN's meaning and defaults
    train_batch_size: int = knob(64, "training", C.batch_size(), "replay rows per gradient step")
    lr: float = knob(1e-3, "training", C.number(0, strict=True), "learning rate")
    grad_clip: Any = knob(
        10.0, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)"
    )
    # DQN's own
    replay_ratio: float = knob(
        0.25, "training", C.number(0, strict=True), "gradient steps per env step sampled"
    )
    replay_buffer_capacity: int = knob(50_000, "training", C.integer(1), "transitions kept in replay")
    learning_starts: int = knob(1_000, "training", C.integer(0), "env steps sampled before the first update")
    target_network_update_freq: int = knob(
        500, "training", C.integer(1), "gradient steps between hard target updates (when tau is None)"
    )
    tau: Any = knob(
        None,
        "training",
        C.optional(C.number(0, 1)),
        "Polyak coefficient for soft target updates every step (None = hard updates)",
    )
    double_q: bool = knob(True, "training", C.boolean(), "double Q-learning targets")
    dueling: bool = knob(True, "training", C.boolean(), "dueling value/advantage heads")
    n_step: int = knob(1, "training", C.integer(1), "steps of reward before bootstrapping")
    huber_delta: float = knob(
        1.0, "training", C.number(0, strict=True), "Huber loss threshold on the TD error"
    )
    replay_backend: str = knob(
        "memory",
        "training",
        C.one_of("memory", "redis"),
        "where replay lives: this process's memory, or a Redis server (outlives the learner)",
    )
    redis_address: str = knob(
        "127.0.0.1:6379", "training", C.string(), "host:port of the Redis server (replay_backend='redis')"
    )
    redis_password: Any = knob(
        None,
        "training",
        C.optional(C.string()),
        "Redis password; None reads RELAYRL_REDIS_PASSWORD (a password is required)",
    )
    redis_key_prefix: str = knob(
        "relayrl", "training", C.string(), "key prefix of this run's replay in Redis (reuse it to resume)"
    )
    redis_appendonly: Any = knob(
        None,
        "training",
        C.optional(C.boolean()),
        "turn Redis AOF persistence on/off (None = leave the server's setting)",
    )
    redis_timeout_s: float = knob(
        5.0,
        "training",
        C.number(0, 600, strict=True),
        "seconds one Redis connect or reply may take before it counts as failed",
    )
    redis_deadline_s: float = knob(
        30.0,
        "training",
        C.number(0, 86_400, strict=True),
        "seconds a failing Redis is retried (with backoff) before the run ends "
        "with an error (exit 1); never past --stop-time",
    )
    prioritized_replay: bool = knob(False, "training", C.boolean(), "proportional prioritised replay")
    prioritized_replay_alpha: float = knob(0.6, "training", C.number(0), "priority exponent alpha")
    prioritized_replay_beta: float = knob(
        0.4, "training", C.number(0, 1), "initial importance-sampling exponent (annealed to 1)"
    )
    prioritized_replay_beta_timesteps: int = knob(
        100_000, "training", C.integer(1), "env steps over which beta anneals to 1"
    )

    def redis_password_resolved(self) -> str | None:
        import os

        return self.redis_password or os.environ.get("RELAYRL_REDIS_PASSWORD")

    def validate(self) -> None:
        from relayrl.replay.redis_replay import parse_address

        super().validate()
        parse_address(self.redis_address, f"{type(self).__name__}.redis_address")
        if self.replay_backend == "redis":
            if not self.redis_password_resolved():
                raise ValueError(
                    f"{type(self).__name__}.redis_password is not set: relayrl only talks to a Redis with "
                    f"a password; set redis_password or RELAYRL_REDIS_PASSWORD"
                )
            if self.prioritized_replay:
                raise ValueError(
                    f"{type(self).__name__}.prioritized_replay = True is invalid with "
                    "replay_backend='redis': allowed: False (the Redis backend is uniform)"
                )
        if self.train_batch_size > self.replay_buffer_capacity:
            raise ValueError(
                f"DQNConfig.train_batch_size = {self.train_batch_size} is invalid: allowed: at most "
                f"replay_buffer_capacity ({self.replay_buffer_capacity})"
            )


class DQN(InProcessReplayCheckpoint, Algorithm):
    config_class = DQNConfig
    name = "DQN"
    action_kinds = ("categorical",)
    action_space_hint = " (DQN needs discrete actions: for a Box action space use sac or td3)"

    def __init__(self, config: DQNConfig):
        c = config
        if c.replay_backend == "redis":  # before the workers start: an unusable Redis fails fast
            from relayrl.replay.redis_replay import RedisReplay

            self.replay = RedisReplay(
                c.redis_address,
                c.redis_password_resolved(),
                c.replay_buffer_capacity,
                c.redis_key_prefix,
                seed=c.seed,
                appendonly=c.redis_appendonly,
                timeout_s=c.redis_timeout_s,
                deadline_s=c.redis_deadline_s,
            )
        super().__init__(config)
        if c.replay_backend == "memory":
            self.replay = (
                PrioritizedReplay(
                    c.replay_buffer_capacity,
                    c.prioritized_replay_alpha,
                    c.prioritized_replay_beta,
                    seed=c.seed,
                )
                if c.prioritized_replay
                else UniformReplay(c.replay_buffer_capacity, seed=c.seed)
            )
        self._update_debt = 0.0  # fractional gradient steps owed by the replay ratio

    @classmethod
    def check_env(cls, config: DQNConfig):
        """Also says what a custom model's call() returns: Q-values, or (advantages, value) with dueling."""
        obs_space, action_space, spec = super().check_env(config)
        if spec.custom is not None:
            outputs = "dueling" if config.dueling else "q"
            spec = dataclasses.replace(spec, custom=dataclasses.replace(spec.custom, outputs=outputs))
        return obs_space, action_space, spec

    @staticmethod
    def build_learner(spec, c: DQNConfig, strategy=None):
        from relayrl.learning.learner import Learner
        from relayrl.learning.spec import LearnerSpec
        from relayrl.models.q_models import DQN_METRICS, QModel, dqn_loss
        from relayrl.sampling.settings import batch_spec

        columns = {**batch_spec(spec, "transitions"), "weights": ((), np.float32)}
        learner = LearnerSpec(
            functools.partial(dqn_loss, double_q=c.double_q, huber_delta=c.huber_delta),
            DQN_METRICS,
            c.lr,
            columns,
            c.train_batch_size,
            c.grad_clip,
            row_output="td_abs",
            model_fn=lambda s: QModel(s, c.dueling, c.target_network_update_freq, c.tau),
        )
        return Learner(spec, learner, strategy)

    def set_deadline(self, deadline: float | None) -> None:
        """The run ends by time.monotonic() == deadline (the CLI's --stop-time): a Redis replay that keeps
        failing gives up there (ReplayUnavailableError) rather than after redis_deadline_s. None: no end."""
        from relayrl.replay.redis_replay import RedisReplay

        if isinstance(self.replay, RedisReplay):
            self.replay.give_up_by = deadline

    def worker_sampling(self) -> Sampling:
        c: DQNConfig = self.config
        explore = Exploration(epsilon=c.exploration_initial_eps)
        return Sampling("transitions", n_step=c.n_step, explore=explore)

    def training_step(self) -> dict[str, float]:
        c: DQNConfig = self.config
        with self.timers("sample"):
            fragments = self.workers.sample(explore=Exploration(epsilon=c.epsilon_at(self.timesteps_total)))
        steps_before = self.timesteps_total
        self.record_fragments(fragments)
        for fragment in fragments:
            self.replay.add(fragment.data)
        replay_size = len(self.replay)
        metrics: dict[str, float] = {
            "epsilon": c.epsilon_at(self.timesteps_total),
            "replay_size": float(replay_size),
        }
        if (
            max(self.timesteps_total, replay_size) < c.learning_starts
        ):  # stored experience counts when resuming
            return metrics
        num_updates = self.owed_updates(self.timesteps_total - steps_before, c.replay_ratio)
        if num_updates == 0:
            return metrics
        with self.timers("learn"):
            self.apply_lr_schedule()
            metrics.update(self._learn(num_updates))
        with self.timers("sync"):
            self.publish_weights()
        return metrics

    def export_model(self):
        """Serve greedy actions on Q; value = max_a Q."""
        from relayrl.models.q_models import QModel
        from relayrl.models.tf_import import tf

        c: DQNConfig = self.config
        model = QModel(self.export_spec, c.dueling, c.target_network_update_freq, c.tau)
        model.set_weights(self.learner.get_weights())
        model.head = lambda obs: model.q(obs)
        model.value = lambda obs: tf.reduce_max(model.q(obs), axis=1)
        return model

    def _learn(self, num_updates: int) -> dict[str, float]:
        """num_updates gradient steps in one compiled call, on num_updates fresh replay minibatches."""
        c: DQNConfig = self.config
        B = c.train_batch_size
        beta = piecewise_linear(
            [[0, c.prioritized_replay_beta], [c.prioritized_replay_beta_timesteps, 1.0]], self.timesteps_total
        )
        kwargs = {"beta": beta} if c.prioritized_replay else {}
        batch = self.replay.sample(num_updates * B, **kwargs)
        idx = np.arange(num_updates * B).reshape(num_updates, B)
        metrics = self.learner.update(batch, idx)
        if c.prioritized_replay:
            self.replay.update_priorities(batch["indices"], self.learner.last_rows.reshape(-1))
        metrics["num_updates"] = float(num_updates)
        return metrics
