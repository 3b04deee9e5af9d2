"""External episodes as a training runtime: the policy server's "workers" are the episodes that
clients drive over HTTP.

Requests from many client threads meet in an InferenceBatcher: what arrives within a couple of
milliseconds is answered by one numpy forward pass (it stops waiting once every open episode has a
request queued). Each answered step is kept with its observation, action, behaviour log-prob and
value, like a RolloutWorker step. A step is complete when the episode's next observation arrives
(its value bootstraps the step) or the episode ends: `terminated` ends the return, `truncated`
bootstraps from V(final observation), as in gymnasium.

`sample()` is the runtime interface the Algorithm calls: it blocks until `train_batch_size` complete
steps exist, then cuts every episode's complete steps into one Fragment with GAE (`ops.gae`) and the
same columns RolloutWorker produces (`sampling.settings.batch_spec`). The unchanged algorithm (PPO's
training_step) updates its learner and calls `sync_weights`, which the batcher picks up before its
next forward pass: clients are always served the newest weights and never wait for the learner.

Limits a client cannot abuse: at most `max_episodes` are open; a new one evicts the episode that has
been idle longest, and an episode silent for `idle_timeout_s` expires. Either way its complete steps
are still learned from (each bootstraps from the value of its next observation, like a cut), the step
awaiting its outcome is discarded, and a later request for it is answered 410 saying why. Each
episode's cut steps are checked before they join a fragment: steps whose advantages are not finite in
float32, or so large that squaring them in the update would overflow, are dropped with a logged
warning naming the episode, and the episode's return is not reported.
"""

from __future__ import annotations

import logging
import math
import time

import gymnasium as gym
import numpy as np

from relayrl.core import ops
from relayrl.core.types import Fragment
from relayrl.models.networks import ModelSpec
from relayrl.policy_server.batcher import InferenceBatcher
from relayrl.policy_server.episode_requests import Episode, OpenEpisodes
from relayrl.policy_server.wire import F32_MAX
from relayrl.sampling.settings import Exploration, batch_spec

log = logging.getLogger("relayrl.policy_server")


class ServerStopped(RuntimeError):
    """sample() was waiting for experience when the server was asked to stop."""


