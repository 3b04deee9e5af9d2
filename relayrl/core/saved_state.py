"""What a saved state may hold: the checks applied to data read back from files (checkpoints), below every
layer that restores something, so each can refuse what does not fit with one CheckpointError line.

Nothing here trusts the data: counters must be integers in range, RNG states must name a known numpy bit
generator and round-trip exactly, arrays must have the dtypes and shapes of what they fill, and .npz members
are checked from their headers before numpy allocates anything.
"""

from __future__ import annotations

import numbers
import re
import zipfile
from typing import Any

import numpy as np

from relayrl.core.checks import is_int

FORMAT = 1  # the checkpoint format this relayrl writes and reads
MAX_NPZ_MEMBERS = 10_000
_MAX_MESSAGE = 400
_MAX_INT = 2**63 - 1
_ALGO_NAME = re.compile(r"[a-z][a-z0-9_]{0,31}")


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: incomplete, corrupted, malformed, or from an incompatible version.
    The message is one line (whitespace collapsed, long messages cut) and names the file."""

    def __init__(self, message: Any):
        text = " ".join(str(message).split())
        super().__init__(text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "...")


def shown(value: Any, limit: int = 60) -> str:
    """repr(value), cut to `limit` characters: hostile values can be megabytes long."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def cause(exc: BaseException) -> BaseException:
    """The error a Ray actor raised (a RayTaskError wraps it, with a traceback in its message)."""
    inner = getattr(exc, "cause", None)
    return inner if isinstance(inner, BaseException) else exc


def read_npz(path: str, label: str, kinds: str = "biuf") -> dict[str, np.ndarray]:
    """The arrays of an .npz file written by np.savez, checked before numpy allocates anything: members
    stored uncompressed (no zip bomb), each header's dtype of the given kinds (never object: no pickle) and
    its shape no larger than the member's bytes. `label` names the file in errors."""
    problem = f"{label} is not a valid .npz file"
    readers = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            names = [info.filename for info in infos]
            if len(set(names)) != len(names) or len(names) > MAX_NPZ_MEMBERS:
                raise CheckpointError(f"{problem}: duplicate or too many members")
            for info in infos:
                member = f"{problem}: member {shown(info.filename)}"
                if not info.filename.endswith(".npy") or info.compress_type != zipfile.ZIP_STORED:
                    raise CheckpointError(f"{member} is not a stored .npy array")
                with archive.open(info) as fh:
                    version = np.lib.format.read_magic(fh)
                    if version not in readers:
                        raise CheckpointError(f"{member} has .npy version {version}")
                    shape, _, dtype = readers[version](fh)
                if dtype.hasobject or dtype.kind not in kinds or dtype.fields or dtype.subdtype:
                    raise CheckpointError(f"{member} has dtype {dtype}: allowed kinds {kinds!r} (dtype.kind)")
                if int(np.prod(shape, dtype=np.float64)) * dtype.itemsize > info.file_size:
                    raise CheckpointError(f"{member} claims shape {shape}: over its {info.file_size} bytes")
        with np.load(path, allow_pickle=False) as data:
            return {name: data[name] for name in data.files}
    except CheckpointError:
        raise
    except (
        OSError,
        EOFError,
        ValueError,
        KeyError,
        TypeError,
        zipfile.BadZipFile,
        NotImplementedError,
    ) as exc:
        raise CheckpointError(f"{problem}: {type(exc).__name__}: {exc}") from None


# ---------------------------------------------------------------------------------------------- state.json
_STATE_KEYS = {
    "format",
    "relayrl_version",
    "algo",
    "iteration",
    "timesteps_total",
    "time_total_s",
    "weights_version",
    "rng",
    "episodes",
    "workers",
    "obs_moments",
    "extra",
}


_WORKER_KEYS = {
    "obs",
    "lives",
    "prev_done",
    "ep_return",
    "ep_length",
    "disc_return",
    "return_moments",
    "policy_rng",
    "env",
}


# numpy bit generators a checkpoint may name (never getattr(np.random, <a name from a file>))
BIT_GENERATORS = {
    cls.__name__: cls
    for cls in (np.random.PCG64, np.random.PCG64DXSM, np.random.MT19937, np.random.Philox, np.random.SFC64)
}


