"""Ape-X DQN (Horgan et al. 2018, arXiv:1803.00933): many workers, each acting with its own epsilon
(eps_i = eps^(1 + alpha * i / (N - 1)), reached after a linear warm-up from exploration_initial_eps over
exploration_timesteps env steps), computing initial priorities and writing straight into sharded
prioritised replay; a learner that never waits for workers (it only samples replay), sends priorities back
asynchronously and publishes weights that workers pull every K fragments. Same loss as DQN."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl.algorithms.dqn import DQN, DQNConfig
from relayrl.core import checks as C
from relayrl.core.knobs import knob
from relayrl.core.ops import piecewise_linear
from relayrl.sampling.settings import Exploration, Sampling


@dataclass
class ApeXConfig(DQNConfig):
    algo_name = "apex"

    num_rollout_workers: int = knob(
        2, "rollouts", C.integer(1), "Ray rollout worker actors (Ape-X needs at least one)"
    )
    prioritized_replay: bool = knob(True, "training", C.boolean(), "proportional prioritised replay")
    apex_epsilon: float = knob(0.4, "training", C.number(0, 1), "base epsilon of the per-worker schedule")
    apex_alpha: float = knob(7.0, "training", C.number(0), "spread of the per-worker epsilons")
    exploration_final_eps: float = knob(
        0.02,
        "training",
        C.number(0, 1),
        "unused and only 0.02 allowed: each worker's warm-up ends at its own eps_i",
    )
    num_replay_shards: int = knob(
        2, "training", C.integer(1), "replay shard actors (at most num_rollout_workers: each feeds one)"
    )
    worker_cache_rows: int = knob(
        500, "training", C.integer(1), "rows a worker caches before uploading to its shard"
    )
    weights_pull_every: int = knob(
        4, "training", C.integer(1), "fragments a worker samples between weight pulls"
    )
    updates_per_iteration: int = knob(
        32, "training", C.integer(1), "gradient steps per learner call (one train() iteration)"
    )
    replay_snapshot_every: int = knob(
        50,
        "training",
        C.integer(1),
        "learner iterations between snapshots of the replay shards (a dead shard restarts from its snapshot)",
    )

    def epsilon_spread(self) -> Exploration:
        """Every worker's own epsilon, eps_i = apex_epsilon^(1 + apex_alpha * i / (N - 1)): see for_worker."""
        return Exploration(
            epsilon=self.apex_epsilon, epsilon_alpha=self.apex_alpha, num_workers=self.num_rollout_workers
        )

    def worker_epsilon(self, i: int, timesteps: int) -> float:
        """Worker i's (0-based) epsilon after `timesteps` env steps: exploration_initial_eps falling linearly
        to the worker's own eps_i over the first exploration_timesteps. Without the warm-up the first rows
        came from near-greedy untrained networks, and tuned CartPole runs stalled near 200 for 100k+ steps."""
        return self.epsilon_at(timesteps, final=self.epsilon_spread().for_worker(i + 1).epsilon)

    def validate(self) -> None:
        super().validate()
        default_final = ApeXConfig.exploration_final_eps
        if self.exploration_final_eps != default_final:  # each worker ends its warm-up at its own eps_i
            raise ValueError(
                f"ApeXConfig.exploration_final_eps = {self.exploration_final_eps!r} is invalid: allowed: "
                f"{default_final} (unused: Ape-X worker i ends its warm-up at its own epsilon, "
                f"apex_epsilon ** (1 + apex_alpha * i / (N - 1)))"
            )
        if self.replay_backend != "memory":
            raise ValueError(
                f"ApeXConfig.replay_backend = {self.replay_backend!r} is invalid: allowed: 'memory' "
                f"(Ape-X keeps its replay in sharded Ray actors)"
            )
        if self.num_rollout_workers < 1:
            raise ValueError(
                "ApeXConfig.num_rollout_workers = 0 is invalid: allowed: an integer >= 1 "
                "(Ape-X workers are Ray actors)"
            )
        if self.num_replay_shards > self.num_rollout_workers:  # worker i feeds shard i % shards only
            raise ValueError(
                f"ApeXConfig.num_replay_shards = {self.num_replay_shards} is invalid: allowed: an integer "
                f"from 1 to num_rollout_workers ({self.num_rollout_workers}): each shard is fed by its own "
                f"workers, and the learner waits for every shard to hold rows"
            )


