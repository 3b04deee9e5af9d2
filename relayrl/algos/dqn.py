"""DQN (Mnih et al. 2015) with the usual extensions: double Q-learning (van Hasselt et al. 2016), dueling
heads (Wang et al. 2016), n-step returns, prioritised replay (Schaul et al. 2016), Huber loss, a target
network updated every N gradient steps or by Polyak averaging, and a linear epsilon schedule."""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl import checks as C
from relayrl.algorithm import Algorithm
from relayrl.algos.epsilon_greedy import EpsilonGreedyConfig
from relayrl.config import knob
from relayrl.ops import piecewise_linear
from relayrl.replay import PrioritizedReplay, UniformReplay
from relayrl.tf_import import tf


@dataclass
class DQNConfig(EpsilonGreedyConfig):
    algo_name = "dqn"

    # shared fields with DQN's meaning and defaults
    train_batch_size: int = knob(64, "training", C.integer(1), "replay rows per gradient step")
    lr: float = knob(1e-3, "training", C.number(0, strict=True), "learning rate")
    grad_clip: Any = knob(10.0, "training", C.optional(C.number(0, strict=True)), "global gradient-norm clip (None = off)")
    # DQN's own
    replay_ratio: float = knob(0.25, "training", C.number(0, strict=True), "gradient steps per env step sampled")
    replay_buffer_capacity: int = knob(50_000, "training", C.integer(1), "transitions kept in replay")
    learning_starts: int = knob(1_000, "training", C.integer(0), "env steps sampled before the first update")
    target_network_update_freq: int = knob(500, "training", C.integer(1), "gradient steps between hard target updates (when tau is None)")
    tau: Any = knob(None, "training", C.optional(C.number(0, 1)), "Polyak coefficient for soft target updates every step (None = hard updates)")
    double_q: bool = knob(True, "training", C.boolean(), "double Q-learning targets")
    dueling: bool = knob(True, "training", C.boolean(), "dueling value/advantage heads")
    n_step: int = knob(1, "training", C.integer(1), "steps of reward before bootstrapping")
    huber_delta: float = knob(1.0, "training", C.number(0, strict=True), "Huber loss threshold on the TD error")
    replay_backend: str = knob("memory", "training", C.one_of("memory", "redis"), "where replay lives: this process's memory, or a Redis server (outlives the learner)")
    redis_address: str = knob("127.0.0.1:6379", "training", C.string(), "host:port of the Redis server (replay_backend='redis')")
    redis_password: Any = knob(None, "training", C.optional(C.string()), "Redis password; None reads RELAYRL_REDIS_PASSWORD (a password is required)")
    redis_key_prefix: str = knob("relayrl", "training", C.string(), "key prefix of this run's replay in Redis (reuse it to resume)")
    redis_appendonly: Any = knob(None, "training", C.optional(C.boolean()), "turn Redis AOF persistence on/off (None = leave the server's setting)")
    prioritized_replay: bool = knob(False, "training", C.boolean(), "proportional prioritised replay")
    prioritized_replay_alpha: float = knob(0.6, "training", C.number(0), "priority exponent alpha")
    prioritized_replay_beta: float = knob(0.4, "training", C.number(0, 1), "initial importance-sampling exponent (annealed to 1)")
    prioritized_replay_beta_timesteps: int = knob(100_000, "training", C.integer(1), "env steps over which beta anneals to 1")

    def redis_password_resolved(self) -> str | None:
        import os

        return self.redis_password or os.environ.get("RELAYRL_REDIS_PASSWORD")

    def validate(self) -> None:
        super().validate()
        if self.replay_backend == "redis":
            if not self.redis_password_resolved():
                raise ValueError(f"{type(self).__name__}.redis_password is not set: relayrl only talks to a Redis with "
                                 f"a password; set redis_password or RELAYRL_REDIS_PASSWORD")
            if self.prioritized_replay:
                raise ValueError(f"{type(self).__name__}.prioritized_replay = True is invalid with replay_backend='redis': "
                                 f"allowed: False (the Redis backend is uniform)")
        if self.train_batch_size > self.replay_buffer_capacity:
            raise ValueError(f"DQNConfig.train_batch_size = {self.train_batch_size} is invalid: allowed: at most "
                             f"replay_buffer_capacity ({self.replay_buffer_capacity})")


DQN_METRICS = ("loss", "q_mean", "td_abs_mean", "target_mean")


class QModel(tf.Module):
    """Online and target Q-networks (dueling: Q = V + A - mean A). Workers get the online weights; acting
    greedily on the advantage branch equals acting on Q, since V and mean A do not depend on the action."""

    def __init__(self, spec, dueling: bool, target_update_freq: int, tau: float | None):
        super().__init__(name="q_model")
        from relayrl.keras_models import ActorCritic

        self.online, self.target = ActorCritic(spec, name="online"), ActorCritic(spec, name="target")
        self.dueling, self.update_freq, self.tau = dueling, target_update_freq, tau
        self.ordered_variables = self.online.ordered_variables

    def q(self, obs: tf.Tensor, target: bool = False) -> tf.Tensor:
        net = self.target if target else self.online
        h = net.features(obs)
        adv = net.head(obs, h)  # [B, A]
        if not self.dueling:
            return adv
        return net.value(obs, h)[:, None] + adv - tf.reduce_mean(adv, axis=1, keepdims=True)

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


