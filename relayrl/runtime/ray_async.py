"""Ray wiring of the gradient-based and asynchronous paths: the ParameterServer actor, A3C and
gradient-aggregation workers, and IMPALA's continuously sampling workers behind a bounded learner queue.

Part of the runtime package, which stays the only place importing Ray (ray_workers.py holds the
synchronous fleet and `init_ray`).
"""

from __future__ import annotations

import collections
import time

import numpy as np
import ray

from relayrl.core.types import Fragment
from relayrl.runtime.params import ParameterServer, WeightClient
from relayrl.runtime.ray_workers import RestartBudget, init_ray, kill_quietly
from relayrl.sampling.grad_worker import (
    GradientWorker,
    LossRecipe,
    make_gradient_learner,
    weighted_mean_gradients,
)
from relayrl.sampling.rollout import EnvError, RolloutWorker, SamplerSettings


class _Fleet(RestartBudget):
    """Shared plumbing: start Ray, create actors, wait for them, replace failed ones, tear down."""

    def __init__(
        self, actor_cls, args: tuple, num_workers: int, num_cpus_per_worker: float, address: str | None
    ):
        self._owns_ray = init_ray(address)
        remote_cls = ray.remote(actor_cls)
        # small constructor arguments only, so a failed worker can be re-created at any time
        self._make = lambda i: remote_cls.options(num_cpus=num_cpus_per_worker).remote(*args, i + 1)
        self.actors = [self._make(i) for i in range(num_workers)]
        self.num_workers = num_workers
        RestartBudget.__init__(self, num_workers)
        self._busy_s, self._window_start = 0.0, time.perf_counter()  # worker time spent sampling / computing
        self._armed = False
        self._pending: dict = {}  # in-flight call ref -> its actor
        self._progress: dict = {}  # actor -> when it last returned a result or was given work while idle

    def idle_fraction(self) -> float:
        """Share of the workers' wall time since they started sampling not spent sampling (or computing
        gradients): waiting for the driver, for weights, or for a CPU. Cumulative, so it is stable."""
        elapsed = (time.perf_counter() - self._window_start) * self.num_workers
        return float(max(0.0, 1.0 - self._busy_s / elapsed)) if elapsed > 0 else float("nan")

    def wait_ready(self) -> None:
        ray.get([a.ping.remote() for a in self.actors])

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
                self._replace(actor, getattr(exc, "cause", None) or exc)
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

    def _restart(self, i: int, error: BaseException) -> None:
        self._replace(self.actors[i], error)

    def on_restart(self, actor) -> None:
        """Bring a re-created worker up to date and give it work (fleet-specific)."""

    def healthy(self) -> int:
        return len(self.actors)

    def stop(self) -> None:
        for actor in self.actors + getattr(self, "extra_actors", []):
            ray.kill(actor)
        self.actors = []
        if self._owns_ray:
            ray.shutdown()


# ---------------------------------------------------------------------------------- gradient aggregation
class RayGradientWorker(GradientWorker):
    def gradients_with(self, weights_box: list, version: int):
        if version != self.policy.version:
            self.set_weights(ray.get(weights_box[0]), version)
        return self.sample_gradients()

    def sample_and_keep_with(self, weights_box: list, version: int, num_rows: int | None = None):
        if version != self.policy.version:
            self.set_weights(ray.get(weights_box[0]), version)
        return self.sample_and_keep(num_rows)

    def minibatch_gradients_with(self, weights_box: list, version: int, rows: np.ndarray):
        if version != self.policy.version:
            self.set_weights(ray.get(weights_box[0]), version)
        return self.minibatch_gradients(rows)

    def resample_minibatch_gradients_with(
        self,
        sampled_box: list,
        sampled_version: int,
        num_rows: int,
        weights_box: list,
        version: int,
        rows: np.ndarray,
    ):
        """A successor's first call in the middle of PPO's SGD steps: the fragment its predecessor kept died
        with it, so sample a new one with the weights the iteration sampled with (keeping exactly
        `num_rows` rows, the count the driver's minibatch plan was made for), then return it (stats only)
        with the gradients on `rows` at the current weights."""
        fragment, _ = self.sample_and_keep_with(sampled_box, sampled_version, num_rows)
        return fragment, *self.minibatch_gradients_with(weights_box, version, rows)

    def a3c_step(self, server) -> tuple[Fragment, dict]:
        """Sample, compute gradients at the local weights and send them without waiting: the server's answer
        (its newest weights) is installed before the next gradient is sent, by which time it has normally
        long arrived, so the worker does not wait for the server (one more version of staleness)."""
        fragment, grads, metrics = self.sample_gradients()
        version = self.policy.version  # the weights these gradients were computed with
        reply = getattr(self, "_reply", None)
        if reply is not None:
            start = time.perf_counter()
            self.set_weights(*ray.get(reply))
            metrics["wait_server_s"] = time.perf_counter() - start
        self._reply = server.apply_gradients.remote(grads, version)
        return fragment, metrics

    def ping(self) -> int:
        return self.worker_index


