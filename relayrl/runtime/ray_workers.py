"""Ray runtime: RolloutWorkers as CPU-only Ray actors; weights go out as one ray.put per version.

The runtime package is the only place that imports Ray (cluster.py starts it; restarts.py holds the restart
budget every fleet shares; remote_learner.py the learner actor).
"""

from __future__ import annotations

import numpy as np
import ray

from relayrl.core.types import Fragment
from relayrl.runtime.cluster import (
    ObjectStoreGauge,
    init_ray,
    kill_quietly,
    remote_class,
)
from relayrl.runtime.restarts import RestartBudget
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import (
    Exploration,
    SamplerSettings,
)


class RayRolloutWorker(RolloutWorker):
    """Actor wrapper: pulls the weights object only when the version changed."""

    def sample_with(self, weights_box: list, version: int, explore: Exploration | None = None) -> Fragment:
        if version != self.policy.version:
            # The ref arrives boxed in a list so Ray does not resolve it on every call; ray.get gives
            # zero-copy read-only arrays backed by the object store.
            self.set_weights(ray.get(weights_box[0]), version)
        if explore is not None:
            self.set_explore(explore)
        return self.sample()

    def ping(self) -> str:
        """The address of this worker's node (answering at all says the actor is up)."""
        return ray.util.get_node_ip_address()


class RayWorkers(RestartBudget):
    """Synchronous fleet with fault tolerance: a worker that dies, raises, or misses sample_timeout_s is
    killed and re-created (exponential backoff), and its fragment is resampled with the same weights
    version, so a synchronous update never loses a fragment nor mixes in stale ones.

    Contracts (core.contracts): SyncFleet, RestartingFleet, WorkerStates, WeightRefFleet."""

    lost_fragments = 0  # every failed fragment is resampled
    last_latencies_s: list[float]

    def __init__(
        self,
        settings: SamplerSettings,
        num_workers: int,
        num_cpus_per_worker: float,
        address: str | None,
        dashboard: bool = False,
        worker_cls: type | None = None,
    ):
        self._owns_ray = init_ray(address, dashboard)
        # Small constructor arguments only (SamplerSettings): Ray can re-create such an actor at any time.
        # Spread over the nodes, except inside a placement group (a Ray Tune trial reserves its workers' CPUs
        # as bundles): there the workers take the group's bundles, which Tune captures for child actors.
        strategy = None if ray.util.get_current_placement_group() is not None else "SPREAD"
        self._make = lambda i: (
            remote_class(worker_cls or RayRolloutWorker)
            .options(num_cpus=num_cpus_per_worker, scheduling_strategy=strategy)
            .remote(settings, i + 1)
        )
        self.actors = [self._make(i) for i in range(num_workers)]
        self.num_workers = num_workers
        RestartBudget.__init__(self, num_workers)
        self._weights_ref = None
        self._version = -1
        self.last_latencies_s = []
        self._store_bytes = ObjectStoreGauge()

    def restart(self, i: int, error: BaseException) -> None:
        kill_quietly(self.actors[i])
        self.charge(i, error)
        self.actors[i] = self.replacement(self._make, i)  # pulls the current weights on its first sample_with

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        # One ray.put per version; dropping the previous ref lets the object store free it.
        self.sync_weights_ref(ray.put(weights), version)

    @property
    def weights_ref(self) -> ray.ObjectRef | None:
        """The object-store reference of the latest published weights."""
        return self._weights_ref

    def sync_weights_ref(self, weights_ref: ray.ObjectRef, version: int) -> None:
        """Weights already in the object store (e.g. returned by a learner actor)."""
        self._weights_ref = weights_ref
        self._version = version

    def sample(self, explore: Exploration | None = None) -> list[Fragment]:
        """One fragment per worker, all sampled with the current weights version; records each call's
        round-trip latency (last_latencies_s). `explore` (e.g. the current epsilon) is applied first.
        Failed or hung workers are restarted and their fragment resampled (see the class docstring)."""
        launch = lambda i: self.actors[i].sample_with.remote([self._weights_ref], self._version, explore)  # noqa: E731
        fragments, self.last_latencies_s = self.gather(launch, range(len(self.actors)))
        return [fragments[i] for i in range(len(self.actors))]

    def object_store_bytes(self) -> int:
        return self._store_bytes()

    def get_states(self) -> list[dict]:
        return ray.get([a.get_state.remote() for a in self.actors])

    def set_states(self, states: list[dict]) -> None:
        if len(states) != len(self.actors):
            raise ValueError(
                f"checkpoint holds {len(states)} worker states, this run has {len(self.actors)} workers"
            )
        ray.get([a.set_state.remote(s) for a, s in zip(self.actors, states)])

    def healthy(self) -> int:
        return len(self.actors)

    def stop(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        self._weights_ref = None
        if self._owns_ray:
            ray.shutdown()
