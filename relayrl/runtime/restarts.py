"""The restart budget every Ray fleet shares: a worker that dies, raises or hangs is re-created, within a
per-worker budget and with exponential backoff; past the budget the run ends naming the worker."""

from __future__ import annotations

import logging
import time
from typing import Any

import ray

from relayrl.core.saved_state import cause
from relayrl.runtime.cluster import kill_quietly
from relayrl.sampling.settings import EnvError, WorkerFailedError

STARTUP_TIMEOUT_S = 120.0  # how long a re-created worker may take to come up


def first_line(error: BaseException) -> str:
    """The first line of an error's message: Ray's run to dozens of lines (tracebacks, hints)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else ""


class RestartBudget:
    """Restart accounting every fleet shares: a per-worker budget (past it: WorkerFailedError naming the
    worker and the last error) and exponential backoff over consecutive failures of the same worker.

    Loop that uses it (a fleet's sampling call):  results, latencies = self.gather(launch, indices)"""

    restarts_total: int  # every restart of every worker, for the results' workers/restarts
    node_ips: list[str]  # each worker's node address (core.contracts.PlacedFleet)

    def __init__(self, num_workers: int):
        self.max_restarts, self.backoff_s, self.timeout_s = 3, 1.0, None
        self.restarts = [0] * num_workers  # per worker, against the budget
        self._consecutive = [0] * num_workers  # for the backoff
        self.restarts_total = 0
        self.node_ips = [""] * num_workers  # the node address of each worker, from its ping

    def set_fault_tolerance(self, max_restarts: int, backoff_s: float, timeout_s: float | None) -> None:
        self.max_restarts, self.backoff_s, self.timeout_s = max_restarts, backoff_s, timeout_s

    def charge(self, i: int, error: BaseException) -> None:
        """Count a failure of worker i (0-based), raise past the budget, else wait out the backoff."""
        self.restarts[i] += 1
        self._consecutive[i] += 1
        self.restarts_total += 1
        if self.restarts[i] > self.max_restarts:
            raise WorkerFailedError(i + 1, self.restarts[i], error)
        node = f" (node {self.node_ips[i]})" if self.node_ips[i] else ""
        logging.getLogger("relayrl").warning(
            "restarting rollout worker %d%s after %s: %s",
            i + 1,
            node,
            type(error).__name__,
            first_line(error),
        )
        time.sleep(self.backoff_s * 2 ** (self._consecutive[i] - 1))

    def succeeded(self, i: int) -> None:
        self._consecutive[i] = 0

    def restart(self, i: int, error: BaseException) -> None:
        """Kill worker i (0-based), charge the budget and re-create it (fleet-specific)."""
        raise NotImplementedError

    def wait_ready(self) -> None:
        """Block until every worker (`self.actors`) answers. One lost while starting (its process or its node
        died, or it became unreachable) is re-created within the restart budget, like one lost mid-sample. A
        constructor that raised ends the build with its error: a bad env or config would fail again."""
        pending = {actor.ping.remote(): i for i, actor in enumerate(self.actors)}
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            i = pending.pop(ready[0])
            try:
                self.node_ips[i] = ray.get(ready[0])
            except ray.exceptions.RayActorError as exc:
                if exc.actor_init_failed:
                    raise
                self.restart(i, cause(exc))  # returns once the successor answers

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
                        self.restart(i, TimeoutError(f"no result within sample_timeout_s={self.timeout_s}"))
                        pending[relaunch(i)] = (i, due())
                continue
            i, _ = pending.pop(ready[0])
            try:
                results[i] = ray.get(ready[0])
                latencies[i] = time.perf_counter() - start
                self.succeeded(i)
            except (ray.exceptions.RayError, EnvError) as exc:
                self.restart(i, cause(exc))
                pending[relaunch(i)] = (i, due())
        return results, latencies

    def replacement(self, make, i: int):
        """Create worker i (0-based) anew with `make(i)` and wait until it answers, so its start-up (a new
        process importing TensorFlow, building its envs: seconds on a busy machine) never counts against
        sample_timeout_s. One that dies or does not answer within STARTUP_TIMEOUT_S is another failure."""
        while True:
            actor = make(i)
            try:
                self.node_ips[i] = ray.get(actor.ping.remote(), timeout=STARTUP_TIMEOUT_S)
                return actor
            except ray.exceptions.RayError as exc:  # includes GetTimeoutError
                kill_quietly(actor)
                self.charge(i, cause(exc))