class GradientWorkers(_Fleet):
    """Synchronous gradient aggregation: every worker returns the gradient of its own fragment; the learner
    applies their row-weighted mean (equal to shipping the samples when there is one worker).

    Fault tolerance as in the sample-shipping fleet: a worker that dies, raises or misses sample_timeout_s is
    re-created (budget, backoff) and its call is made again on the successor with the same weights version,
    so no fragment is lost. In the middle of PPO's SGD steps the successor first resamples the fragment its
    predecessor kept (with the weights the iteration sampled with); `pop_resampled` hands those fragments'
    stats to the algorithm, since their env steps and episodes happened."""

    def __init__(
        self,
        settings: SamplerSettings,
        recipe: LossRecipe,
        num_workers: int,
        num_cpus_per_worker: float,
        address: str | None,
    ):
        super().__init__(RayGradientWorker, (settings, recipe), num_workers, num_cpus_per_worker, address)
        self._weights_ref, self._version = None, -1
        self._sampled: tuple = ([None], -1, [])  # (weights box, version, row counts) of the kept fragments
        self._resampled: list[Fragment] = []
        self.lost_fragments = 0  # a failed worker's fragment is always resampled
        self.last_latencies_s: list[float] = []

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        self._weights_ref, self._version = ray.put(weights), version

    def gradients(self) -> tuple[list[Fragment], list[np.ndarray], dict[str, float]]:
        launch = lambda i: self.actors[i].gradients_with.remote([self._weights_ref], self._version)  # noqa: E731
        got, self.last_latencies_s = self.gather(launch, range(len(self.actors)))
        results = [got[i] for i in range(len(self.actors))]
        fragments = [f for f, _, _ in results]
        grads = weighted_mean_gradients([(g, m["rows"]) for _, g, m in results])
        rows = [m["rows"] for _, _, m in results]
        metrics = {
            k: float(np.average([m[k] for _, _, m in results], weights=rows))
            for k in results[0][2]
            if k != "rows"
        }
        return fragments, grads, metrics

    def sample_and_keep(self) -> tuple[list[Fragment], list[int]]:
        """Every worker samples a fragment and keeps it; returns the fragments' stats and row counts."""
        box = [self._weights_ref]
        got, self.last_latencies_s = self.gather(
            lambda i: self.actors[i].sample_and_keep_with.remote(box, self._version), range(len(self.actors))
        )
        rows = [got[i][1] for i in range(len(self.actors))]
        self._sampled = (box, self._version, rows)
        return [got[i][0] for i in range(len(self.actors))], rows

    def minibatch_gradients(
        self, rows_per_worker: list[np.ndarray]
    ) -> tuple[list[np.ndarray], dict[str, float]]:
        """One SGD step's gradient: each worker's on its share of the minibatch, row-weighted mean."""
        box = [self._weights_ref]
        sampled_box, sampled_version, kept_rows = self._sampled

        def launch(i):
            return self.actors[i].minibatch_gradients_with.remote(box, self._version, rows_per_worker[i])

        def relaunch(i):  # the kept fragment died with the worker: resample it first
            return self.actors[i].resample_minibatch_gradients_with.remote(
                sampled_box, sampled_version, kept_rows[i], box, self._version, rows_per_worker[i]
            )

        got, _ = self.gather(launch, [i for i, rows in enumerate(rows_per_worker) if len(rows)], relaunch)
        results = []
        for i in sorted(got):
            if len(got[i]) == 3:  # (fragment, grads, metrics) from a successor
                self._resampled.append(got[i][0])
            results.append(got[i][-2:])
        grads = weighted_mean_gradients([(g, m["rows"]) for g, m in results])
        weights = [m["rows"] for _, m in results]
        metrics = {
            k: float(np.average([m[k] for _, m in results], weights=weights))
            for k in results[0][1]
            if k != "rows"
        }
        return grads, metrics

    def pop_resampled(self) -> list[Fragment]:
        """Fragments (stats only) resampled by successors during SGD steps since the last call."""
        out, self._resampled = self._resampled, []
        return out


