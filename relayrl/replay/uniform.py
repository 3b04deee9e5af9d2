"""Uniform replay: a numpy ring buffer of fixed capacity, columns allocated on the first add."""

from __future__ import annotations

import numpy as np


class UniformReplay:
    def __init__(self, capacity: int, seed: int | None = None):
        if capacity < 1:
            raise ValueError(f"replay capacity = {capacity} is invalid: allowed: an integer >= 1")
        self.capacity = capacity
        self.rng = np.random.default_rng(seed)
        self.columns: dict[str, np.ndarray] = {}
        self.next = 0  # slot the next row goes to
        self.size = 0
        self.added_total = 0

    def __len__(self) -> int:
        return self.size

    def _allocate(self, batch: dict[str, np.ndarray]) -> None:
        self.columns = {k: np.empty((self.capacity,) + v.shape[1:], v.dtype) for k, v in batch.items()}

    def _write(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Copy rows into the ring; returns the slots written (oldest rows are overwritten first)."""
        n = len(next(iter(batch.values())))
        if not self.columns:
            self._allocate(batch)
        if set(batch) != set(self.columns):
            raise ValueError(f"replay columns {sorted(batch)} differ from the stored {sorted(self.columns)}")
        if n > self.capacity:  # only the newest `capacity` rows can survive
            batch = {k: v[-self.capacity :] for k, v in batch.items()}
            self.added_total += n - self.capacity
            n = self.capacity
        slots = (self.next + np.arange(n)) % self.capacity
        for k, v in batch.items():
            self.columns[k][slots] = v
        self.next = int((self.next + n) % self.capacity)
        self.size = min(self.size + n, self.capacity)
        self.added_total += n
        return slots

    def add(self, batch: dict[str, np.ndarray]) -> None:
        self._write(batch)

    def _gather(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        return {k: v[indices] for k, v in self.columns.items()}

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        indices = self.rng.integers(0, self.size, batch_size)
        out = self._gather(indices)
        out["indices"] = indices
        out["weights"] = np.ones(batch_size, np.float32)
        return out

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        """Uniform replay keeps no priorities."""

    # ------------------------------------------------------------------ persistence (npz-friendly)
    def state(self) -> dict[str, np.ndarray]:
        out = {
            f"col/{k}": v[: self.size] if self.size < self.capacity else v for k, v in self.columns.items()
        }
        out["meta"] = np.array([self.capacity, self.next, self.size, self.added_total], np.int64)
        return out

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        capacity, self.next, self.size, self.added_total = (int(x) for x in state["meta"])
        if capacity != self.capacity:
            raise ValueError(f"replay state has capacity {capacity}, this buffer {self.capacity}")
        cols = {k[len("col/") :]: v for k, v in state.items() if k.startswith("col/")}
        self.columns = {k: np.empty((self.capacity,) + v.shape[1:], v.dtype) for k, v in cols.items()}
        for k, v in cols.items():
            self.columns[k][: len(v)] = v
