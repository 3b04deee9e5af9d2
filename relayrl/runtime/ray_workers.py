"""Ray runtime: RolloutWorkers as CPU-only Ray actors; weights go out as one ray.put per version.

This is the only module that imports Ray.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any

import numpy as np
import ray

from relayrl.core.types import Fragment
from relayrl.sampling.rollout import EnvError, RolloutWorker, SamplerSettings, WorkerFailedError  # noqa: F401 - re-exported

# Workers on N cores must not each start N BLAS / TF threads and fight over them.
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
}


def init_ray(address: str | None = None, dashboard: bool = False) -> bool:
    """Start an embedded Ray (or join `address`) unless one is running; True if this call started it.
    The dashboard stays off unless asked for, and then listens on 127.0.0.1 only."""
    if ray.is_initialized():
        return False
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    if address is not None:
        extra: dict = {}  # joining a cluster: its head decides about the dashboard
    else:
        # An embedded Ray keeps to loopback. Ray 2.60 rewrites _node_ip_address to the machine's address and
        # listens on all interfaces unless its "clusters enabled" switch is off: that switch is read from
        # RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER when Ray is imported (here: already), so it is set both for the
        # processes ray.init is about to start and on the imported constant. Joining a cluster (address
        # given) leaves both alone. tests/integration/runtime/test_security.py lists every listening socket.
        os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
        ray._private.ray_constants.ENABLE_RAY_CLUSTER = False
        extra = {"include_dashboard": dashboard, "_node_ip_address": "127.0.0.1"}
        if dashboard:
            extra["dashboard_host"] = "127.0.0.1"
    global _dashboard_url
    context = ray.init(
        address=address,
        runtime_env={"env_vars": WORKER_ENV},
        logging_level=logging.ERROR,
        configure_logging=True,
        **extra,
    )
    url = getattr(context, "dashboard_url", None)
    _dashboard_url = (url if url.startswith("http") else f"http://{url}") if url else None
    return True


_dashboard_url: str | None = None


def cluster_cpus() -> float:
    """CPUs of the connected cluster (starts the embedded Ray if none is running)."""
    init_ray()
    return float(ray.cluster_resources().get("CPU", 1.0))


def dashboard_url() -> str | None:
    """http://host:port of the dashboard of the Ray this process started, or None."""
    return _dashboard_url


class RayRolloutWorker(RolloutWorker):
    """Actor wrapper: pulls the weights object only when the version changed."""

    def sample_with(self, weights_box: list, version: int, explore: dict | None = None) -> Fragment:
        if version != self.policy.version:
            # The ref arrives boxed in a list so Ray does not resolve it on every call; ray.get gives
            # zero-copy read-only arrays backed by the object store.
            self.set_weights(ray.get(weights_box[0]), version)
        if explore:
            self.set_explore(explore)
        return self.sample()

    def ping(self) -> int:
        return self.worker_index


STARTUP_TIMEOUT_S = 120.0  # how long a re-created worker may take to come up


