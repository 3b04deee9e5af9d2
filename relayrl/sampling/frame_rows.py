"""Replay rows that carry each frame of stacked observations once (Atari: (84, 84, 4) uint8 stacks of 4 frames
on the last axis).

Storing `obs` and `next_obs` as whole stacks costs 2k frames per transition; consecutive stacks of an episode
share k-1 frames. A compact batch has the row columns (actions, rewards, discounts) plus

    obs_ref, next_ref  [R, k] int32   each stack as indices into `frames`, oldest frame first
    frames             [F, ...]       the distinct frames (one observation's shape without the stack axis)
    frame_streams      [S] int64      one stream per (worker, env): the replay reuses frames across fragments
    stream_head/tail   [S, k] int32   the first / last stack of each stream's segment in this batch

Sharing is detected by content (obs[t][..., :-1] == obs[t-1][..., 1:], and equal neighbouring frames inside a
stack, e.g. the reset frame a stacking wrapper repeats), so the rebuilt stacks are bit-exact whatever the
wrapper's padding rule. `stacks` rebuilds them with one fancy index."""

from __future__ import annotations

import numpy as np

REF_COLUMNS = ("obs_ref", "next_ref")
FRAME_COLUMNS = ("frames", "frame_streams", "stream_head", "stream_tail")
_LOCAL_REFS = ("obs_ref", "next_ref", "stream_head", "stream_tail")  # indices into this batch's frames


def is_compact(batch: dict) -> bool:
    return "frames" in batch


def row_count(batch: dict) -> int:
    """Rows in a batch of either layout (a compact batch's frames column has another length)."""
    if not batch:
        return 0
    return len(batch["obs_ref"]) if is_compact(batch) else len(next(iter(batch.values())))


def _planes(obs_buf: np.ndarray) -> np.ndarray:
    """[T+1, N, k, words]: each frame's bytes contiguous (as uint64 words where they divide evenly), so the
    content comparisons below run over contiguous memory."""
    planes = np.ascontiguousarray(np.moveaxis(obs_buf, -1, 2)).reshape(
        *obs_buf.shape[:2], obs_buf.shape[-1], -1
    )
    raw = planes.view(np.uint8)
    return raw.view(np.uint64) if raw.shape[-1] % 8 == 0 else raw


def _stack_refs(obs_buf: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int, int]]]:
    """refs [T+1, N, k] into a frame list of (t, n, j) sources, each env's stacks in time order."""
    t1, n_envs, k = obs_buf.shape[0], obs_buf.shape[1], obs_buf.shape[-1]
    words = _planes(obs_buf)
    shifted = (words[1:, :, :-1] == words[:-1, :, 1:]).all(axis=(2, 3)).tolist()  # [T][N]
    same_as_left = (words[:, :, 1:] == words[:, :, :-1]).all(axis=3).tolist()  # [T+1][N][k-1]
    refs = np.empty((t1, n_envs, k), np.int64)
    sources: list[tuple[int, int, int]] = []
    for n in range(n_envs):
        prev: list[int] = []
        for t in range(t1):
            row: list[int] = prev[1:] if t > 0 and shifted[t - 1][n] else []
            same = same_as_left[t][n]
            for j in range(len(row), k):
                if j > 0 and same[j - 1]:
                    row.append(row[j - 1])
                else:
                    row.append(len(sources))
                    sources.append((t, n, j))
            refs[t, n] = prev = row
    return refs, sources


