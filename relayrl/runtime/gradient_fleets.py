"""Ray fleets of gradient-computing workers: synchronous gradient aggregation (A2C / PPO with
update_mode='gradients') and A3C's workers pushing gradients to a ParameterServer actor."""

from __future__ import annotations

import functools
import time

import numpy as np
import ray

from relayrl.core.types import Fragment
from relayrl.runtime.actor_fleet import ActorFleet
from relayrl.runtime.cluster import remote_class
from relayrl.runtime.params import ParameterServer
from relayrl.sampling.grad_worker import (
    GradientWorker,
    LossRecipe,
    make_gradient_learner,
    weighted_mean_gradients,
)
from relayrl.sampling.settings import SamplerSettings


class RayGradientWorker(GradientWorker):
    def gradients_with(self, weights_box: list, version: int):
        if version != self.policy.version:
            self.set_weights(ray.get(weights_box[0]), version)
        return self.sample_gradients()

    def sample_and_keep_with(self, weights_box: list, version: int, num_rows: int | None = None):
        if version != self.policy.version:
            self.set_weights(ray.get(weights_box[0]), version)
        return self.sample_and_keep(num_rows)

    def minibatch_gradients_with(
        self, weights_box: list, version: int, rows: np.ndarray, advantage_stats: tuple | None = None
    ):
        if version != self.policy.version:
            self.set_weights(ray.get(weights_box[0]), version)
        return self.minibatch_gradients(rows, advantage_stats)

    def resample_minibatch_gradients_with(
        self,
        sampled_box: list,
        sampled_version: int,
        num_rows: int,
        weights_box: list,
        version: int,
        rows: np.ndarray,
        advantage_stats: tuple | None = None,
    ):
        """A successor's first call in the middle of PPO's SGD steps: the fragment its predecessor kept died
        with it, so sample a new one with the weights the iteration sampled with (keeping exactly
        `num_rows` rows, the count the driver's minibatch plan was made for), then return it (stats only)
        with the gradients on `rows` at the current weights."""
        fragment, _ = self.sample_and_keep_with(sampled_box, sampled_version, num_rows)
        return fragment, *self.minibatch_gradients_with(weights_box, version, rows, advantage_stats)

    _reply = None  # the server's answer to the last gradient this worker sent (a3c_step)

    def a3c_step(self, server) -> tuple[Fragment, dict]:
        """Sample, compute gradients at the local weights and send them without waiting: the server's answer
        (its newest weights) is installed before the next gradient is sent, by which time it has normally
        long arrived, so the worker does not wait for the server (one more version of staleness)."""
        fragment, grads, metrics = self.sample_gradients()
        version = self.policy.version  # the weights these gradients were computed with
        if self._reply is not None:
            start = time.perf_counter()
            self.set_weights(*ray.get(self._reply))
            metrics["wait_server_s"] = time.perf_counter() - start
        self._reply = server.apply_gradients.remote(grads, version)
        return fragment, metrics

    def ping(self) -> str:
        """The address of this worker's node (answering at all says the actor is up)."""
        return ray.util.get_node_ip_address()


class GradientWorkers(ActorFleet):
    """Synchronous gradient aggregation: every worker returns the gradient of its own fragment; the learner
    applies their row-weighted mean (equal to shipping the samples when there is one worker).

    Fault tolerance as in the sample-shipping fleet: a worker that dies, raises or misses sample_timeout_s is
    re-created (budget, backoff) and its call is made again on the successor with the same weights version,
    so no fragment is lost. In the middle of PPO's SGD steps the successor first resamples the fragment its
    predecessor kept (with the weights the iteration sampled with); `pop_resampled` hands those fragments'
    stats to the algorithm, since their env steps and episodes happened.
    Contracts (core.contracts): GradientFleet, RestartingFleet."""

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
        self, rows_per_worker: list[np.ndarray], advantage_stats: tuple[float, float] | None = None
    ) -> tuple[list[np.ndarray], dict[str, float]]:
        """One SGD step's gradient: each worker's on its share of the minibatch, row-weighted mean
        (advantage_stats: the whole minibatch's advantage mean and std, for every share)."""
        box = [self._weights_ref]
        sampled_box, sampled_version, kept_rows = self._sampled

        def launch(i):
            return self.actors[i].minibatch_gradients_with.remote(
                box, self._version, rows_per_worker[i], advantage_stats
            )

        def relaunch(i):  # the kept fragment died with the worker: resample it first
            return self.actors[i].resample_minibatch_gradients_with.remote(
                sampled_box,
                sampled_version,
                kept_rows[i],
                box,
                self._version,
                rows_per_worker[i],
                advantage_stats,
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


def _server_learner(settings: SamplerSettings, recipe: LossRecipe, lr: float, grad_clip: float | None):
    return make_gradient_learner(settings, recipe, lr, grad_clip)


class A3CWorkers(ActorFleet):
    """A3C: each worker loops sample -> gradients -> ParameterServer.apply_gradients -> new weights, with no
    barrier between workers. The driver keeps `in_flight` steps queued per worker and only collects stats.
    Contracts (core.contracts): AsyncGradientFleet, RestartingFleet."""

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
        # The server needs a CPU slot too; it shares the cores with the workers (0 reserved, like the driver).
        factory = functools.partial(_server_learner, settings, recipe, lr, grad_clip)
        self.server = remote_class(ParameterServer).options(num_cpus=0).remote(factory)
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
