"""Ape-X's workers: each samples with its own epsilon, computes initial priorities and writes its
transitions straight into its replay shard (replay_actors.py); the driver only harvests their statistics,
never waiting for them (AsyncSampling)."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import ray

from relayrl.core.saved_state import cause
from relayrl.runtime.ray_workers import RayRolloutWorker
from relayrl.runtime.replay_actors import ReplayCache
from relayrl.sampling import frame_rows
from relayrl.sampling.settings import EnvError, Exploration


def q_values(net, obs: np.ndarray, dueling: bool) -> np.ndarray:
    """Q(s, .) from a worker's numpy Q-network (dueling: V + A - mean A)."""
    adv = net.dist_inputs(obs)
    if not dueling:
        return adv
    return net.value(obs)[:, None] + adv - adv.mean(axis=1, keepdims=True)


def initial_priorities(net, data: dict, dueling: bool) -> np.ndarray:
    """|n-step TD error| under the worker's own weights, so new rows enter replay with a meaningful
    priority (Ape-X) instead of the buffer's running maximum. Compact rows (each frame once) are expanded to
    whole stacks for this pass only."""
    data = frame_rows.expand(data)
    q = q_values(net, data["obs"], dueling)
    q_taken = q[np.arange(len(q)), data["actions"].astype(np.int64)]
    target = data["rewards"] + data["discounts"] * q_values(net, data["next_obs"], dueling).max(axis=1)
    return np.abs(target - q_taken)


class ReplayFeedingWorker:
    """Mixed into RayRolloutWorker: samples, computes initial priorities and writes its transitions straight
    into its replay shard through a local cache; only episode statistics go back to the driver. New weights
    are pulled at most every `pull_every` fragments."""

    cache: ReplayCache | None = None  # set by the first attach_replay

    def attach_replay(
        self,
        shard,
        flush_rows: int,
        pull_every: int,
        dueling: bool,
        source: int = -1,
        keep_rows: int | None = None,
    ) -> None:
        if self.cache is not None:  # a restored shard: keep the cache, resend what it lacks
            self.cache.retarget(shard)
            return
        self.cache = ReplayCache(shard, flush_rows, source, keep_rows)
        self.pull_every, self.dueling = pull_every, dueling
        self._since_pull = pull_every  # the first call pulls

    def confirm_replay(self, seq: int) -> None:
        """The driver's shard snapshot holds this worker's uploads up to `seq`."""
        self.cache.confirm(seq)

    def flush_replay(self) -> dict:
        """Upload the partial block, wait for every upload; counts of rows uploaded and dropped."""
        return {"uploaded": self.cache.wait(), "dropped": self.cache.rows_dropped}

    def sample_into_replay(self, weights_box: list, version: int, explore: Exploration | None = None):
        if explore is not None:  # this worker's epsilon now: the driver follows Ape-X's warm-up
            self.set_explore(explore)
        if version != self.policy.version and self._since_pull >= self.pull_every:
            self.set_weights(ray.get(weights_box[0]), version)
            self._since_pull = 0
        fragment = self.sample()
        self._since_pull += 1
        self.cache.add(fragment.data, initial_priorities(self.policy.net, fragment.data, self.dueling))
        fragment.data = {}  # the rows went to replay; the driver only needs the statistics
        return fragment


class AsyncSampling:
    """Keeps one `sample_into_replay` call in flight per Ape-X worker and relaunches each as soon as it
    returns, so workers never wait for the learner; `harvest()` collects what finished, without blocking
    unless asked.

    A worker whose call fails (process killed, env raised) or runs past `timeout_s` is handed to
    `restart(index, error)`, which replaces `actors[index]` (RayWorkers' budget and backoff) and re-attaches
    it; the new worker is relaunched at once. Without a `restart` callback failures propagate.
    `explore_for(index)`, when given, is the exploration each call of that worker samples with."""

    def __init__(
        self,
        actors: list,
        restart=None,
        timeout_s: float | None = None,
        explore_for: Callable[[int], Exploration] | None = None,
    ):
        self.actors = actors  # the fleet's own list: restarts replace its entries
        self.restart, self.timeout_s, self.explore_for = restart, timeout_s, explore_for
        self.in_flight: dict = {}  # ref -> (worker index, launch time)
        self.weights_box: list = [None]
        self.version = -1

    def set_weights_ref(self, weights_ref, version: int) -> None:
        self.weights_box, self.version = [weights_ref], version

    def _launch(self, i: int) -> None:
        explore = None if self.explore_for is None else self.explore_for(i)
        ref = self.actors[i].sample_into_replay.remote(self.weights_box, self.version, explore)
        self.in_flight[ref] = (i, time.monotonic())

    def _failed(self, i: int, error: BaseException) -> None:
        if self.restart is None:
            raise error
        self.restart(i, cause(error))

    def harvest(self, block: bool = False, relaunch: bool = True) -> list:
        """Finished fragments' statistics. relaunch=False leaves finished workers idle (the learner is
        behind its replay ratio and catches up); the learner itself never waits unless `block`."""
        if relaunch:
            busy = {i for i, _ in self.in_flight.values()}
            for i in range(len(self.actors)):
                if i not in busy:
                    self._launch(i)
        refs = list(self.in_flight)
        if not refs:
            return []
        wait_s = (None if self.timeout_s is None else self.timeout_s) if block else 0
        ready, _ = ray.wait(refs, num_returns=1 if block else len(refs), timeout=wait_s)
        results = []
        for ref in ready:
            i, _ = self.in_flight.pop(ref)
            try:
                results.append(ray.get(ref))
            except (ray.exceptions.RayError, EnvError) as exc:
                self._failed(i, exc)
                self._launch(i)  # the restarted worker samples again at once
                continue
            if relaunch:
                self._launch(i)
        if self.timeout_s is not None:
            now = time.monotonic()
            for ref, (i, launched) in list(self.in_flight.items()):
                if now - launched > self.timeout_s:
                    del self.in_flight[ref]
                    self._failed(i, TimeoutError(f"no fragment within sample_timeout_s={self.timeout_s}"))
                    self._launch(i)
        return results


def attach_workers(attachments: list[tuple]) -> list[int]:
    """(worker actor, its replay shard, attach_replay's other arguments) per worker: each worker's cache then
    uploads to that shard. Waits until every worker has taken its shard; returns the positions of the workers
    that had died (a node lost with a shard and its workers): their owner restarts them when their sampling
    call fails, and re-attaches them then."""
    refs = [actor.attach_replay.remote(shard, *args) for actor, shard, args in attachments]
    dead = []
    for k, ref in enumerate(refs):
        try:
            ray.get(ref)
        except ray.exceptions.RayActorError:
            dead.append(k)
    return dead


class ApexRolloutWorker(ReplayFeedingWorker, RayRolloutWorker):
    """A rollout worker that feeds its replay shard directly (Ape-X)."""
