"""The flat result dict of one training iteration (Algorithm.train): its keys are public (progress.csv,
TensorBoard, Ray Tune), so they are assembled in one place."""

from __future__ import annotations

from typing import Any

import numpy as np

from relayrl.core.config import Config
from relayrl.core.contracts import Fleet, PlacedFleet
from relayrl.core.metrics import EpisodeStats, WorkerStats


def iteration_result(
    *,
    iteration: int,
    timesteps_total: int,
    steps_before: int,
    elapsed: float,
    time_total_s: float,
    weights_version: int,
    episodes: EpisodeStats,
    timers: dict[str, float],
    learner_metrics: dict[str, float],
    workers: Fleet,
    worker_stats: WorkerStats,
    driver_rss_bytes: int,
) -> dict[str, Any]:
    """Counters, episode summary, throughput, timers, the learner's metrics (learner/...) and the fleet's
    figures (workers/..., memory/...); pops the per-iteration worker statistics."""
    new_steps = timesteps_total - steps_before
    return {
        "training_iteration": iteration,
        "timesteps_total": timesteps_total,
        **episodes.summary(),
        "time_this_iter_s": elapsed,
        "time_total_s": time_total_s,
        "env_steps_this_iter": new_steps,
        "env_steps_per_s": new_steps / max(elapsed, 1e-9),
        "weights_version": weights_version,
        **{f"timers/{k}_s": v for k, v in timers.items()},
        **{f"timers/{k}_frac": v / max(elapsed, 1e-9) for k, v in timers.items()},
        **{f"learner/{k}": v for k, v in learner_metrics.items()},
        "workers/healthy": workers.healthy(),
        "workers/restarts": workers.restarts_total,
        "workers/lost_fragments": workers.lost_fragments,
        **worker_nodes(workers),
        **worker_stats.pop(elapsed),
        "memory/driver_rss_bytes": driver_rss_bytes,
        "memory/object_store_bytes": workers.object_store_bytes(),
    }


def worker_nodes(workers: Fleet) -> dict[str, str]:
    """workers/<i>/node_ip (1-based, as in log lines) for fleets on cluster nodes; none for in-process."""
    if not isinstance(workers, PlacedFleet):
        return {}
    return {f"workers/{i + 1}/node_ip": ip for i, ip in enumerate(workers.node_ips)}


class ResultOutputs:
    """Where each iteration's result goes when config.log_dir is set: TensorBoard (with a histogram of the
    iteration's episode returns), and config.json / progress.csv / learning_curve.png (RunRecord)."""

    def __init__(self, config: Config) -> None:
        self._logger = self._record = None
        if config.log_dir:
            from relayrl.persistence.logger import TensorBoardLogger
            from relayrl.persistence.run_record import RunRecord

            self._logger = TensorBoardLogger(config.log_dir)
            self._record = RunRecord(config.log_dir, config.algo_name, config.to_dict())

    def log(self, result: dict[str, Any], iteration_returns: np.ndarray) -> None:
        if self._logger is not None:
            self._logger.log(result, histograms={"episode_reward_hist": iteration_returns})
        if self._record is not None:
            self._record.log(result)

    def close(self) -> None:
        if self._logger is not None:
            self._logger.close()
        if self._record is not None:
            self._record.close()  # draws learning_curve.png
            self._record = None
