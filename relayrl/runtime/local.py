"""Local runtime: one RolloutWorker in the driver process, no Ray (the fastest start, and the debug mode)."""

from __future__ import annotations

import numpy as np

from relayrl.core.types import Fragment
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import Exploration, SamplerSettings


class LocalWorkers:
    """Contracts (core.contracts): SyncFleet, WorkerStates. Nothing restarts, nothing is lost, no object
    store: those figures are 0 here."""

    restarts_total = 0
    lost_fragments = 0
    last_latencies_s: list[float]

    def __init__(self, settings: SamplerSettings):
        self.worker = RolloutWorker(settings, worker_index=0)
        self.num_workers = 0
        self.last_latencies_s = []

    def wait_ready(self) -> None:
        pass

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        self.worker.set_weights(weights, version)

    def sample(self, explore: Exploration | None = None) -> list[Fragment]:
        if explore is not None:
            self.worker.set_explore(explore)
        fragment = self.worker.sample()
        self.last_latencies_s = [fragment.sample_time_s]
        return [fragment]

    def object_store_bytes(self) -> int:
        return 0  # no object store without Ray

    def get_states(self) -> list[dict]:
        return [self.worker.get_state()]

    def set_states(self, states: list[dict]) -> None:
        self.worker.set_state(states[0])

    def healthy(self) -> int:
        return 1

    def stop(self) -> None:
        self.worker.stop()


class SerialQueue(LocalWorkers):
    """The asynchronous algorithms' queue interface run serially in the driver (num_rollout_workers=0):
    sample exactly when the learner asks, so nothing is ever dropped and the worker never idles by design.
    Contracts (core.contracts): QueueFleet, WorkerStates."""

    def take(self, n: int) -> list[Fragment]:
        return [self.worker.sample() for _ in range(n)]

    def pop_dropped(self) -> list[Fragment]:
        return []

    def idle_fraction(self) -> float:
        return float("nan")
