"""The written contracts between the training loop (algorithms/base.py) and what it drives: the worker
fleets (runtime/, policy_server/) and the learner (learning/, or a Ray actor holding it).

The loop calls only the members named here. Every fleet has all of `Fleet`; the sampling call an algorithm
makes is one of the narrower protocols (`SyncFleet`, `GradientFleet`, `QueueFleet`, `AsyncGradientFleet`).
A capability only some implementations have is its own `runtime_checkable` protocol, and the loop asks for
it with `isinstance` (never getattr with a default, which would turn a typo into a silent 0).
tests/unit/test_contracts.py checks every implementation against its protocols.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from relayrl.core.types import Fragment

Weights = list[np.ndarray]  # the networks.py layout


@runtime_checkable
class Fleet(Protocol):
    """What every fleet has. The loop that uses it (Algorithm.__init__, train, stop):

    fleet.wait_ready()
    fleet.sync_weights(initial_weights, 0)
    while training:
        fragments = <the narrower protocol's sampling call>
        record(fragments, fleet.last_latencies_s)
        ... update the learner ...; fleet.sync_weights(learner.get_weights(), version)
        result = {"workers/healthy": fleet.healthy(), "workers/restarts": fleet.restarts_total,
                  "workers/lost_fragments": fleet.lost_fragments,
                  "memory/object_store_bytes": fleet.object_store_bytes()}
    fleet.stop()
    """

    restarts_total: int  # workers re-created after a failure (0 where nothing restarts)
    lost_fragments: int  # fragments dropped for good after a failure (0: every failed one is resampled)
    last_latencies_s: list[float]  # each worker's round-trip time in the last sampling round ([]: not timed)

    def wait_ready(self) -> None:
        """Block until every worker is up (raises the first one's construction error)."""

    def sync_weights(self, weights: Weights, version: int) -> None:
        """Weights version `version` for the workers' next fragments."""

    def healthy(self) -> int:
        """Workers (or open external episodes) currently alive."""

    def object_store_bytes(self) -> int:
        """Bytes in Ray's object store (0 where the fleet has no object store)."""

    def stop(self) -> None:
        """Tear the workers down (and an embedded Ray this fleet started)."""


@runtime_checkable
class SyncFleet(Fleet, Protocol):
    """Synchronous sampling (PPO, A2C, DQN, SAC, TD3, Q-learning, the policy server):

    fragments = fleet.sample(explore=Exploration(epsilon=0.1))   # one per worker, current weights
    """

    def sample(self, explore: Any = None) -> list[Fragment]:
        """One fragment per worker; `explore` (a sampling.settings.Exploration) is applied to every worker
        first."""


@runtime_checkable
class GradientFleet(Fleet, Protocol):
    """Gradient aggregation (A2C / PPO with update_mode='gradients'):

    fragments, grads, metrics = fleet.gradients()                   # A2C: one step per iteration
    fragments, rows = fleet.sample_and_keep()                        # PPO: sample once, then per SGD step
    grads, metrics = fleet.minibatch_gradients(rows_per_worker); fleet.sync_weights(new, v)
    resampled = fleet.pop_resampled()                               # stats of fragments resampled meanwhile
    """

    def gradients(self) -> tuple[list[Fragment], Weights, dict[str, float]]: ...

    def sample_and_keep(self) -> tuple[list[Fragment], list[int]]: ...

    def minibatch_gradients(self, rows_per_worker: list[np.ndarray]) -> tuple[Weights, dict[str, float]]: ...

    def pop_resampled(self) -> list[Fragment]: ...


@runtime_checkable
class QueueFleet(Fleet, Protocol):
    """A learner queue workers fill continuously (IMPALA):

    fragments = fleet.take(n); dropped = fleet.pop_dropped()       # stats of fragments a full queue dropped
    metrics["worker_idle_fraction"] = fleet.idle_fraction()
    """

    def take(self, n: int) -> list[Fragment]: ...

    def pop_dropped(self) -> list[Fragment]: ...

    def idle_fraction(self) -> float: ...


@runtime_checkable
class AsyncGradientFleet(Fleet, Protocol):
    """Workers pushing gradients to a parameter server with no barrier (A3C):

    fragments, worker_metrics = fleet.collect(min_env_steps)
    stats = fleet.server_stats(); weights, version = fleet.latest_weights()
    """

    def collect(self, min_env_steps: int) -> tuple[list[Fragment], list[dict]]: ...

    def server_stats(self) -> dict[str, float]: ...

    def latest_weights(self) -> tuple[Weights, int]: ...

    def idle_fraction(self) -> float: ...


# ------------------------------------------------------------------------------ optional fleet capabilities
@runtime_checkable
class RestartingFleet(Protocol):
    """A fleet that re-creates failed workers (the Ray fleets): the config's fault_tolerance fields."""

    def set_fault_tolerance(self, max_restarts: int, backoff_s: float, timeout_s: float | None) -> None: ...


@runtime_checkable
class PlacedFleet(Protocol):
    """A fleet whose workers live on cluster nodes (the Ray fleets): `node_ips[i]` is worker i+1's node
    address, updated when a worker is re-created (results: workers/<i>/node_ip)."""

    node_ips: list[str]


@runtime_checkable
class WorkerStates(Protocol):
    """A fleet whose workers' envs, observations and RNGs a checkpoint captures (JSON-able, no pickle)."""

    def get_states(self) -> list[dict]: ...

    def set_states(self, states: list[dict]) -> None:
        """Raises CheckpointError for a state that does not fit, ValueError for another worker count."""


@runtime_checkable
class WeightRefFleet(Protocol):
    """A fleet that takes weights already in Ray's object store (from a learner actor's process)."""

    def sync_weights_ref(self, weights_ref: Any, version: int) -> None: ...


# ------------------------------------------------------------------------------ the learner
@runtime_checkable
class LearnerLike(Protocol):
    """What the loop asks of every learner (TF Learner, a Ray actor's proxy, Q-learning's table):

    learner.set_weights(initial); ... weights = learner.get_weights()   # broadcast, export, evaluate
    learner.save_checkpoint(directory); learner.restore_checkpoint(directory)
    """

    def get_weights(self) -> Weights: ...

    def set_weights(self, weights: Weights) -> None: ...

    def save_checkpoint(self, directory: str) -> None: ...

    def restore_checkpoint(self, directory: str) -> None:
        """Raises CheckpointError naming the file for anything that does not fit."""


@runtime_checkable
class GradientLearner(LearnerLike, Protocol):
    """A learner of a differentiable loss (every TF learner, local or in an actor):

    metrics = learner.update(batch, minibatch_indices)   # [steps, M] rows, one compiled call
    learner.set_lr(lr); gnorm = learner.apply_gradients(mean_grads); learner.part_weights("critics")
    """

    def update(self, batch: dict[str, np.ndarray], minibatch_indices: np.ndarray) -> dict[str, float]: ...

    def apply_gradients(self, grads: Weights) -> float: ...

    def set_lr(self, lr: float) -> None: ...

    def part_weights(self, part: str) -> Weights: ...


@runtime_checkable
class RemoteWeights(Protocol):
    """A learner in another process whose weights go to the object store without passing the driver."""

    def weights_ref(self) -> Any: ...


@runtime_checkable
class Stoppable(Protocol):
    """A learner holding resources to release (a Ray actor, an embedded Ray)."""

    def stop(self) -> None: ...
