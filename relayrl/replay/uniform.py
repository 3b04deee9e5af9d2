"""Uniform replay: a numpy ring buffer of fixed capacity, columns allocated on the first add. Batches in the
compact layout of stacked frames (sampling/frame_rows.py) keep each frame once in a FrameStore (frames.py)
and come back from sample() as whole obs / next_obs stacks."""

from __future__ import annotations

import numpy as np

from relayrl.replay.frames import STATE_KEYS, FrameStore, default_frame_capacity
from relayrl.sampling.frame_rows import is_compact, row_count


class UniformReplay:
    def __init__(self, capacity: int, seed: int | None = None, frame_capacity: int | None = None):
        if capacity < 1:
            raise ValueError(f"replay capacity = {capacity} is invalid: allowed: an integer >= 1")
        self.capacity = capacity
        self.frame_capacity = frame_capacity or default_frame_capacity(capacity)
        self.rng = np.random.default_rng(seed)
        self.columns: dict[str, np.ndarray] = {}
        self.frames: FrameStore | None = None  # set by the first compact batch
        self.next = 0  # slot the next row goes to
        self.size = 0
        self.added_total = 0
        self._stale = np.zeros(0, np.int64)  # row slots the last write made unsampleable

    def __len__(self) -> int:
        """Rows that can be sampled."""
        return self.size - (self.frames.unsampleable if self.frames is not None else 0)

    def _allocate(self, batch: dict[str, np.ndarray]) -> None:
        self.columns = {k: np.empty((self.capacity,) + v.shape[1:], v.dtype) for k, v in batch.items()}

    def _write(self, batch: dict[str, np.ndarray]) -> np.ndarray:
        """Copy rows into the ring; returns the slots written (oldest rows are overwritten first)."""
        n = row_count(batch)
        if is_compact(batch) or self.frames is not None:
            if not is_compact(batch):
                raise ValueError("replay holds frame-stacked rows: allowed: batches with frames and obs_ref")
            if self.frames is None:
                self.frames = FrameStore.for_batch(batch, self.frame_capacity, self.capacity)
            batch = self.frames.add(batch)
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
        if self.frames is not None:
            self._stale = self.frames.stale_rows(self.columns, slots, self.size)
        return slots

    def add(self, batch: dict[str, np.ndarray]) -> None:
        self._write(batch)

    def _gather(self, indices: np.ndarray) -> dict[str, np.ndarray]:
        rows = {k: v[indices] for k, v in self.columns.items()}
        return rows if self.frames is None else self.frames.rebuild(rows)

    def sample(self, batch_size: int) -> dict[str, np.ndarray]:
        if len(self) == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        indices = self.rng.integers(0, self.size, batch_size)
        if self.frames is not None and self.frames.unsampleable:  # redraw rows whose frames are gone
            redraw = ~self.frames.row_ok[indices]
            while redraw.any():
                indices[redraw] = self.rng.integers(0, self.size, int(redraw.sum()))
                redraw = ~self.frames.row_ok[indices]
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
        if self.frames is not None:
            out.update(self.frames.state())
        return out

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        """Arrays of state(), checked by the caller (core.saved_state.replay_problem); a frame store's arrays
        are checked here (frames.FrameStore.from_state)."""
        capacity, nxt, size, added_total = (int(x) for x in state["meta"])
        if capacity != self.capacity:
            raise ValueError(f"replay state has capacity {capacity}, this buffer {self.capacity}")
        cols = {k[len("col/") :]: v for k, v in state.items() if k.startswith("col/")}
        frames = None
        if any(k in state for k in STATE_KEYS):
            frames = FrameStore.from_state(state, self.frame_capacity, self.capacity)
            frames.check_rows(cols)
        self.next, self.size, self.added_total = nxt, size, added_total
        self.columns = {k: np.empty((self.capacity,) + v.shape[1:], v.dtype) for k, v in cols.items()}
        for k, v in cols.items():
            self.columns[k][: len(v)] = v
        self.frames = frames
        if frames is not None and size:
            self._stale = frames.stale_rows(self.columns, np.arange(size), size)