# ---------------------------------------------------------------------------------- A3C
def _server_learner(settings: SamplerSettings, recipe: LossRecipe, lr: float, grad_clip: float | None):
    return make_gradient_learner(settings, recipe, lr, grad_clip)


class A3CWorkers(_Fleet):
    """A3C: each worker loops sample -> gradients -> ParameterServer.apply_gradients -> new weights, with no
    barrier between workers. The driver keeps `in_flight` steps queued per worker and only collects stats."""

    def __init__(
        self,
        settings: SamplerSettings,
        recipe: LossRecipe,
        lr: float,
        grad_clip: float | None,
        num_workers: int,
        num_cpus_per_worker: float,
        address: str | None,
        in_flight: int = 2,
    ):
        super().__init__(RayGradientWorker, (settings, recipe), num_workers, num_cpus_per_worker, address)
        import functools

        # The server needs a CPU slot too; it shares the cores with the workers (0 reserved, like the driver).
        factory = functools.partial(_server_learner, settings, recipe, lr, grad_clip)
        self.server = ray.remote(ParameterServer).options(num_cpus=0).remote(factory)
        self.extra_actors = [self.server]
        self.in_flight = in_flight

    def wait_ready(self) -> None:
        super().wait_ready()
        ray.get(self.server.latest.remote(-2))

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        """Initial weights to the server and every worker (later versions flow through the server)."""
        ray.get(self.server.set_weights.remote(weights, version))
        ray.get([a.set_weights.remote(weights, version) for a in self.actors])

    def collect(self, min_env_steps: int) -> tuple[list[Fragment], list[dict]]:
        """Fragments (stats only) and loss metrics of the worker steps finished until `min_env_steps`."""
        if not self._armed:
            self._armed, self._window_start = True, time.perf_counter()
            for actor in self.actors:
                for _ in range(self.in_flight):
                    self._queue(actor.a3c_step.remote(self.server), actor)
        fragments, metrics, steps = [], [], 0
        while steps < min_env_steps:
            ready, _ = ray.wait(list(self._pending), num_returns=1, timeout=self._wait_timeout())
            for ref in ready:
                if ref not in self._pending:  # its worker was replaced meanwhile
                    continue
                actor = self._pending.pop(ref)
                got = self._result_or_replace(ref, actor)
                if got is None:  # its worker failed and was replaced (the new one is already queued)
                    continue
                self._queue(actor.a3c_step.remote(self.server), actor)  # keep the worker busy
                fragment, m = got
                fragments.append(fragment), metrics.append(m)
                steps += fragment.env_steps
                self._busy_s += fragment.sample_time_s + m.get("grad_time_s", 0.0)
            self._replace_hung()
        return fragments, metrics

    def on_restart(self, actor) -> None:
        """The new worker starts from the server's newest weights, with the fleet's usual calls queued."""
        weights, version = ray.get(self.server.latest.remote(-2))
        actor.set_weights.remote(weights, version)
        for _ in range(self.in_flight):
            self._queue(actor.a3c_step.remote(self.server), actor)

    def server_stats(self) -> dict[str, float]:
        return ray.get(self.server.pop_stats.remote())

    def latest_weights(self) -> tuple[list[np.ndarray], int]:
        return ray.get(self.server.latest.remote(-2))


# ---------------------------------------------------------------------------------- IMPALA
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

    def ping(self) -> int:
        return self.worker_index

    def stop(self) -> None:
        self.client.stop()
        super().stop()


class LearnerQueue(_Fleet):
    """IMPALA's actors and learner queue: each worker has `in_flight` sample calls queued, so it samples
    back to back while the learner updates; finished fragments enter a bounded queue. When the queue is
    full, 'drop' discards the oldest fragment (and counts it), 'block' stops re-arming the workers that
    delivered until the learner takes from the queue."""

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
        server = ray.remote(ParameterServer).options(num_cpus=0).remote()
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
