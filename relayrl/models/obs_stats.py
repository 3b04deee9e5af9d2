"""Running mean and standard deviation of observations for `model.normalize_obs`.

Each worker reports the moments (count, mean, sum of squared deviations) of the observations it stepped
through in a fragment; the driver merges them (Chan, Golub and LeVeque's parallel update, exact for any
split) and writes mean/std into the network's last two weight arrays before each broadcast. So the
statistics travel with the weights: workers, the learner, checkpoints and exported models all normalise
with the same numbers, and a batch is trained with the statistics it was sampled with.
"""

from __future__ import annotations

from typing import Any

import numpy as np

OBS_CLIP = 10.0  # normalised observations are clipped to +-10 (as SB3's VecNormalize and RLlib's filter)

VAR_EPS = 1e-8  # std = sqrt(var + eps): a constant feature gives std ~1e-4, not a division by zero


def moments(x: np.ndarray) -> tuple[int, np.ndarray, np.ndarray]:
    """(count, mean, sum of squared deviations) over the rows of x, in float64."""
    x = np.asarray(x, np.float64)
    if len(x) == 0:
        return 0, np.zeros(x.shape[1:]), np.zeros(x.shape[1:])
    mean = x.mean(axis=0)
    return len(x), mean, ((x - mean) ** 2).sum(axis=0)


class RunningMoments:
    """Merged moments of every observation reported so far."""

    def __init__(self, shape: tuple):
        self.count = 0
        self.mean = np.zeros(shape, np.float64)
        self.m2 = np.zeros(shape, np.float64)

    def merge(self, count: int, mean: np.ndarray, m2: np.ndarray) -> None:
        if count == 0:
            return
        total = self.count + count
        delta = mean - self.mean
        self.mean = self.mean + delta * (count / total)
        self.m2 = self.m2 + m2 + delta**2 * (self.count * count / total)
        self.count = total

    @property
    def std(self) -> np.ndarray:
        if self.count == 0:
            return np.ones_like(self.mean)
        return np.sqrt(self.m2 / self.count + VAR_EPS)

    def state(self) -> dict[str, Any]:
        """JSON-able (floats round-trip exactly through Python's json)."""
        return {"count": self.count, "mean": self.mean.tolist(), "m2": self.m2.tolist()}

    def load(self, state: dict[str, Any]) -> None:
        self.count = int(state["count"])
        self.mean = np.asarray(state["mean"], np.float64).reshape(self.mean.shape)
        self.m2 = np.asarray(state["m2"], np.float64).reshape(self.m2.shape)
