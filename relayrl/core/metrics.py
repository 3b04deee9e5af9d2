"""Timers for the phases of an iteration and the rolling episode statistics behind the result dict."""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from relayrl.core.types import Fragment

PHASES = ("sample", "learn", "sync", "wait")


class Timers:
    """Wall time per phase for the current iteration: `with timers("learn"): ...`."""

    def __init__(self) -> None:
        self.current = dict.fromkeys(PHASES, 0.0)

    @contextmanager
    def __call__(self, phase: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.current[phase] = self.current.get(phase, 0.0) + time.perf_counter() - start

    def pop(self) -> dict[str, float]:
        out, self.current = self.current, dict.fromkeys(PHASES, 0.0)
        return out


class EpisodeStats:
    """Returns and lengths of the last `window` completed episodes, carried across iterations
    (RLlib 2.60 resets its window every iteration; a carried window is what users plot)."""

    def __init__(self, window: int) -> None:
        self.returns: collections.deque = collections.deque(maxlen=window)
        self.lengths: collections.deque = collections.deque(maxlen=window)
        self.episodes_total = 0
        self._iteration_returns: list[np.ndarray] = []

    def add(self, fragment: Fragment) -> None:
        self._iteration_returns.append(fragment.episode_returns)
        self.returns.extend(fragment.episode_returns.tolist())
        self.lengths.extend(fragment.episode_lengths.tolist())
        self.episodes_total += len(fragment.episode_returns)

    def pop_iteration_returns(self) -> np.ndarray:
        """Returns of the episodes completed since the last call (for return histograms)."""
        out, self._iteration_returns = self._iteration_returns, []
        return np.concatenate(out) if out else np.zeros(0, np.float32)

    def summary(self) -> dict[str, float]:
        if not self.returns:
            nan = float("nan")
            return {
                "episode_reward_mean": nan,
                "episode_reward_min": nan,
                "episode_reward_max": nan,
                "episode_len_mean": nan,
                "episodes_total": self.episodes_total,
            }
        r = np.asarray(self.returns)
        return {
            "episode_reward_mean": float(r.mean()),
            "episode_reward_min": float(r.min()),
            "episode_reward_max": float(r.max()),
            "episode_len_mean": float(np.mean(self.lengths)),
            "episodes_total": self.episodes_total,
        }


class WorkerStats:
    """Per-worker throughput, CPU use, sample latency (rolling p50/p99) and policy lag."""

    def __init__(self, latency_window: int = 200) -> None:
        self.latencies: collections.deque = collections.deque(maxlen=latency_window)
        self._iteration: list[tuple[Fragment, float, int]] = []

    def add(self, fragment: Fragment, latency_s: float, learner_version: int) -> None:
        self.latencies.append(latency_s)
        self._iteration.append((fragment, latency_s, learner_version - fragment.version))

    def pop(self, iteration_s: float) -> dict[str, float]:
        """This iteration's figures (then reset); idle_frac = share of the iteration workers were not
        sampling."""
        out: dict[str, float] = {}
        frags, self._iteration = self._iteration, []
        if not frags:
            return out
        lags = [lag for _, _, lag in frags]
        busy = []
        for fragment, _, _ in frags:
            i = fragment.worker_index
            out[f"workers/{i}/steps_per_s"] = fragment.env_steps / max(fragment.sample_time_s, 1e-9)
            out[f"workers/{i}/cpu_util"] = fragment.cpu_time_s / max(fragment.sample_time_s, 1e-9)
            busy.append(fragment.sample_time_s)
        lat = np.asarray(self.latencies)
        out.update(
            {
                "workers/sample_latency_p50_s": float(np.percentile(lat, 50)),
                "workers/sample_latency_p99_s": float(np.percentile(lat, 99)),
                "workers/policy_lag_mean": float(np.mean(lags)),
                "workers/policy_lag_max": float(np.max(lags)),
                "workers/idle_frac": float(max(0.0, 1.0 - np.mean(busy) / max(iteration_s, 1e-9))),
            }
        )
        return out


def diagnose(shares: dict[str, float]) -> str:
    """One line naming the bottleneck from the time shares {"sample": .., "learn": .., "sync": ..}."""
    sample, learn, sync = (shares.get(k, 0.0) for k in ("sample", "learn", "sync"))
    if sample >= 0.6:
        return (
            f"sampling-bound: {sample:.0%} of time in sampling — add workers or envs per worker "
            f"(try `relayrl scale` to find the best worker count)"
        )
    if learn >= 0.6:
        return (
            f"learner-bound: {learn:.0%} of time in learning — add a GPU (.resources(num_gpus=1)), "
            f"use larger minibatches or fewer gradient steps per sample (num_sgd_iter, replay_ratio)"
        )
    if sync >= 0.3:
        return f"sync-bound: {sync:.0%} of time broadcasting weights — sync less often or shrink the model"
    return f"balanced: sampling {sample:.0%}, learning {learn:.0%}, weight sync {sync:.0%}"