class RestartBudget:
    """Restart accounting every fleet shares: a per-worker budget (past it: WorkerFailedError naming the
    worker and the last error) and exponential backoff over consecutive failures of the same worker."""

    def __init__(self, num_workers: int):
        self.max_restarts, self.backoff_s, self.timeout_s = 3, 1.0, None
        self.restarts = [0] * num_workers  # per worker, against the budget
        self._consecutive = [0] * num_workers  # for the backoff
        self.restarts_total = 0

    def set_fault_tolerance(self, max_restarts: int, backoff_s: float, timeout_s: float | None) -> None:
        self.max_restarts, self.backoff_s, self.timeout_s = max_restarts, backoff_s, timeout_s

    def charge(self, i: int, error: BaseException) -> None:
        """Count a failure of worker i (0-based), raise past the budget, else wait out the backoff."""
        self.restarts[i] += 1
        self._consecutive[i] += 1
        self.restarts_total += 1
        if self.restarts[i] > self.max_restarts:
            raise WorkerFailedError(i + 1, self.restarts[i], error)
        logging.getLogger("relayrl").warning(
            "restarting rollout worker %d after %s: %s", i + 1, type(error).__name__, error
        )
        time.sleep(self.backoff_s * 2 ** (self._consecutive[i] - 1))

    def succeeded(self, i: int) -> None:
        self._consecutive[i] = 0

    def _restart(self, i: int, error: BaseException) -> None:
        """Kill worker i (0-based), charge the budget and re-create it (fleet-specific)."""
        raise NotImplementedError

    def gather(self, launch, indices, relaunch=None) -> tuple[dict[int, Any], list[float]]:
        """Call `launch(i)` (it returns an ObjectRef) for each worker index and wait for every result. A
        worker whose call fails (died, or its env raised) or that has not answered within sample_timeout_s
        is restarted, and `relaunch(i)` (default: `launch`) runs on its successor, whose clock starts once it
        is up (see `replacement`), so every index gets its result. Returns {i: result} and each call's
        latency in seconds (index order; 0 for indices not launched)."""
        relaunch = relaunch or launch
        start = time.perf_counter()
        no_limit = self.timeout_s is None
        due = lambda: float("inf") if no_limit else time.monotonic() + self.timeout_s  # noqa: E731
        pending = {launch(i): (i, due()) for i in indices}  # ref -> (worker index, when it counts as hung)
        results: dict[int, Any] = {}
        latencies = [0.0] * len(self.restarts)
        while pending:
            first_due = min(d for _, d in pending.values())
            wait_s = None if no_limit else max(0.0, first_due - time.monotonic())
            ready, _ = ray.wait(list(pending), num_returns=1, timeout=wait_s)
            if not ready:  # a worker is past its deadline: hung
                for ref, (i, d) in list(pending.items()):
                    if d <= time.monotonic():
                        del pending[ref]
                        self._restart(i, TimeoutError(f"no result within sample_timeout_s={self.timeout_s}"))
                        pending[relaunch(i)] = (i, due())
                continue
            i, _ = pending.pop(ready[0])
            try:
                results[i] = ray.get(ready[0])
                latencies[i] = time.perf_counter() - start
                self.succeeded(i)
            except (ray.exceptions.RayError, EnvError) as exc:
                self._restart(i, getattr(exc, "cause", None) or exc)
                pending[relaunch(i)] = (i, due())
        return results, latencies

    def replacement(self, make, i: int):
        """Create worker i (0-based) anew with `make(i)` and wait until it answers, so its start-up (a new
        process importing TensorFlow, building its envs: seconds on a busy machine) never counts against
        sample_timeout_s. One that dies or does not answer within STARTUP_TIMEOUT_S is another failure."""
        while True:
            actor = make(i)
            try:
                ray.get(actor.ping.remote(), timeout=STARTUP_TIMEOUT_S)
                return actor
            except ray.exceptions.RayError as exc:  # includes GetTimeoutError
                kill_quietly(actor)
                self.charge(i, getattr(exc, "cause", None) or exc)


def kill_quietly(actor) -> None:
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - it may be dead already
        pass


class RayWorkers(RestartBudget):
    """Synchronous fleet with fault tolerance: a worker that dies, raises, or misses sample_timeout_s is
    killed and re-created (exponential backoff), and its fragment is resampled with the same weights
    version, so a synchronous update never loses a fragment nor mixes in stale ones."""

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
            ray.remote(worker_cls or RayRolloutWorker)
            .options(num_cpus=num_cpus_per_worker, scheduling_strategy=strategy)
            .remote(settings, i + 1)
        )
        self.actors = [self._make(i) for i in range(num_workers)]
        self.num_workers = num_workers
        RestartBudget.__init__(self, num_workers)
        self.lost_fragments = 0  # fragments dropped for good: none, every failed one is resampled
        self._weights_ref = None
        self._version = -1
        self.last_latencies_s: list[float] = []
        self._gcs_state, self._store_bytes, self._store_checked_at = None, 0, float("-inf")

    def wait_ready(self) -> None:
        """Block until every actor is constructed (raises the constructor's error if one failed)."""
        ray.get([a.ping.remote() for a in self.actors])

    def _restart(self, i: int, error: BaseException) -> None:
        kill_quietly(self.actors[i])
        self.charge(i, error)
        self.actors[i] = self.replacement(
            self._make, i
        )  # pulls the current weights on its first sample_with call

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

    def sample(self, explore: dict | None = None) -> list[Fragment]:
        """One fragment per worker, all sampled with the current weights version; records each call's
        round-trip latency (last_latencies_s). `explore` (e.g. the current epsilon) is applied first.
        Failed or hung workers are restarted and their fragment resampled (see the class docstring)."""
        launch = lambda i: self.actors[i].sample_with.remote([self._weights_ref], self._version, explore)  # noqa: E731
        fragments, self.last_latencies_s = self.gather(launch, range(len(self.actors)))
        return [fragments[i] for i in range(len(self.actors))]

    def object_store_bytes(self) -> int:
        """Bytes in the object store, asked of the raylet at most every 2 s (~4 ms per ask here)."""
        now = time.monotonic()
        if now - self._store_checked_at >= 2.0:
            self._store_checked_at = now
            try:  # Ray has no public API for this figure; degrade to the last value if the private one moves
                from ray._private.internal_api import get_memory_info_reply, get_state_from_address

                if self._gcs_state is None:
                    self._gcs_state = get_state_from_address(ray.get_runtime_context().gcs_address)
                self._store_bytes = int(
                    get_memory_info_reply(self._gcs_state).store_stats.object_store_bytes_used
                )
            except Exception:  # noqa: BLE001 - a metric must never stop training
                pass
        return self._store_bytes

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