class ApeX(DQN):
    config_class = ApeXConfig
    name = "ApeX"

    def __init__(self, config: ApeXConfig):
        super().__init__(config)
        from relayrl.runtime.apex_workers import AsyncSampling
        from relayrl.runtime.replay_actors import ShardedReplay

        c = config
        self.replay = ShardedReplay(
            c.num_replay_shards,
            c.replay_buffer_capacity,
            c.prioritized_replay,
            c.prioritized_replay_alpha,
            c.seed,
        )
        # each worker writes to one shard under its own source id, keeping unconfirmed uploads up to that
        # shard's capacity (older rows would be overwritten there anyway)
        self._attach_args = lambda i: (
            c.worker_cache_rows,
            c.weights_pull_every,
            c.dueling,
            i,
            max(1, c.replay_buffer_capacity // c.num_replay_shards),
        )
        self._attach(range(len(self.workers.actors)))
        self.replay.on_restore = self._reattach
        self.sampling = AsyncSampling(
            self.workers.actors,
            restart=self._restart_worker,
            timeout_s=c.sample_timeout_s,
            explore_for=lambda i: Exploration(epsilon=c.worker_epsilon(i, self.timesteps_total)),
        )
        self.sampling.set_weights_ref(self.workers.weights_ref, self.weights_version)
        self._updates_done = 0

    def _attach(self, indices) -> None:
        from relayrl.runtime.apex_workers import attach_workers

        shards = self.replay.shards
        attach_workers(
            [(self.workers.actors[i], shards[i % len(shards)], self._attach_args(i)) for i in indices]
        )

    def _reattach(self, shard_index: int, shard) -> None:
        """A shard was re-created from its snapshot: the workers that fed it upload to the new one."""
        n = len(self.replay.shards)
        self._attach([i for i in range(len(self.workers.actors)) if i % n == shard_index])

    def _restart_worker(self, i: int, error: BaseException) -> None:
        """A failed or hung worker: re-create it (the fleet's restart budget and backoff) and attach it to
        its shard; it pulls the current weights on its first call. Rows it had uploaded stay in replay;
        the partial block in its cache died with it. Its shard may have died with it (one node held both):
        the shard is restored first, which attaches the workers that feed it."""
        self.workers.restart(i, error)
        if not self.replay.ensure_alive(i % len(self.replay.shards)):
            self._attach([i])

    def worker_class(self):
        from relayrl.runtime.apex_workers import ApexRolloutWorker

        return ApexRolloutWorker

    def worker_sampling(self) -> Sampling:
        c: ApeXConfig = self.config
        # each worker starts at its own eps_i; its first call sets the warm-up's epsilon (worker_epsilon)
        return Sampling("transitions", n_step=c.n_step, explore=c.epsilon_spread())

    def publish_weights(self) -> None:
        super().publish_weights()
        self.sampling.set_weights_ref(self.workers.weights_ref, self.weights_version)

    def training_step(self) -> dict[str, float]:
        c: ApeXConfig = self.config
        learning = self.timesteps_total >= c.learning_starts and self.replay.all_shards_filled(
            c.train_batch_size
        )
        # On few cores sampling starves the learner: workers more than one learner call ahead of the replay
        # ratio are left idle until it catches up. The learner itself never waits for workers.
        ahead = (
            learning and self.timesteps_total * c.replay_ratio > self._updates_done + c.updates_per_iteration
        )
        with self.timers("wait" if not learning else "sample"):
            # before learning starts there is nothing else to do than wait for data; after, never block
            finished = self.sampling.harvest(block=not learning, relaunch=not ahead)
        self.record_fragments(finished)
        metrics: dict[str, float] = {"fragments_harvested": float(len(finished))}
        if not learning:
            return metrics
        with self.timers("learn"):
            self.apply_lr_schedule()
            B, K = c.train_batch_size, c.updates_per_iteration
            beta = piecewise_linear(
                [[0, c.prioritized_replay_beta], [c.prioritized_replay_beta_timesteps, 1.0]],
                self.timesteps_total,
            )
            batch = self.replay.sample(K * B, beta if c.prioritized_replay else None)
            metrics.update(self.learner.update(batch, np.arange(K * B).reshape(K, B)))
            self._updates_done += K
            if (self._updates_done // K) % c.replay_snapshot_every == 0:
                self._snapshot_replay()
            if c.prioritized_replay:
                self.replay.update_priorities(
                    batch["shard"], batch["indices"], self.learner.last_rows.reshape(-1)
                )
        with self.timers("sync"):
            self.publish_weights()
        metrics["replay_shard_restarts"] = float(self.replay.restarts)
        return metrics

    def _snapshot_replay(self) -> None:
        """Snapshot every shard and tell each worker which of its uploads the snapshot now holds."""
        confirmed = self.replay.snapshot()
        for i, actor in enumerate(self.workers.actors):  # queued behind the worker's sampling call
            if i in confirmed:
                actor.confirm_replay.remote(confirmed[i])

    def extra_state(self) -> dict[str, Any]:
        return {**super().extra_state(), "updates_done": self._updates_done}

    def set_extra_state(self, state: dict[str, Any]) -> None:
        from relayrl.core.saved_state import CheckpointError, count_problem

        problem = count_problem(state.get("updates_done", 0))
        if problem is not None:
            raise CheckpointError(f"state.json: extra.updates_done {problem}")
        super().set_extra_state(state)
        self._updates_done = int(state.get("updates_done", 0))

    def replay_state(self) -> dict[str, np.ndarray]:
        """A fresh snapshot of every shard, for replay.npz (uploads still in flight are not in it)."""
        self._snapshot_replay()
        return {f"shard{i}/{k}": v for i, snap in enumerate(self.replay.snapshots) for k, v in snap.items()}

    def load_replay_state(self, state: dict[str, np.ndarray]) -> None:
        """Each shard's part of replay.npz, checked against the shard's capacity and columns, then loaded."""
        from relayrl.algorithms.state import check_replay_arrays
        from relayrl.core.saved_state import CheckpointError, shown

        c: ApeXConfig = self.config
        shards = len(self.replay.shards)
        names = {f"shard{i}" for i in range(shards)}
        stray = sorted(k for k in state if k.split("/", 1)[0] not in names or "/" not in k)
        if stray:
            raise CheckpointError(
                f"replay.npz: key {shown(stray[0])}: allowed: shard0/... to shard{shards - 1}/..."
            )
        capacity, parts = max(1, c.replay_buffer_capacity // shards), []
        for i in range(shards):
            # upload sequence numbers belong to the workers of the process that saved: new workers count anew
            part = {
                k.split("/", 1)[1]: v
                for k, v in state.items()
                if k.startswith(f"shard{i}/") and k != f"shard{i}/applied"
            }
            if part:
                check_replay_arrays(part, capacity, self.spec, c.prioritized_replay, f"replay.npz: shard{i}")
            parts.append(part)
        self.replay.load(parts)

    def stop(self) -> None:
        self.replay.stop()
        super().stop()