def dqn_loss(model: QModel, mb: dict, hp: dict, double_q: bool = True, huber_delta: float = 1.0) -> tuple[tf.Tensor, dict]:
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
    return loss, {"loss": loss, "q_mean": tf.reduce_mean(q_taken), "td_abs_mean": tf.reduce_mean(tf.abs(td)),
                  "target_mean": tf.reduce_mean(target), "td_abs": tf.abs(td)}


class DQN(Algorithm):
    name = "DQN"
    action_kinds = ("categorical",)
    action_space_hint = " (DQN needs discrete actions: for a Box action space use sac or td3)"

    def __init__(self, config: DQNConfig):
        super().__init__(config)
        c = config
        if c.replay_backend == "redis":
            from relayrl.replay.redis_replay import RedisReplay

            self.replay = RedisReplay(c.redis_address, c.redis_password_resolved(), c.replay_buffer_capacity,
                                      c.redis_key_prefix, seed=c.seed, appendonly=c.redis_appendonly)
        elif c.prioritized_replay:
            self.replay = PrioritizedReplay(c.replay_buffer_capacity, c.prioritized_replay_alpha,
                                            c.prioritized_replay_beta, seed=c.seed)
        else:
            self.replay = UniformReplay(c.replay_buffer_capacity, seed=c.seed)
        self._update_debt = 0.0  # fractional gradient steps owed by the replay ratio

    @staticmethod
    def build_learner(spec, c: DQNConfig, strategy=None):
        from relayrl.learner import Learner
        from relayrl.rollout import batch_spec

        columns = {**batch_spec(spec, "transitions"), "weights": ((), np.float32)}
        loss = functools.partial(dqn_loss, double_q=c.double_q, huber_delta=c.huber_delta)
        return Learner(spec, loss, DQN_METRICS, c.lr, c.grad_clip, {}, columns, c.train_batch_size,
                       strategy=strategy, row_output="td_abs",
                       model_fn=lambda s: QModel(s, c.dueling, c.target_network_update_freq, c.tau))

    def sampler_extras(self) -> dict[str, Any]:
        c: DQNConfig = self.config
        return {"postprocess": "transitions", "n_step": c.n_step, "explore": {"epsilon": c.exploration_initial_eps}}

    def training_step(self) -> dict[str, float]:
        c: DQNConfig = self.config
        with self.timers("sample"):
            fragments = self.workers.sample(explore={"epsilon": c.epsilon_at(self.timesteps_total)})
        steps_before = self.timesteps_total
        self.record_fragments(fragments)
        for fragment in fragments:
            self.replay.add(fragment.data)
        replay_size = len(self.replay)
        metrics: dict[str, float] = {"epsilon": c.epsilon_at(self.timesteps_total), "replay_size": float(replay_size)}
        if max(self.timesteps_total, replay_size) < c.learning_starts:  # stored experience counts when resuming
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

    def extra_state(self) -> dict[str, Any]:
        return {"update_debt": self._update_debt, "replay_rng": getattr(self.replay, "rng", None) and self.replay.rng.bit_generator.state}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        self._update_debt = state.get("update_debt", 0.0)
        if state.get("replay_rng") and hasattr(self.replay, "rng"):
            self.replay.rng.bit_generator.state = state["replay_rng"]

    def replay_state(self):
        """In-process replay goes into the checkpoint; Redis replay already outlives the process."""
        return self.replay.state() if isinstance(self.replay, UniformReplay) else None

    def load_replay_state(self, state) -> None:
        if isinstance(self.replay, UniformReplay):
            self.replay.load_state(state)

    def export_model(self):
        """Serve greedy actions on Q; value = max_a Q."""
        c: DQNConfig = self.config
        model = QModel(self.spec, c.dueling, c.target_network_update_freq, c.tau)
        model.set_weights(self.learner.get_weights())
        model.head = lambda obs: model.q(obs)
        model.value = lambda obs: tf.reduce_max(model.q(obs), axis=1)
        return model

    def _learn(self, num_updates: int) -> dict[str, float]:
        """num_updates gradient steps in one compiled call, on num_updates fresh replay minibatches."""
        c: DQNConfig = self.config
        B = c.train_batch_size
        beta = piecewise_linear([[0, c.prioritized_replay_beta], [c.prioritized_replay_beta_timesteps, 1.0]],
                                self.timesteps_total)
        kwargs = {"beta": beta} if c.prioritized_replay else {}
        batch = self.replay.sample(num_updates * B, **kwargs)
        idx = np.arange(num_updates * B).reshape(num_updates, B)
        metrics = self.learner.update(batch, idx)
        if c.prioritized_replay:
            self.replay.update_priorities(batch["indices"], self.learner.last_rows.reshape(-1))
        metrics["num_updates"] = float(num_updates)
        return metrics