def compact_rows(
    obs_buf: np.ndarray, next_index: np.ndarray, keep: np.ndarray, stream_base: int
) -> dict[str, np.ndarray]:
    """The frame columns of n-step rows: obs_buf [T+1, N, ..., k] (the fragment's stacks), next_index [T, N]
    (the bootstrap stack of row (t, n) is obs_buf[next_index[t, n], n]), keep [T*N] (rows kept, t-major).
    Streams are numbered stream_base + env index."""
    t1, n_envs, k = obs_buf.shape[0], obs_buf.shape[1], obs_buf.shape[-1]
    refs, sources = _stack_refs(obs_buf)
    ts, ns, js = np.asarray(sources, np.int64).reshape(-1, 3).T
    rows = (t1 - 1) * n_envs
    return {
        "obs_ref": refs[:-1].reshape(rows, k)[keep].astype(np.int32),
        "next_ref": refs[next_index, np.arange(n_envs)].reshape(rows, k)[keep].astype(np.int32),
        "frames": np.moveaxis(obs_buf, -1, 2)[ts, ns, js],
        "frame_streams": stream_base + np.arange(n_envs, dtype=np.int64),
        "stream_head": refs[0].astype(np.int32),
        "stream_tail": refs[-1].astype(np.int32),
    }


def stream_base(worker_index: int) -> int:
    """Stream ids of a worker's envs: worker_index * 2**20 + env index."""
    return int(worker_index) << 20


def stacks(frames: np.ndarray, refs: np.ndarray) -> np.ndarray:
    """frames [F, ...], refs [B, k] -> stacks [B, ..., k] (one gather, then the stack axis moved last)."""
    return np.ascontiguousarray(np.moveaxis(frames[refs], 1, -1))


def expand(batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """A compact batch in whole-stack layout (obs / next_obs columns), e.g. for a worker's own Q pass."""
    if not is_compact(batch):
        return batch
    out = {k: v for k, v in batch.items() if k not in FRAME_COLUMNS and k not in REF_COLUMNS}
    out["obs"] = stacks(batch["frames"], batch["obs_ref"])
    out["next_obs"] = stacks(batch["frames"], batch["next_ref"])
    return out


def check_refs(batch: dict[str, np.ndarray], where: str) -> None:
    """Refuse a compact batch read from outside (a Redis block) whose references leave its frames."""
    frames = len(batch["frames"])
    if len({len(v) for k, v in batch.items() if k not in FRAME_COLUMNS}) != 1:
        raise ValueError(f"{where}: row columns of different lengths: allowed: one length")
    for name in REF_COLUMNS:
        refs = batch.get(name)
        if (
            refs is None
            or refs.ndim != 2
            or refs.dtype.kind not in "iu"
            or (refs.size and not 0 <= refs.min() <= refs.max() < frames)
        ):
            raise ValueError(f"{where}: {name}: allowed: [rows, k] integers in [0, {frames})")


def concat(batches: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Concatenate batches column by column; compact batches' references are shifted to the joint frames."""
    if len(batches) == 1:
        return batches[0]
    if not is_compact(batches[0]):
        return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}
    offsets = np.cumsum([0] + [len(b["frames"]) for b in batches[:-1]])
    out = {}
    for key in batches[0]:
        shift = key in _LOCAL_REFS
        out[key] = np.concatenate([b[key] + off if shift else b[key] for b, off in zip(batches, offsets)])
    return out


def compact_transitions(
    obs_buf: np.ndarray,
    act_buf: np.ndarray,
    returns: np.ndarray,
    discounts: np.ndarray,
    next_index: np.ndarray,
    keep: np.ndarray,
    spec: dict[str, tuple[tuple, type]],
    worker_index: int,
) -> dict[str, np.ndarray]:
    """RolloutWorker._transitions' rows in compact layout: the row columns of `spec` (batch_spec) other than
    obs / next_obs, cast to its dtypes, then the frame columns (frames in the spec's obs dtype). obs_ref
    comes first: a batch's length is its first column's."""
    rows = len(keep)
    columns = {
        "actions": act_buf.reshape(rows, *act_buf.shape[2:])[keep],
        "rewards": returns.reshape(-1)[keep],
        "discounts": discounts.reshape(-1)[keep],
    }
    compact = compact_rows(obs_buf, next_index, keep, stream_base(worker_index))
    compact["frames"] = compact["frames"].astype(spec["obs"][1], copy=False)
    cast = {k: columns[k].astype(dtype, copy=False) for k, (_, dtype) in spec.items() if k in columns}
    return {"obs_ref": compact.pop("obs_ref"), **cast, **compact}