def _is_real(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def count_problem(value: Any) -> str | None:
    ok = is_int(value) and 0 <= value <= _MAX_INT
    return None if ok else f"= {shown(value)}: allowed: an integer >= 0"


def rng_state_problem(state: Any, bit_generator: str | None = None) -> str | None:
    """None when `state` is a bit-generator state numpy takes back exactly (of `bit_generator` if given)."""
    allowed = (
        f"allowed: a numpy {bit_generator or '/'.join(BIT_GENERATORS)} bit-generator state "
        f"{{'bit_generator': ..., 'state': ...}}"
    )
    name = state.get("bit_generator") if isinstance(state, dict) else None
    if not isinstance(name, str) or name not in BIT_GENERATORS:
        return f"= {shown(state)}: {allowed}"
    if bit_generator is not None and state["bit_generator"] != bit_generator:
        return f"names {shown(state['bit_generator'])}: {allowed}"
    trial = BIT_GENERATORS[state["bit_generator"]]()
    try:
        trial.state = state
        same = _same_state(trial.state, state) and state.get("has_uint32", 0) in (0, 1)
    except (TypeError, ValueError, KeyError, OverflowError, IndexError, AttributeError):
        same = False
    return None if same else f"= {shown(state)}: {allowed}"


def _same_state(a: Any, b: Any) -> bool:
    """Equal as JSON would write them (numpy hands arrays back for MT19937's key)."""
    if isinstance(a, np.ndarray):
        a = a.tolist()
    if isinstance(a, dict):
        return isinstance(b, dict) and set(a) == set(b) and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same_state(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def state_problem(state: dict) -> str | None:
    """The schema of state.json's top level (worker and algorithm-specific parts are checked where they are
    restored, against the live objects): None, or what is wrong and what is allowed."""
    if set(state) != _STATE_KEYS:
        return f"keys {shown(sorted(map(str, state)), 200)}: allowed: exactly {sorted(_STATE_KEYS)}"
    if not is_int(state["format"]) or state["format"] != FORMAT:
        return f"format = {shown(state['format'])}: allowed: {FORMAT}"
    if not isinstance(state["algo"], str) or not _ALGO_NAME.fullmatch(state["algo"]):
        return f"algo = {shown(state['algo'])}: allowed: an algorithm name such as 'ppo'"
    for key in ("iteration", "timesteps_total", "weights_version"):
        problem = count_problem(state[key])
        if problem is not None:
            return f"{key} {problem}"
    t = state["time_total_s"]
    if not _is_real(t) or not 0 <= t < float("inf"):
        return f"time_total_s = {shown(t)}: allowed: a finite number >= 0"
    problem = rng_state_problem(state["rng"], "PCG64")
    if problem is not None:
        return f"rng {problem}"
    problem = _episodes_problem(state["episodes"])
    if problem is not None:
        return f"episodes: {problem}"
    workers = state["workers"]
    if workers is not None and not (
        isinstance(workers, list)
        and len(workers) <= MAX_NPZ_MEMBERS
        and all(isinstance(w, dict) and set(w) <= _WORKER_KEYS for w in workers)
    ):
        return f"workers: allowed: null or a list of worker states with the keys {sorted(_WORKER_KEYS)}"
    problem = moments_problem(state["obs_moments"], None) if state["obs_moments"] is not None else None
    if problem is not None:
        return f"obs_moments: {problem}"
    if not isinstance(state["extra"], dict):
        return f"extra = {shown(state['extra'])}: allowed: an object"
    return None


def _episodes_problem(episodes: Any) -> str | None:
    if not isinstance(episodes, dict) or set(episodes) != {"returns", "lengths", "total"}:
        return "allowed: an object with the keys 'returns', 'lengths' and 'total'"
    returns, lengths = episodes["returns"], episodes["lengths"]
    if not isinstance(returns, list) or not all(_is_real(r) and abs(r) < float("inf") for r in returns):
        return "returns: allowed: a list of finite numbers"
    if not isinstance(lengths, list) or len(lengths) != len(returns) or any(map(count_problem, lengths)):
        return "lengths: allowed: a list of integers >= 0, one per return"
    problem = count_problem(episodes["total"])
    return None if problem is None else f"total {problem}"


def moments_problem(state: Any, size: int | None) -> str | None:
    """A RunningMoments.state() of `size` values per statistic (any size when None)."""
    allowed = "allowed: {'count': integer >= 0, 'mean': numbers, 'm2': numbers >= 0} of one shape"
    if not isinstance(state, dict) or set(state) != {"count", "mean", "m2"} or count_problem(state["count"]):
        return allowed
    try:
        mean, m2 = np.asarray(state["mean"], np.float64), np.asarray(state["m2"], np.float64)
    except (TypeError, ValueError, OverflowError):
        return allowed
    if mean.shape != m2.shape or (size is not None and mean.size != size):
        return f"{allowed} ({size} values each)"
    if not (np.isfinite(mean).all() and np.isfinite(m2).all() and (m2 >= 0).all()):
        return allowed
    return None


# ---------------------------------------------------------------------------------------------- replay.npz
def replay_problem(
    arrays: dict[str, np.ndarray],
    capacity: int,
    columns: dict[str, tuple[tuple, Any]],
    prioritized: bool,
    num_actions: int | None = None,
) -> str | None:
    """A UniformReplay / PrioritizedReplay .state() for a buffer of `capacity` rows holding `columns`
    ({name: (row shape, dtype)}): the keys, dtypes and shapes it must have, and values a buffer can hold
    (discrete actions below num_actions, finite floats, positive priorities)."""
    expected = {"meta"} | ({"priorities", "prio_meta"} if prioritized else set())
    frame_layout = "frame_meta" in arrays  # each frame once (replay/frames.py checks the frames themselves)
    if frame_layout and isinstance(columns := _frame_columns(arrays, columns), str):
        return columns
    expected |= {"frames", "frame_meta", "stream_keys", "stream_tails"} if frame_layout else set()
    stored = {k for k in arrays if k.startswith("col/")}
    if set(arrays) - stored != expected:
        return f"keys {shown(sorted(arrays), 200)}: allowed: {sorted(expected)} and col/<name> columns"
    meta = arrays["meta"]
    if meta.dtype != np.int64 or meta.shape != (4,):
        return "meta: allowed: 4 int64 values [capacity, next, size, added_total]"
    cap, nxt, size, added = (int(x) for x in meta)
    if cap != capacity or not (0 <= nxt < cap and 0 <= size <= cap and added >= size):
        return (
            f"meta = {meta.tolist()}: allowed: capacity {capacity}, 0 <= next < capacity, "
            f"0 <= size <= capacity"
        )
    names = {k[len("col/") :] for k in stored}
    if names != set(columns) and (names or size):
        return f"columns {sorted(names)}: allowed: {sorted(columns)}"
    for name in names:
        col, (row_shape, dtype) = arrays[f"col/{name}"], columns[name]
        want = (size, *row_shape)
        if col.dtype != np.dtype(dtype) or col.shape != want:
            return f"col/{name}: dtype {col.dtype} shape {col.shape}: allowed: {np.dtype(dtype)} {want}"
        if col.dtype.kind == "f" and not np.isfinite(col).all():
            return f"col/{name}: allowed: finite values"
    if (
        num_actions is not None
        and "actions" in names
        and not ((arrays["col/actions"] >= 0) & (arrays["col/actions"] < num_actions)).all()
    ):
        return f"col/actions: allowed: integers from 0 to {num_actions - 1}"
    if prioritized:
        prio, prio_meta = arrays["priorities"], arrays["prio_meta"]
        positive = (prio >= 0) if frame_layout else (prio > 0)  # 0: a row whose frames were overwritten
        if prio.dtype != np.float64 or prio.shape != (size,) or not (np.isfinite(prio) & positive).all():
            return f"priorities: allowed: {size} finite float64 values {'>= 0' if frame_layout else '> 0'}"
        if (
            prio_meta.dtype != np.float64
            or prio_meta.shape != (1,)
            or not (np.isfinite(prio_meta) & (prio_meta > 0)).all()
        ):
            return "prio_meta: allowed: one finite float64 value > 0"
    return None


def _frame_columns(arrays: dict[str, np.ndarray], columns: dict[str, tuple[tuple, Any]]) -> dict | str:
    """The stored columns of a frame-stacking replay whose `obs` are stacks of k frames on the last axis:
    obs / next_obs become [k] int64 frame ids; a problem string when the frames do not fit the obs."""
    obs_shape, obs_dtype = columns["obs"]
    k = obs_shape[-1] if obs_shape else 0
    meta, frames = arrays["frame_meta"], arrays.get("frames")
    if meta.dtype != np.int64 or meta.shape != (3,) or int(meta[2]) != k or k < 2:
        return f"frame_meta: allowed: 3 int64 values [capacity, total, {k}] (obs are stacks of {k} frames)"
    if frames is None or frames.dtype != np.dtype(obs_dtype) or frames.shape[1:] != tuple(obs_shape[:-1]):
        return f"frames: allowed: [n, {', '.join(map(str, obs_shape[:-1]))}] {np.dtype(obs_dtype)} frames"
    refs = {"obs_ref": ((k,), np.int64), "next_ref": ((k,), np.int64)}
    return {name: c for name, c in columns.items() if name not in ("obs", "next_obs")} | refs
