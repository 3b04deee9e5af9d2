"""Starting or joining Ray, and the cluster-wide figures the fleets report (CPUs, object-store bytes)."""

from __future__ import annotations

import logging
import os
import time

import ray

from relayrl.core import logs

# Workers on N cores must not each start N BLAS / TF threads and fight over them.
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    # glibc gives each thread that mallocs its own arena (up to 8 per core); Ray's gRPC threads free what
    # others allocated, and the arenas' free lists grew a rollout worker's RSS ~58 bytes per iteration with
    # its malloc'd bytes flat (mallinfo2). Two arenas: the worker stays flat (benchmarks/memory_soak.py).
    "MALLOC_ARENA_MAX": "2",
}


def remote_class(cls: type):
    """`ray.remote(cls)` for every actor relayrl starts: without task events. Ray keeps an event record of
    each actor call in the GCS (for the dashboard's task list, up to 100,000 tasks): ~3.5 KB per call, so
    PPO's two sample calls per iteration grew gcs_server ~7 KB per iteration (benchmarks/memory_soak.py),
    toward ~350 MB. These actors repeat the same few calls all run long; they still show on the dashboard."""
    return ray.remote(enable_task_events=False)(cls)


def init_ray(address: str | None = None, dashboard: bool = False) -> bool:
    """Start an embedded Ray of this process's own (or join `address`: 'auto' or host:port) unless one is
    running; True if this call started it.
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
        # "local" always starts a new Ray: None would join a cluster that `ray start` began on this machine
        # (or one RAY_ADDRESS or a stale ray_current_cluster file names). Joining is `address="auto"`.
        address="local" if address is None else address,
        runtime_env={"env_vars": WORKER_ENV},
        # Ray's own lines ("(raylet) ...", "(pid=...) ...") stay out of relayrl's stderr unless --verbose:
        # relayrl reports what happened to a worker or node in its own line (restarts.RestartBudget.charge)
        log_to_driver=logs.verbose(),
        logging_level=logging.ERROR,
        configure_logging=True,
        **extra,
    )
    # Ray's context object: older Ray versions had no dashboard_url member
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


def spread_over_nodes(count: int) -> list:
    """Scheduling strategies that put `count` zero-CPU actors on the alive nodes in turn (one node each
    while there are enough): Ray's own SPREAD is best effort and, for actors that reserve no resources, puts
    them on random nodes, often all on one. Inside a placement group (a Ray Tune trial) the actors stay in
    its bundles (None: Ray's default, which keeps a trial's child actors there); with one node, SPREAD."""
    if ray.util.get_current_placement_group() is not None:
        return [None] * count
    nodes = sorted(n["NodeID"] for n in ray.nodes() if n["Alive"])
    if len(nodes) < 2:
        return ["SPREAD"] * count
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # Hard affinity: Ray ignores a soft one for an actor that reserves no resources and picks a random node
    # (measured on the namespace cluster: 2 shards both on the head ~1 run in 9; ray-project/ray#25360 fixed
    # only the hard case). An actor whose node is lost before it starts dies, and the caller restores it as
    # it restores one lost later (ShardedReplay.ensure_alive).
    return [NodeAffinitySchedulingStrategy(nodes[i % len(nodes)], soft=False) for i in range(count)]


def kill_quietly(actor) -> None:
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - it may be dead already
        pass


class ObjectStoreGauge:
    """Bytes in the object store, asked of the raylet at most every `max_age_s` (~4 ms per ask here)."""

    def __init__(self, max_age_s: float = 2.0) -> None:
        self.max_age_s = max_age_s
        self._gcs_state, self._bytes, self._checked_at = None, 0, float("-inf")

    def __call__(self) -> int:
        now = time.monotonic()
        if now - self._checked_at >= self.max_age_s:
            self._checked_at = now
            try:  # Ray has no public API for this figure; degrade to the last value if the private one moves
                from ray._private.internal_api import get_memory_info_reply, get_state_from_address

                if self._gcs_state is None:
                    self._gcs_state = get_state_from_address(ray.get_runtime_context().gcs_address)
                self._bytes = int(get_memory_info_reply(self._gcs_state).store_stats.object_store_bytes_used)
            except Exception:  # noqa: BLE001 - a metric must never stop training
                pass
        return self._bytes
