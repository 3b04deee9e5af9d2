"""IMPALA's Ray wiring: continuously sampling workers behind a bounded learner queue, their weights
pulled through a WeightClient from the newest version the driver names (or a ParameterServer actor).

The gradient fleets are in gradient_fleets.py, the synchronous one in ray_workers.py.
"""

from __future__ import annotations

import collections
import time

import numpy as np
import ray

from relayrl.core.types import Fragment
from relayrl.runtime.actor_fleet import ActorFleet
from relayrl.runtime.cluster import init_ray, remote_class
from relayrl.runtime.params import ParameterServer, WeightClient
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import SamplerSettings


class RayAsyncWorker(RolloutWorker):
    """A sampling worker whose weights come through a WeightClient: from the newest version the driver
    names on each call (no extra round trip: only a zero-copy object-store read when it moved), or, in
    background mode, by polling the ParameterServer actor from a thread."""

    def __init__(self, settings: SamplerSettings, server, pull: dict, worker_index: int):
        super().__init__(settings, worker_index)
        self._server, self._hint = server, None
        fetch = self._poll_server if pull.get("background") else self._from_hint
        self.client = WeightClient(fetch, self.set_weights, **pull)

    def _from_hint(self, known: int):
        if self._hint is None or self._hint[1] == known:
            return None if self._hint is not None else self._poll_server(known)
        return ray.get(self._hint[0][0]), self._hint[1]

    def _poll_server(self, known: int):
        got = ray.get(self._server.latest.remote(known))
        return (
            None if got is None else (ray.get(got[0][0]), got[1])
        )  # the weights arrive as a boxed ObjectRef

    def sample_next(self, weights_box: list, version: int) -> Fragment:
        self._hint = (weights_box, version)
        self.client.before_fragment()
        return self.sample()

    def ping(self) -> str:
        """The address of this worker's node (answering at all says the actor is up)."""
        return ray.util.get_node_ip_address()

    def stop(self) -> None:
        self.client.stop()
        super().stop()


class LearnerQueue(ActorFleet):
    """IMPALA's actors and learner queue: each worker has `in_flight` sample calls queued, so it samples
    back to back while the learner updates; finished fragments enter a bounded queue. When the queue is
    full, 'drop' discards the oldest fragment (and counts it), 'block' stops re-arming the workers that
    delivered until the learner takes from the queue. Contracts (core.contracts): QueueFleet,
    RestartingFleet."""

    def __init__(
        self,
        settings: SamplerSettings,
        num_workers: int,
        num_cpus_per_worker: float,
        address: str | None,
        queue_size: int,
        when_full: str,
        pull: dict,
        in_flight: int = 2,
    ):
        init_ray(address)
        server = remote_class(ParameterServer).options(num_cpus=0).remote()
        super().__init__(RayAsyncWorker, (settings, server, pull), num_workers, num_cpus_per_worker, address)
        self.server, self.extra_actors = server, [server]
        self.queue_size, self.when_full, self.in_flight = queue_size, when_full, in_flight
        self.queue: collections.deque = collections.deque()
        self._parked: list = []
        self.dropped: list[Fragment] = []  # columns freed, stats kept: their episodes still count
        self._weights_sent = False
        self._latest: tuple = ([None], -1)  # (boxed ref, version) named on each sample call

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        # One ray.put per version, named on the next sample calls and kept by the server for background pulls.
        box = [ray.put(weights)]
        self._latest = (box, version)
        done = self.server.set_weights.remote(box, version)
        if not self._weights_sent:  # workers must find weights on the server before their first fragment
            ray.get(done)
            self._weights_sent = True

    def take(self, n: int) -> list[Fragment]:
        """The n oldest queued fragments, waiting for workers only if fewer are queued."""
        if not self._armed:
            self._armed, self._window_start = True, time.perf_counter()
            for actor in self.actors:
                for _ in range(self.in_flight):
                    self._queue(actor.sample_next.remote(*self._latest), actor)
        self._collect(timeout=0)
        while len(self.queue) < n:
            self._collect(timeout=self._wait_timeout())
        out = [self.queue.popleft() for _ in range(n)]
        parked, self._parked = self._parked, []
        for actor in parked:
            if actor in self.actors:
                self._queue(actor.sample_next.remote(*self._latest), actor)
        return out

    def _collect(self, timeout: float | None) -> None:
        if not self._pending:
            return
        ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=timeout)
        if ready:  # sweep everything else already finished too
            ready = set(ready) | set(
                ray.wait(list(self._pending), num_returns=len(self._pending), timeout=0)[0]
            )
        for ref in ready:
            if ref not in self._pending:  # its worker was replaced meanwhile
                continue
            actor = self._pending.pop(ref)
            fragment: Fragment | None = self._result_or_replace(ref, actor)
            if fragment is None:  # its worker failed and was replaced (the new one is already sampling)
                continue
            self._busy_s += fragment.sample_time_s
            full = len(self.queue) >= self.queue_size
            if full and self.when_full == "drop":
                old = self.queue.popleft()
                old.data = {}
                self.dropped.append(old)
            self.queue.append(fragment)
            if full and self.when_full == "block":
                self._parked.append(actor)
            else:
                self._queue(actor.sample_next.remote(*self._latest), actor)
        self._replace_hung()

    def on_restart(self, actor) -> None:
        """The new worker reads the newest weights named on its first call."""
        for _ in range(self.in_flight):
            self._queue(actor.sample_next.remote(*self._latest), actor)

    def pop_dropped(self) -> list[Fragment]:
        """Fragments dropped from a full queue since the last call (columns freed; episode stats kept)."""
        out, self.dropped = self.dropped, []
        return out