class LearnerHost:
    """Actor body: a Learner built inside this process (which may hold GPUs)."""

    def __init__(self, factory, num_gpus: float, threads, mlp: bool):
        from relayrl.learning.placement import build_learner_here

        self.learner = build_learner_here(factory, num_gpus, threads, mlp)

    def update(self, batch: dict, minibatch_indices: np.ndarray) -> dict:
        return self.learner.update(batch, minibatch_indices)

    def get_weights(self) -> list[np.ndarray]:
        return self.learner.get_weights()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        self.learner.set_weights(weights)

    def part_weights(self, part: str) -> list[np.ndarray]:
        return self.learner.part_weights(part)

    def set_lr(self, lr: float) -> None:
        self.learner.set_lr(lr)

    def save_checkpoint(self, directory: str) -> None:
        self.learner.save_checkpoint(directory)

    def restore_checkpoint(self, directory: str) -> None:
        self.learner.restore_checkpoint(directory)

    def placement(self) -> dict:
        """Where the learner's variables live and what this process can see (for checks and logs)."""
        import os
        import socket

        from relayrl.learning.placement import device_report

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "gpu_ids": ray.get_gpu_ids(),
            **device_report(self.learner),
        }


class RemoteLearner:
    """The Learner interface over a Ray actor that holds the learner's GPUs (workers stay CPU-only).
    It reserves no CPU: like the driver, it shares the machine with the workers."""

    def __init__(self, factory, num_gpus: float, threads, mlp: bool, address: str | None = None):
        self._owns_ray = init_ray(address)
        self.actor = None
        available = ray.cluster_resources().get("GPU", 0.0)
        if num_gpus > available:
            self.stop()
            raise ValueError(
                f"num_gpus = {num_gpus} but the Ray cluster has {available:g} GPU(s); "
                f"allowed: 0..{available:g}"
            )
        host = ray.remote(LearnerHost).options(num_gpus=num_gpus, num_cpus=0)
        self.actor = host.remote(factory, num_gpus, threads, mlp)
        try:
            self.placement = ray.get(self.actor.placement.remote())  # surfaces build errors now
        except Exception:
            self.stop()
            raise

    def update(self, batch: dict, minibatch_indices: np.ndarray) -> dict:
        return ray.get(self.actor.update.remote(batch, minibatch_indices))

    def get_weights(self) -> list[np.ndarray]:
        return ray.get(self.actor.get_weights.remote())

    def weights_ref(self) -> ray.ObjectRef:
        """The weights as an object in the store, written by the learner's process."""
        return self.actor.get_weights.remote()

    def set_weights(self, weights: list[np.ndarray]) -> None:
        ray.get(self.actor.set_weights.remote(weights))

    def part_weights(self, part: str) -> list[np.ndarray]:
        return ray.get(self.actor.part_weights.remote(part))

    def set_lr(self, lr: float) -> None:
        ray.get(self.actor.set_lr.remote(lr))

    def save_checkpoint(self, directory: str) -> None:
        """The actor writes its TF checkpoint (models and optimiser) itself: the directory must be on a file
        system it shares with the driver (always true on one machine)."""
        ray.get(self.actor.save_checkpoint.remote(directory))

    def restore_checkpoint(self, directory: str) -> None:
        ray.get(self.actor.restore_checkpoint.remote(directory))

    def stop(self) -> None:
        if self.actor is not None:
            ray.kill(self.actor)
            self.actor = None
        if self._owns_ray:
            ray.shutdown()
            self._owns_ray = False
