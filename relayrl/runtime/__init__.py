"""Runtimes: the same RolloutWorker in the driver (local) or as Ray actors; they differ only in wiring."""

from __future__ import annotations

from relayrl.core.contracts import SyncFleet
from relayrl.sampling.settings import SamplerSettings


def make_workers(
    settings: SamplerSettings,
    num_workers: int,
    num_cpus_per_worker: float,
    address: str | None,
    dashboard: bool = False,
    worker_cls: type | None = None,
) -> SyncFleet:
    if num_workers == 0:
        from relayrl.runtime.local import LocalWorkers

        return LocalWorkers(settings)
    from relayrl.runtime.ray_workers import RayWorkers

    return RayWorkers(settings, num_workers, num_cpus_per_worker, address, dashboard, worker_cls)
