"""Timers for the phases of an iteration and the rolling episode statistics behind the result dict."""
from __future__ import annotations

import collections
import time
from contextlib import contextmanager
from typing import Iterator

import numpy as np

from relayrl.types import Fragment

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

    def add(self, fragment: Fragment) -> None:
        self.returns.extend(fragment.episode_returns.tolist())
        self.lengths.extend(fragment.episode_lengths.tolist())
        self.episodes_total += len(fragment.episode_returns)

    def summary(self) -> dict[str, float]:
        if not self.returns:
            nan = float("nan")
            return {"episode_reward_mean": nan, "episode_reward_min": nan, "episode_reward_max": nan,
                    "episode_len_mean": nan, "episodes_total": self.episodes_total}
        r = np.asarray(self.returns)
        return {
            "episode_reward_mean": float(r.mean()),
            "episode_reward_min": float(r.min()),
            "episode_reward_max": float(r.max()),
            "episode_len_mean": float(np.mean(self.lengths)),
            "episodes_total": self.episodes_total,
        }
