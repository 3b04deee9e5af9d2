"""Frame store of a replay buffer fed compact rows (sampling/frame_rows.py): a ring of frames, each held once,
addressed by absolute frame ids (frame i lives in slot i % frame_capacity while i >= total - frame_capacity).

Rows keep the ids of their two stacks; a row whose oldest frame was overwritten can no longer be rebuilt and
is marked unsampleable (uniform replay redraws it, prioritised replay gives it priority 0). With the default
frame capacity (rows + 1/16) that happens only when episodes or lost stream continuations cost more than one
frame in 16. Frames are reused across batches per stream (worker, env): a batch's first stack of a stream is
matched by content against the stream's last stack already held, so short fragments cost no extra frames.

Checkpoint arrays (npz-friendly, validated on load): frames (held frames, slot order), frame_meta
[frame_capacity, total, k], stream_keys [S] and stream_tails [S, k] (absolute ids)."""

from __future__ import annotations

import numpy as np

from relayrl.core.saved_state import CheckpointError
from relayrl.sampling.frame_rows import FRAME_COLUMNS, REF_COLUMNS, stacks

STATE_KEYS = ("frames", "frame_meta", "stream_keys", "stream_tails")


def default_frame_capacity(rows: int) -> int:
    return rows + rows // 16 + 64


