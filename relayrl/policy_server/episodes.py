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
same columns RolloutWorker produces (`rollout.batch_spec`). The unchanged algorithm (PPO's
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
import threading
import time
import uuid
from collections import OrderedDict

import gymnasium as gym
import numpy as np

from relayrl.core import ops
from relayrl.core.types import Fragment
from relayrl.models.networks import ModelSpec
from relayrl.policy_server.batcher import InferenceBatcher
from relayrl.policy_server.wire import F32_MAX, RequestError
from relayrl.sampling.rollout import batch_spec

log = logging.getLogger("relayrl.policy_server")
RETIRED_REMEMBERED = 10_000  # evicted / expired ids answered 410 with the reason (older ones: 404)


class ServerStopped(RuntimeError):
    """sample() was waiting for experience when the server was asked to stop."""


class _Episode:
    """One external episode: complete steps (with their bootstrap) and the step awaiting its outcome."""

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
        self.steps: list[
            tuple
        ] = []  # (x, action, logp, value, reward, next_value, terminated, done, version)
        self.open: list | None = None  # [x, action, logp, value, reward so far, version]
        self.busy = False  # a request of this episode is being answered
        self.ep_return, self.ep_length = 0.0, 0
        self.last_seen = time.monotonic()
        self.dropped = False  # some of its steps were unlearnable: its return is not reported

    def close_open(self, next_value: float, terminated: bool, done: bool) -> int:
        if self.open is None:
            return 0
        x, action, logp, value, reward, version = self.open
        self.steps.append((x, action, logp, value, reward, next_value, terminated, done, version))
        self.open = None
        return 1


class ExternalEpisodes:
    """Runtime for Algorithm(make_workers=...): sample() / sync_weights() / healthy() / stop()."""

    num_workers = 0

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
        self.spec, self.train_batch_size, self.gamma, self.lambda_ = spec, train_batch_size, gamma, lambda_
        self.max_episodes, self.idle_timeout_s = max_episodes, idle_timeout_s
        # |advantage| (= |value target - value|) above this could overflow float32 where the update squares
        # and sums it over a minibatch (at most train_batch_size rows; 4x for the spread around the mean, 4x
        # margin)
        self.advantage_bound = math.sqrt(F32_MAX / (16 * train_batch_size))
        self.expired = self.evicted = self.dropped_steps = 0
        self._last_sweep = time.monotonic()
        self._batch_spec = batch_spec(spec)
        self._cond = threading.Condition()
        self._episodes: OrderedDict[str, _Episode] = OrderedDict()  # least recently active first
        self._retired: OrderedDict[str, str] = OrderedDict()  # evicted / expired id -> why, oldest first
        self._ended: list[_Episode] = []  # ended (or retired) episodes whose steps were not cut yet
        self._finished: list[_Episode] = []  # ended episodes whose return is reported with the next fragment
        self._complete_steps = 0
        self._wanted = train_batch_size  # complete steps sample() waits for (fewer once some are ready)
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

    def sample(self) -> list[Fragment]:
        """Block until train_batch_size learnable complete steps exist; return them as one fragment."""
        start = time.perf_counter()
        finished: list[_Episode] = []
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

    def _cut(self) -> tuple[list[tuple[_Episode, list]], list[_Episode]]:
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

    def _checked_chunk(self, chunk: tuple[_Episode, list]) -> tuple[dict[str, np.ndarray], int] | None:
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

    # ------------------------------------------------------------------ requests (HTTP handler threads)
    def start_episode(self, episode_id: str | None = None) -> str:
        with self._cond:
            self._expire_idle()
            episode_id = episode_id or uuid.uuid4().hex
            if episode_id in self._episodes:
                raise RequestError(409, f"episode_id {episode_id!r} is already open")
            if len(self._episodes) >= self.max_episodes:
                self._evict_idlest()
            self._retired.pop(episode_id, None)
            self._episodes[episode_id] = _Episode(episode_id)
        return episode_id

    def get_action(self, episode_id: str, x: np.ndarray, reward: float | None = None):
        """The action for observation x (network input row); completes the episode's previous step."""
        with self._cond:
            ep = self._claim(episode_id, reward)
        try:
            env_action, action, logp, value, version = self.batcher.compute(x)
        except BaseException:
            ep.busy = False
            raise
        with self._cond:
            ep.busy = False
            self._complete(ep.close_open(next_value=value, terminated=False, done=False))
            ep.open = [x, action, logp, value, 0.0, version]
            ep.ep_length += 1
        return env_action

    def log_returns(self, episode_id: str, reward: float) -> None:
        with self._cond:
            self._claim(episode_id, reward).busy = False

    def end_episode(
        self, episode_id: str, x: np.ndarray, truncated: bool = False, reward: float | None = None
    ) -> None:
        """Close the episode: its last step is terminated (no bootstrap) or truncated (bootstraps from V(x))."""
        with self._cond:
            ep = self._claim(episode_id, reward)
        try:
            next_value = self.batcher.compute(x)[3] if truncated and ep.open is not None else 0.0
        except BaseException:
            ep.busy = False
            raise
        with self._cond:
            self._complete(ep.close_open(next_value=next_value, terminated=not truncated, done=True))
            del self._episodes[episode_id]
            if ep.steps:
                self._ended.append(ep)
            if ep.ep_length > 0:
                self._finished.append(ep)

    def _expire_idle(self) -> None:
        """Drop episodes whose client went silent for idle_timeout_s (a crashed simulator): they would
        hold memory and make every inference batch wait for a request that never comes."""
        now = time.monotonic()
        if now - self._last_sweep < min(1.0, self.idle_timeout_s):
            return
        self._last_sweep = now
        for episode_id, ep in list(self._episodes.items()):  # least recently active first
            if now - ep.last_seen <= self.idle_timeout_s:
                break
            if not ep.busy:
                self.expired += 1
                self._retire(
                    episode_id,
                    f"expired after {self.idle_timeout_s:g} s without a request "
                    f"(the server's episode timeout)",
                )

    def _evict_idlest(self) -> None:
        """Make room for one episode: the one idle longest goes (a flood of never-ended episodes evicts its
        own oldest first, while episodes that are being played stay)."""
        for episode_id, ep in self._episodes.items():
            if not ep.busy:
                self.evicted += 1
                self._retire(
                    episode_id,
                    f"was evicted: the server holds at most {self.max_episodes} open "
                    f"episodes and this one had been idle longest",
                )
                return
        raise RequestError(
            503,
            f"all {len(self._episodes)} open episodes (the server's limit) have a "
            f"request in progress: retry shortly",
        )

    def _retire(self, episode_id: str, why: str) -> None:
        """Close an episode the client did not end: its complete steps stay, its pending step is discarded."""
        ep = self._episodes.pop(episode_id)
        if ep.steps:
            self._ended.append(ep)
        self._retired[episode_id] = why
        if len(self._retired) > RETIRED_REMEMBERED:
            self._retired.popitem(last=False)

    def _claim(self, episode_id: str, reward: float | None) -> _Episode:
        """The open episode, marked busy (one request per episode at a time), with `reward` added."""
        ep = self._episodes.get(episode_id)
        if ep is None:
            if episode_id in self._retired:
                why = self._retired[episode_id]
                raise RequestError(410, f"episode {episode_id!r} {why}: start a new episode")
            raise RequestError(
                404, f"unknown episode_id {episode_id!r}: start it with /start_episode (or it has ended)"
            )
        if ep.busy:
            raise RequestError(
                409, f"episode {episode_id!r} already has a request in progress: send one at a time"
            )
        if reward is not None:
            if ep.open is None:
                raise RequestError(
                    409, f"episode {episode_id!r} has no action yet: a reward follows a /get_action"
                )
            step_reward = ep.open[4] + reward
            if abs(step_reward) > F32_MAX:
                raise RequestError(
                    400,
                    f"reward: the rewards since the last action add up to "
                    f"{step_reward:.4g}, beyond float32's range (|x| <= {F32_MAX:.4g})",
                )
            ep.open[4] = step_reward
            ep.ep_return += reward
        ep.busy = True
        ep.last_seen = time.monotonic()
        self._episodes.move_to_end(episode_id)
        return ep

    def _complete(self, n: int) -> None:
        self._complete_steps += n
        if self._complete_steps >= self._wanted:
            self._cond.notify_all()