class ExternalEpisodes(OpenEpisodes):
    """Runtime for Algorithm(workers_factory=...). Contracts (core.contracts): SyncFleet. Clients' episodes
    are not restarted or lost (an evicted one's complete steps are still learned from), and there is no
    object store: those figures are 0."""

    num_workers = 0
    restarts_total = 0
    lost_fragments = 0
    last_latencies_s: list[float]

    def __init__(
        self,
        spec: ModelSpec,
        action_space: gym.Space,
        train_batch_size: int,
        gamma: float,
        lambda_: float,
        seed: int | None = None,
        max_episodes: int = 10_000,
        max_wait_s: float = 0.002,
        idle_timeout_s: float = 600.0,
    ):
        super().__init__(max_episodes, idle_timeout_s, wanted=train_batch_size)
        self.spec, self.train_batch_size, self.gamma, self.lambda_ = spec, train_batch_size, gamma, lambda_
        # |advantage| (= |value target - value|) above this could overflow float32 where the update squares
        # and sums it over a minibatch (at most train_batch_size rows; 4x for the spread around the mean, 4x
        # margin)
        self.advantage_bound = math.sqrt(F32_MAX / (16 * train_batch_size))
        self.dropped_steps = 0
        self.last_latencies_s = []  # clients' steps are not timed: fragments carry their wait
        self._batch_spec = batch_spec(spec)
        self._ready: list[tuple[dict[str, np.ndarray], int]] = []  # checked chunks (columns, oldest version)
        self._stopped = False
        self.batcher = InferenceBatcher(spec, action_space, seed, max_wait_s, lambda: len(self._episodes))

    # ------------------------------------------------------------------ runtime interface
    def wait_ready(self) -> None:
        pass

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        self.batcher.set_weights(weights, version)

    def healthy(self) -> int:
        return len(self._episodes)

    def object_store_bytes(self) -> int:
        return 0  # no Ray object store on this path

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.batcher.stop()

    def status(self) -> dict:
        return {
            "open_episodes": len(self._episodes),
            "expired_episodes": self.expired,
            "evicted_episodes": self.evicted,
            "dropped_steps": self.dropped_steps,
            "complete_steps_waiting": self._complete_steps,
            "served_weights_version": self.batcher.policy.version,
            "inference_batches": self.batcher.batches,
            "inference_requests": self.batcher.requests,
        }

    def sample(self, explore: Exploration | None = None) -> list[Fragment]:
        """Block until train_batch_size learnable complete steps exist; return them as one fragment. The
        served policy's exploration is the algorithm's own: a per-iteration `explore` is refused."""
        if explore is not None:
            raise ValueError(
                "the policy server serves the algorithm's own exploration: sample(explore=...) is not "
                "supported"
            )
        start = time.perf_counter()
        finished: list[Episode] = []
        while sum(len(columns["obs"]) for columns, _ in self._ready) < self.train_batch_size:
            chunks, newly_finished = self._cut()
            finished += newly_finished
            self._ready += [chunk for chunk in map(self._checked_chunk, chunks) if chunk is not None]
        ready, self._ready = self._ready, []
        data = {k: np.concatenate([columns[k] for columns, _ in ready]) for k in self._batch_spec}
        reported = [ep for ep in finished if not ep.dropped and abs(ep.ep_return) <= F32_MAX]
        return [
            Fragment(
                data=data,
                version=min(version for _, version in ready),
                worker_index=0,
                env_steps=len(data["obs"]),
                episode_returns=np.asarray([ep.ep_return for ep in reported], np.float32),
                episode_lengths=np.asarray([ep.ep_length for ep in reported], np.int64),
                sample_time_s=time.perf_counter() - start,
            )
        ]

    def _cut(self) -> tuple[list[tuple[Episode, list]], list[Episode]]:
        """Wait for the missing complete steps, then take every episode's complete steps."""
        with self._cond:
            self._wanted = self.train_batch_size - sum(len(columns["obs"]) for columns, _ in self._ready)
            while self._complete_steps < self._wanted:
                if self._stopped:
                    raise ServerStopped("the policy server is stopping")
                self._cond.wait(timeout=0.5)
            chunks = [(ep, ep.steps) for ep in [*self._episodes.values(), *self._ended] if ep.steps]
            for ep, _ in chunks:
                ep.steps = []
            self._ended, self._complete_steps = [], 0
            finished, self._finished = self._finished, []
        return chunks, finished

    def _checked_chunk(self, chunk: tuple[Episode, list]) -> tuple[dict[str, np.ndarray], int] | None:
        """GAE over one episode's consecutive steps and the batch columns; None (logged) if the update could
        not learn from them without overflowing float32."""
        ep, steps = chunk
        x, action, logp, value, reward, next_value, terminated, done, version = zip(*steps)
        col = lambda seq, dtype: np.asarray(seq, dtype).reshape(-1, 1)  # noqa: E731 - [T, 1] for ops.gae
        values = col(value, np.float32)
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is what the check below looks for
            adv = ops.gae(
                col(reward, np.float32),
                values,
                col(next_value, np.float32),
                col(terminated, bool),
                col(done, bool),
                self.gamma,
                self.lambda_,
            )[:, 0]
            targets = adv + values[:, 0]
        finite = np.isfinite(adv).all() and np.isfinite(targets).all()
        largest = float(np.max(np.abs(adv))) if finite else math.inf
        if largest > self.advantage_bound:
            ep.dropped = True
            self.dropped_steps += len(steps)
            log.warning(
                "policy server: dropping %d steps of episode %r: their advantages reach %.3g, "
                "beyond +-%.3g (rewards too large: the update would overflow float32)",
                len(steps),
                ep.episode_id,
                largest,
                self.advantage_bound,
            )
            return None
        columns = {
            "obs": np.stack(x),
            "actions": np.stack(action),
            "logp": np.asarray(logp),
            "vf_preds": values[:, 0],
            "advantages": adv,
            "value_targets": targets,
        }
        return {k: v.astype(self._batch_spec[k][1], copy=False) for k, v in columns.items()}, min(version)