class FrameStore:
    def __init__(self, frame_capacity: int, frame_shape: tuple, dtype, k: int, rows: int):
        self.capacity, self.k = int(frame_capacity), int(k)
        self.frames = np.empty((self.capacity, *frame_shape), dtype)
        self.total = 0  # frames ever written; ids below total - capacity are gone
        self.streams: dict[int, np.ndarray] = {}  # stream -> absolute ids of its last stack
        self.row_ok = np.ones(rows, bool)  # per row slot: both stacks still held
        self.unsampleable = 0
        self._low = np.inf  # lower bound of the oldest frame id a sampleable row needs

    @classmethod
    def for_batch(cls, batch: dict, frame_capacity: int, rows: int) -> FrameStore:
        frames = batch["frames"]
        return cls(frame_capacity, frames.shape[1:], frames.dtype, batch["obs_ref"].shape[1], rows)

    @property
    def floor(self) -> int:
        """The oldest frame id still held."""
        return max(0, self.total - self.capacity)

    # ------------------------------------------------------------------ writing
    def _reuse(self, batch: dict) -> tuple[np.ndarray, np.ndarray]:
        """(canonical local frame, absolute id it reuses or -1) per local frame: a stream's first stack is its
        previous last stack (earlier in this batch, or held here) when the contents match."""
        frames = batch["frames"]
        canon, reused = np.arange(len(frames)), np.full(len(frames), -1, np.int64)
        safe_floor = self.total + len(frames) - self.capacity  # survives this batch's writes
        seen: dict[int, np.ndarray] = {}
        for key, head, tail in zip(batch["frame_streams"], batch["stream_head"], batch["stream_tail"]):
            key = int(key)
            if key in seen:
                prev = seen[key]
                if np.array_equal(frames[head], frames[prev]):
                    canon[head] = canon[prev]
            elif key in self.streams:
                held = self.streams[key]
                if held.min() >= safe_floor and np.array_equal(
                    self.frames[held % self.capacity], frames[head]
                ):
                    canon[head], reused[head] = head, held
            seen[key] = tail
        return canon, reused

    def add(self, batch: dict) -> dict[str, np.ndarray]:
        """Store the batch's new frames; returns its row columns with absolute int64 frame ids."""
        if batch["frames"].shape[1:] != self.frames.shape[1:] or batch["obs_ref"].shape[1] != self.k:
            raise ValueError(
                f"replay frames {batch['frames'].shape[1:]} x {batch['obs_ref'].shape[1]} differ from the "
                f"stored {self.frames.shape[1:]} x {self.k}"
            )
        canon, reused = self._reuse(batch)
        new = (canon == np.arange(len(canon))) & (reused < 0)
        ids = np.where(new, self.total + np.cumsum(new) - 1, reused)[canon]  # absolute id per local frame
        written = np.flatnonzero(new)[-self.capacity :]  # only the newest `capacity` can be held
        self.frames[ids[written] % self.capacity] = batch["frames"][written]
        self.total += int(new.sum())
        for key, tail in zip(batch["frame_streams"], batch["stream_tail"]):
            self.streams[int(key)] = ids[tail]
        floor = self.floor
        self.streams = {k: v for k, v in self.streams.items() if v.min() >= floor}
        rows = {k: v for k, v in batch.items() if k not in FRAME_COLUMNS}
        for name in REF_COLUMNS:
            rows[name] = ids[batch[name]]
        return rows

    def stale_rows(self, columns: dict, slots: np.ndarray, size: int) -> np.ndarray:
        """After rows were written to `slots`: the row slots that just became unsampleable."""
        floor = self.floor
        row_min = np.minimum(columns["obs_ref"][slots].min(1), columns["next_ref"][slots].min(1))
        ok = row_min >= floor
        self.row_ok[slots] = ok
        stale = slots[~ok]
        if ok.any():
            self._low = min(self._low, int(row_min[ok].min()))
        if floor > self._low:  # some held row may need an overwritten frame: look at all of them
            held = np.minimum(columns["obs_ref"][:size].min(1), columns["next_ref"][:size].min(1))
            gone = self.row_ok[:size] & (held < floor)
            self.row_ok[:size] &= ~gone
            stale = np.concatenate([stale, np.flatnonzero(gone)])
            alive = held[self.row_ok[:size]]
            self._low = int(alive.min()) if len(alive) else np.inf
        self.unsampleable = size - int(np.count_nonzero(self.row_ok[:size]))
        return stale

    # ------------------------------------------------------------------ reading
    def rebuild(self, rows: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Sampled rows with obs / next_obs stacks in place of their frame ids."""
        out = {k: v for k, v in rows.items() if k not in REF_COLUMNS}
        out["obs"] = stacks(self.frames, rows["obs_ref"] % self.capacity)
        out["next_obs"] = stacks(self.frames, rows["next_ref"] % self.capacity)
        return out

    # ------------------------------------------------------------------ persistence
    def state(self) -> dict[str, np.ndarray]:
        keys = sorted(self.streams)
        return {
            "frames": self.frames[: min(self.total, self.capacity)],
            "frame_meta": np.array([self.capacity, self.total, self.k], np.int64),
            "stream_keys": np.array(keys, np.int64),
            "stream_tails": np.array([self.streams[k] for k in keys], np.int64).reshape(-1, self.k),
        }

    @classmethod
    def from_state(cls, state: dict, frame_capacity: int, rows: int) -> FrameStore:
        """A store from state() arrays read from a file: refused (CheckpointError naming the field) unless
        every shape, dtype and id fits a store of `frame_capacity` frames."""
        for key in STATE_KEYS:
            if key not in state:
                raise CheckpointError(f"replay state lacks {key!r} (a frame-stacking replay)")
        meta, frames = state["frame_meta"], state["frames"]
        if meta.dtype != np.int64 or meta.shape != (3,):
            raise CheckpointError("replay state frame_meta: allowed: 3 int64 values [capacity, total, k]")
        capacity, total, k = (int(x) for x in meta)
        if capacity != frame_capacity or total < 0 or not 1 < k <= 64:
            raise CheckpointError(
                f"replay state frame_meta = {meta.tolist()}: allowed: capacity {frame_capacity}, total >= 0, "
                f"1 < k <= 64"
            )
        if frames.dtype.kind not in "uif" or frames.ndim < 2 or len(frames) != min(total, capacity):
            raise CheckpointError(
                f"replay state frames: dtype {frames.dtype} shape {frames.shape}: allowed: "
                f"{min(total, capacity)} numeric frames"
            )
        keys, tails = state["stream_keys"], state["stream_tails"]
        if keys.dtype != np.int64 or keys.ndim != 1 or len(np.unique(keys)) != len(keys):
            raise CheckpointError("replay state stream_keys: allowed: distinct int64 values")
        if tails.dtype != np.int64 or tails.shape != (len(keys), k) or not _ids_held(tails, total, capacity):
            raise CheckpointError(
                f"replay state stream_tails: allowed: [{len(keys)}, {k}] int64 frame ids in "
                f"[{max(0, total - capacity)}, {total})"
            )
        store = cls(capacity, frames.shape[1:], frames.dtype, k, rows)
        store.frames[: len(frames)] = frames
        store.total = total
        store.streams = {int(key): tail for key, tail in zip(keys, tails)}
        return store

    def check_rows(self, columns: dict[str, np.ndarray]) -> None:
        """Refuse stored rows whose frame ids are not [rows, k] int64 ids below total."""
        for name in REF_COLUMNS:
            refs = columns.get(name)
            if refs is None or refs.dtype != np.int64 or refs.ndim != 2 or refs.shape[1] != self.k:
                raise CheckpointError(f"replay state col/{name}: allowed: [rows, {self.k}] int64 frame ids")
            if refs.size and not 0 <= refs.min() <= refs.max() < self.total:
                raise CheckpointError(f"replay state col/{name}: allowed: frame ids in [0, {self.total})")


def _ids_held(ids: np.ndarray, total: int, capacity: int) -> bool:
    return not ids.size or (max(0, total - capacity) <= ids.min() and ids.max() < total)
