"""ActorFleet: what the gradient and asynchronous Ray fleets share (gradient_fleets.py, ray_async.py):
actors created from small constructor arguments, in-flight calls tracked per actor, a failed or hung
worker replaced within the restart budget."""

from __future__ import annotations

import time

import ray

from relayrl.core.saved_state import cause
from relayrl.runtime.cluster import ObjectStoreGauge, init_ray, kill_quietly, remote_class
from relayrl.runtime.restarts import RestartBudget
from relayrl.sampling.settings import EnvError


class ActorFleet(RestartBudget):
    """Shared plumbing: start Ray, create actors, wait for them, replace failed ones, tear down.

    The core.contracts.Fleet members every subclass has; its sampling call is its own protocol's."""

    # A failed worker's in-flight calls die with it: the asynchronous fleets do not count them (a dead
    # worker's next fragment was never delivered, and the synchronous ones resample theirs).
    lost_fragments = 0
    last_latencies_s: list[float]

    def __init__(
        self, actor_cls, args: tuple, num_workers: int, num_cpus_per_worker: float, address: str | None
    ):
        self._owns_ray = init_ray(address)
        remote_cls = remote_class(actor_cls)
        # small constructor arguments only, so a failed worker can be re-created at any time
        self._make = lambda i: remote_cls.options(num_cpus=num_cpus_per_worker).remote(*args, i + 1)
        self.actors = [self._make(i) for i in range(num_workers)]
        self.num_workers = num_workers
        RestartBudget.__init__(self, num_workers)
        self._busy_s, self._window_start = 0.0, time.perf_counter()  # worker time spent sampling / computing
        self._armed = False
        self._pending: dict = {}  # in-flight call ref -> its actor
        self._progress: dict = {}  # actor -> when it last returned a result or was given work while idle
        self.extra_actors: list = []  # actors stopped with the fleet that are not workers (a server)
        self.last_latencies_s = []  # workers deliver asynchronously: no sampling round to time
        self._store_bytes = ObjectStoreGauge()

    def idle_fraction(self) -> float:
        """Share of the workers' wall time since they started sampling not spent sampling (or computing
        gradients): waiting for the driver, for weights, or for a CPU. Cumulative, so it is stable."""
        elapsed = (time.perf_counter() - self._window_start) * self.num_workers
        return float(max(0.0, 1.0 - self._busy_s / elapsed)) if elapsed > 0 else float("nan")

    def _queue(self, ref, actor) -> None:
        """Record an in-flight call; an actor that had none starts its hang clock now."""
        if actor not in self._pending.values():
            self._progress[actor] = time.perf_counter()
        self._pending[ref] = actor

    def _result_or_replace(self, ref, actor):
        """ray.get(ref); if its worker failed (died, or its env raised), replace that worker (restart
        budget and backoff) and return None. The in-flight calls of an actor already replaced return None
        too: a dead worker is restarted once, however many of its calls were queued."""
        try:
            result = ray.get(ref)
        except (ray.exceptions.RayError, EnvError) as exc:
            if actor in self.actors:
                self._replace(actor, cause(exc))
            return None
        self._progress[actor] = time.perf_counter()
        if actor in self.actors:
            self.succeeded(self.actors.index(actor))
        return result

    def _replace(self, actor, error: BaseException) -> None:
        """Kill a failed worker, forget its in-flight calls, charge the budget (backoff) and re-create it."""
        i = self.actors.index(actor)
        for ref in [r for r, a in self._pending.items() if a is actor]:  # they can only fail now
            del self._pending[ref]
        self._progress.pop(actor, None)
        kill_quietly(actor)
        self.charge(i, error)
        self.actors[i] = self.replacement(self._make, i)  # up and answering: its hang clock starts now
        if self._armed:  # a worker lost while the fleet starts gets its work with the others' first calls
            self.on_restart(self.actors[i])

    def _wait_timeout(self) -> float | None:
        """How long a ray.wait on the in-flight calls may block before the next hang check is due."""
        if self.timeout_s is None:
            return None
        busy = set(self._pending.values())
        if not busy:
            return self.timeout_s
        due = min(self._progress[a] for a in busy) + self.timeout_s - time.perf_counter()
        return max(0.05, due + 0.01)

    def _replace_hung(self) -> None:
        """Restart every worker with calls in flight that has returned nothing for sample_timeout_s. Its
        calls run back to back, so that is how long its current call has been running (or waiting for a
        CPU). The fragment it owed is not waited for: the other workers' fragments keep training going."""
        if self.timeout_s is None:
            return
        now = time.perf_counter()
        for actor in set(self._pending.values()):
            if now - self._progress[actor] > self.timeout_s and actor in self.actors:
                self._replace(actor, TimeoutError(f"no result within sample_timeout_s={self.timeout_s}"))

    def restart(self, i: int, error: BaseException) -> None:
        self._replace(self.actors[i], error)

    def on_restart(self, actor) -> None:
        """Bring a re-created worker up to date and give it work (fleet-specific)."""

    def healthy(self) -> int:
        return len(self.actors)

    def object_store_bytes(self) -> int:
        return self._store_bytes()

    def stop(self) -> None:
        for actor in self.actors + self.extra_actors:
            ray.kill(actor)
        self.actors = []
        if self._owns_ray:
            ray.shutdown()
