"""Ray runtime: RolloutWorkers as CPU-only Ray actors; weights go out as one ray.put per version.

This is the only module that imports Ray.
"""
from __future__ import annotations

import logging
import os

import numpy as np
import ray

from relayrl.rollout import RolloutWorker, SamplerSettings
from relayrl.types import Fragment

# Workers on N cores must not each start N BLAS / TF threads and fight over them.
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
}


def init_ray(address: str | None = None) -> bool:
    """Start an embedded Ray (or join `address`) unless one is running; True if this call started it."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(
        address=address,
        include_dashboard=False,
        runtime_env={"env_vars": WORKER_ENV},
        logging_level=logging.ERROR,
        configure_logging=True,
    )
    return True


class RayRolloutWorker(RolloutWorker):
    """Actor wrapper: pulls the weights object only when the version changed."""

    def sample_with(self, weights_box: list, version: int) -> Fragment:
        if version != self.policy.version:
            # The ref arrives boxed in a list so Ray does not resolve it on every call; ray.get gives
            # zero-copy read-only arrays backed by the object store.
            self.set_weights(ray.get(weights_box[0]), version)
        return self.sample()

    def ping(self) -> int:
        return self.worker_index


class RayWorkers:
    def __init__(self, settings: SamplerSettings, num_workers: int, num_cpus_per_worker: float, address: str | None):
        self._owns_ray = init_ray(address)
        actor_cls = ray.remote(RayRolloutWorker)
        self.actors = [
            actor_cls.options(num_cpus=num_cpus_per_worker, name=None).remote(settings, i + 1)
            for i in range(num_workers)
        ]
        self.num_workers = num_workers
        self._weights_ref = None
        self._version = -1

    def wait_ready(self) -> None:
        """Block until every actor is constructed (raises the constructor's error if one failed)."""
        ray.get([a.ping.remote() for a in self.actors])

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        # One ray.put per version; dropping the previous ref lets the object store free it.
        self._weights_ref = ray.put(weights)
        self._version = version

    def sample(self) -> list[Fragment]:
        return ray.get([a.sample_with.remote([self._weights_ref], self._version) for a in self.actors])

    def healthy(self) -> int:
        return len(self.actors)

    def stop(self) -> None:
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
        self._weights_ref = None
        if self._owns_ray:
            ray.shutdown()
