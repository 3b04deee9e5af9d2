"""Timers for the phases of an iteration and the rolling episode statistics behind the result dict."""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

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
    """Per-worker throughput, CPU use, sample latency (rolling p50/p99), policy lag and the bytes of each
    fragment's columns (what a Ray worker puts in the object store: uint8 frames stay uint8)."""

    def __init__(self, latency_window: int = 200) -> None:
        self.latencies: collections.deque = collections.deque(maxlen=latency_window)
        self._iteration: list[tuple[Fragment, float, int]] = []
        self._bytes: list[int] = []

    def add(self, fragment: Fragment, latency_s: float, learner_version: int) -> None:
        self.latencies.append(latency_s)
        self._iteration.append((fragment, latency_s, learner_version - fragment.version))
        self._bytes.append(sum(int(a.nbytes) for a in fragment.data.values()))  # before anyone drops them

    def pop(self, iteration_s: float) -> dict[str, float]:
        """This iteration's figures (then reset); idle_frac = share of the iteration workers were not
        sampling."""
        out: dict[str, float] = {}
        frags, self._iteration = self._iteration, []
        sizes, self._bytes = self._bytes, []
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
                "workers/fragment_bytes_mean": float(np.mean(sizes)),
            }
        )
        return out


# What diagnose() needs to see before it advises anything, and the knobs it may name. A knob is named only
# when the algorithm's config has it; each comes with the direction that trades learner work per sample.
MIN_ITERATIONS, MIN_SECONDS = 5, 10.0
GPU_MIN_PARAMS = 250_000  # below this a CPU runs an MLP's update about as fast as a GPU (launch overhead)
LEARNER_KNOBS = {  # field: new value from the current one
    "num_sgd_iter": lambda v: max(1, v // 2),
    "sgd_minibatch_size": lambda v: v * 2,
    "replay_ratio": lambda v: v / 2,
    "updates_per_iteration": lambda v: max(1, v // 2),
}
SYNC_KNOBS = {"weights_pull_every": lambda v: v * 2, "weight_pull_every": lambda v: v * 2}


@dataclass(frozen=True)
class RunFacts:
    """The measurements of a finished run and the algorithm's own config, which diagnose() judges.

    shares: fraction of training time per phase {"sample", "learn", "sync", ...}; fields: the config's
    field values; groups: each field's builder group (for Python syntax); model_params: weights in the
    model; conv: a conv torso; gpu_capable: the learner can use a GPU (TensorFlow, not a numpy table)."""

    shares: Mapping[str, float]
    iterations: int
    training_s: float
    fields: Mapping[str, Any]
    groups: Mapping[str, str]
    model_params: int = 0
    conv: bool = False
    gpu_capable: bool = True


def _setting(facts: RunFacts, name: str, value: Any, syntax: str) -> str:
    shown = json.dumps(value, separators=(",", ":")) if isinstance(value, list) else repr(value)
    if syntax == "cli":
        return f"`--set {name}={shown}`"
    if "." in name:  # a model key: the builder takes the whole mapping
        field, key = name.split(".", 1)
        return f"`.{facts.groups[field]}({field}={{**config.{field}, {key!r}: {shown}}})`"
    return f"`.{facts.groups[name]}({name}={shown})`"


def _learner_advice(facts: RunFacts, syntax: str) -> list[str]:
    f = facts.fields
    advice = [_setting(facts, k, new(f[k]), syntax) for k, new in LEARNER_KNOBS.items() if k in f]
    big = facts.conv or facts.model_params >= GPU_MIN_PARAMS
    if facts.gpu_capable and big and not f.get("num_gpus"):
        advice.append(_setting(facts, "num_gpus", 1, syntax) + " (a GPU)")
    return advice


def _sync_advice(facts: RunFacts, syntax: str) -> list[str]:
    f = facts.fields
    advice = [_setting(facts, k, new(f[k]), syntax) for k, new in SYNC_KNOBS.items() if k in f]
    hiddens = f.get("model", {}).get("fcnet_hiddens") if isinstance(f.get("model"), dict) else None
    if hiddens and not facts.conv:
        advice.append(_setting(facts, "model.fcnet_hiddens", [max(1, h // 2) for h in hiddens], syntax))
    return advice


def diagnose(facts: RunFacts, syntax: str = "cli") -> str:
    """One line naming the bottleneck from the run's time shares, and what to change: only knobs the
    algorithm's config has, as `--set key=value` (syntax "cli") or `.group(key=value)` ("python").

    Rules: no verdict under MIN_ITERATIONS iterations or MIN_SECONDS of training (warm-up and tracing
    dominate). Sampling-bound at >= 60% of time sampling: more envs per worker, one more worker. Learner-bound
    at >= 60% learning: fewer gradient steps per sample (num_sgd_iter, replay_ratio, updates_per_iteration:
    halved; sgd_minibatch_size doubled), and a GPU only when the learner can use one, has none, and the model
    is big enough to gain from it (a conv torso or >= GPU_MIN_PARAMS weights). Sync-bound at >= 30% in weight
    broadcast with remote workers: pull weights less often, or a smaller MLP. Otherwise balanced.
    A learner waiting for remote workers' fragments ("wait") is starved by sampling as much as one that
    samples itself, so the sampling share counts both."""
    wait = facts.shares.get("wait", 0.0)
    sample, learn, sync = (facts.shares.get(k, 0.0) for k in ("sample", "learn", "sync"))
    sample += wait
    waited = f" ({wait:.0%} waiting for workers)" if wait >= 0.005 else ""
    shares = f"sampling {sample:.0%}{waited}, learning {learn:.0%}, weight sync {sync:.0%}"
    if facts.iterations < MIN_ITERATIONS or facts.training_s < MIN_SECONDS:
        return (
            f"too short to diagnose ({facts.iterations} iteration{'' if facts.iterations == 1 else 's'}, "
            f"{facts.training_s:.1f} s of training; "
            f"needs {MIN_ITERATIONS} and {MIN_SECONDS:.0f} s): {shares}"
        )
    f = facts.fields
    if sample >= 0.6:
        advice = [
            _setting(facts, "num_envs_per_worker", f["num_envs_per_worker"] * 2, syntax),
            _setting(facts, "num_rollout_workers", f["num_rollout_workers"] + 1, syntax),
        ]
        scale = " (`relayrl scale` finds the best worker count)" if syntax == "cli" else ""
        return f"sampling-bound: {sample:.0%} of time in sampling{waited}; try {' or '.join(advice)}{scale}"
    if learn >= 0.6:
        advice = _learner_advice(facts, syntax)
        todo = (
            f"try {' or '.join(advice)}" if advice else "no knob of this algorithm trades learning per sample"
        )
        return f"learner-bound: {learn:.0%} of time in learning; {todo}"
    if sync >= 0.3 and f.get("num_rollout_workers", 0) > 0:
        advice = _sync_advice(facts, syntax)
        todo = f"try {' or '.join(advice)}" if advice else "the model's weights are what costs"
        return f"sync-bound: {sync:.0%} of time broadcasting weights; {todo}"
    return f"balanced: {shares}"
