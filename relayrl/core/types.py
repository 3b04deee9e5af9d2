"""What flows between workers and the learner: fragments of experience stamped with a weights version."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class Fragment:
    """Experience from one worker's sample() call: contiguous numpy columns (zero-copy through Ray's
    object store), the weights version it was sampled with, and the episodes it completed."""

    data: dict[str, np.ndarray]
    version: int
    worker_index: int
    env_steps: int
    episode_returns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float32))
    episode_lengths: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sample_time_s: float = 0.0  # wall time of the sample() call on the worker
    cpu_time_s: float = 0.0  # CPU time the worker process used meanwhile (all its threads)
    obs_moments: tuple | None = None  # (count, mean, m2) of the observations acted on (model.normalize_obs)

    def __len__(self) -> int:
        return len(next(iter(self.data.values()))) if self.data else 0


def concat_fragments(fragments: list[Fragment]) -> dict[str, np.ndarray]:
    """One training batch: each column concatenated across fragments."""
    if len(fragments) == 1:
        return fragments[0].data
    keys = fragments[0].data.keys()
    return {k: np.concatenate([f.data[k] for f in fragments]) for k in keys}
