"""Plain, pickle-free snapshots of live Python objects (environments, RNGs, accumulators) as JSON.

`capture(obj)` walks an object's attributes and keeps what can be restored exactly: numpy arrays, numbers,
strings, None, numpy Generators (their bit-generator state), and nested gymnasium envs / wrappers / lists
of them. `restore(obj, snapshot)` writes those values back into an object built the same way, refusing
(CheckpointError) anything else: a snapshot is data read from a file. This covers
envs whose state is plain numpy (classic control, toy text); an env holding native handles (Box2D, MuJoCo)
is reported by `capture` in `skipped` and cannot be resumed bit-exactly.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from relayrl.core.saved_state import (
    BIT_GENERATORS,
    CheckpointError,
    moments_problem,
    rng_state_problem,
    shown,
)

_SCALARS = (bool, int, float, str, type(None))


def encode(value: Any) -> Any:
    """JSON-able form of a plain value (ndarray -> tagged list, numpy scalar -> Python scalar)."""
    if isinstance(value, np.ndarray):
        data = value.astype(str) if value.dtype.kind == "S" else value  # byte strings (e.g. FrozenLake's map)
        return {"__ndarray__": data.tolist(), "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        return {"__npscalar__": value.item(), "dtype": value.dtype.str}
    if isinstance(value, np.random.Generator):
        return {"__generator__": value.bit_generator.state}
    if isinstance(value, dict):
        return {"__dict__": {str(k): encode(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)) and all(
        isinstance(v, _SCALARS + (np.generic, np.ndarray)) for v in value
    ):
        return {"__seq__": [encode(v) for v in value], "tuple": isinstance(value, tuple)}
    return value


def _plain(value: Any) -> bool:
    if isinstance(value, _SCALARS + (np.ndarray, np.generic, np.random.Generator)):
        return not (isinstance(value, np.ndarray) and value.dtype == object)
    if isinstance(value, (list, tuple)):
        return all(isinstance(v, _SCALARS + (np.generic, np.ndarray)) for v in value)
    return False


def _children(obj: Any) -> dict[str, Any]:
    """Nested envs to walk into: wrapped envs, vector envs' sub-envs."""
    out = {}
    for key, value in vars(obj).items():
        if isinstance(value, (gym.Env, gym.vector.VectorEnv)):
            out[key] = value
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, gym.Env) for v in value):
            out[key] = list(value)
    return out


def _static(value: Any) -> bool:
    """Configuration, not state: spaces, specs, enums, classes, functions."""
    import enum
    import types

    from gymnasium.envs.registration import EnvSpec

    if isinstance(value, (list, tuple)) and value and all(callable(v) for v in value):
        return True  # e.g. a vector env's env_fns
    return isinstance(
        value, (gym.Space, EnvSpec, enum.Enum, type, types.ModuleType, types.FunctionType, types.MethodType)
    ) or (isinstance(value, dict) and not value)


def capture(obj: Any, path: str = "env") -> dict:
    """{"values": {attr: encoded}, "children": {attr: snapshot | [snapshots]}, "skipped": [paths]}."""
    values, children, skipped = {}, {}, []
    nested = _children(obj)
    for key, value in vars(obj).items():
        if key in nested:
            continue
        if isinstance(value, dict) and all(_plain(v) for v in value.values()):
            values[key] = encode(value)
        elif _plain(value):
            values[key] = encode(value)
        elif not _static(value) and not callable(value) and key != "metadata":
            skipped.append(f"{path}.{key}")
    for key, child in nested.items():
        if isinstance(child, list):
            children[key] = [capture(c, f"{path}.{key}[{i}]") for i, c in enumerate(child)]
            skipped += [s for snap in children[key] for s in snap.pop("skipped")]
        else:
            children[key] = capture(child, f"{path}.{key}")
            skipped += children[key].pop("skipped")
    return {"values": values, "children": children, "skipped": skipped}


def restore(obj: Any, snapshot: Any, path: str = "env") -> None:
    """Write a capture() snapshot back into `obj`, built the same way. The snapshot is data from a file: only
    attributes the object already holds as plain values (what capture keeps) are written, each with the
    type, dtype and shape of the value it replaces; everything is checked before anything is written.
    Raises CheckpointError naming the attribute path."""
    writes: list[tuple[Any, str, Any]] = []
    _plan(obj, snapshot, path, writes)
    for target, key, value in writes:
        setattr(target, key, value)


def _plan(obj: Any, snapshot: Any, path: str, writes: list) -> None:
    if (
        not isinstance(snapshot, dict)
        or not set(snapshot) <= {"values", "children", "skipped"}
        or not all(isinstance(snapshot.get(k, {}), dict) for k in ("values", "children"))
    ):
        raise CheckpointError(f"{path}: allowed: an env snapshot {{'values': {{...}}, 'children': {{...}}}}")
    attrs, nested = vars(obj), _children(obj)
    for key, encoded in snapshot.get("values", {}).items():
        current = attrs.get(key, _MISSING)
        own = current is not _MISSING and key not in nested and not key.startswith("__")
        plain_dict = isinstance(current, dict) and all(_plain(v) for v in current.values())
        if own and (_plain(current) or plain_dict):
            value = conform(current, encoded, f"{path}.{key}")
        elif own and encoded is None and not _static(current) and not callable(current) and key != "metadata":
            value = None  # state capture() skips now (e.g. a checker's cached reset data) was None when saved
        else:
            raise CheckpointError(
                f"{path}.{shown(key)}: not a plain attribute of {type(obj).__name__}: a "
                f"snapshot only writes the attributes capture() keeps"
            )
        if value is not current:
            writes.append((obj, key, value))
    for key, child in snapshot.get("children", {}).items():
        if key not in nested:
            raise CheckpointError(f"{path}.{shown(key)}: not a nested env of {type(obj).__name__}")
        target = nested[key]
        if isinstance(target, list):
            if not isinstance(child, list) or len(child) != len(target):
                raise CheckpointError(f"{path}.{key}: allowed: a list of {len(target)} env snapshots")
            for i, (sub, snap) in enumerate(zip(target, child)):
                _plan(sub, snap, f"{path}.{key}[{i}]", writes)
        else:
            _plan(target, child, f"{path}.{key}", writes)


_MISSING = object()


def conform(current: Any, encoded: Any, path: str) -> Any:
    """The value `encoded` (an encode() form read from a file) decodes to, when it can replace `current`:
    an array of the same dtype and shape, a numpy scalar of the same dtype, a new Generator from a state for
    the same bit generator (a whitelisted one where the value is None), a dict with the same keys, a list or
    tuple of the same length, a string for a string, a bool for a bool; a number or None for a number or None
    (gymnasium marks 'not yet' with None). Never writes anything. Raises CheckpointError naming `path`."""

    def refuse(allowed: str) -> CheckpointError:
        return CheckpointError(f"{path} = {shown(encoded)}: allowed: {allowed}")

    if isinstance(current, np.ndarray):
        if not (
            isinstance(encoded, dict)
            and set(encoded) == {"__ndarray__", "dtype", "shape"}
            and encoded["dtype"] == current.dtype.str
            and encoded["shape"] == list(current.shape)
        ):
            raise refuse(f"an array of dtype {current.dtype.str} and shape {list(current.shape)}")
        try:
            value = np.array(encoded["__ndarray__"], dtype=current.dtype)
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is None or value.shape != current.shape:
            raise refuse(f"an array of dtype {current.dtype.str} and shape {list(current.shape)}")
        return value
    if isinstance(current, np.random.Generator) or (
        current is None and isinstance(encoded, dict) and set(encoded) == {"__generator__"}
    ):
        # a fresh Generator carrying the state: nothing is written before the whole snapshot is checked
        state = encoded.get("__generator__") if isinstance(encoded, dict) and len(encoded) == 1 else None
        name = None if current is None else type(current.bit_generator).__name__
        problem = rng_state_problem(state, name)
        if problem is not None:
            raise CheckpointError(f"{path} {problem}")
        generator = np.random.Generator(BIT_GENERATORS[state["bit_generator"]]())
        generator.bit_generator.state = state
        return generator
    if isinstance(current, dict):
        items = encoded["__dict__"] if _tagged(encoded, {"__dict__"}) else None
        if not isinstance(items, dict) or set(items) != {str(k) for k in current}:
            raise refuse(f"a mapping with the keys {sorted(map(str, current))}")
        return {k: conform(v, items[str(k)], f"{path}[{k!r}]") for k, v in current.items()}
    if isinstance(current, (list, tuple)):
        items = encoded["__seq__"] if _tagged(encoded, {"__seq__", "tuple"}) else None
        if (
            not isinstance(items, list)
            or len(items) != len(current)
            or encoded["tuple"] is not isinstance(current, tuple)
        ):
            raise refuse(f"a {type(current).__name__} of {len(current)} items")
        values = [conform(c, e, f"{path}[{i}]") for i, (c, e) in enumerate(zip(current, items))]
        return tuple(values) if isinstance(current, tuple) else values
    return _scalar(current, encoded, path, refuse)


def _scalar(current: Any, encoded: Any, path: str, refuse) -> Any:
    if isinstance(current, str) or isinstance(current, bool):
        if type(encoded) is not type(current):
            raise refuse(f"a {type(current).__name__}")
        return encoded
    if isinstance(encoded, dict):  # a numpy scalar: its dtype must be the current one, or numeric for None
        dtype = current.dtype.str if isinstance(current, np.generic) else None
        numeric = (
            set(encoded) == {"__npscalar__", "dtype"}
            and isinstance(encoded["dtype"], str)
            and encoded["dtype"] in _SCALAR_DTYPES
        )
        if (
            not numeric
            or (dtype is not None and encoded["dtype"] != dtype)
            or not isinstance(encoded["__npscalar__"], (bool, int, float))
        ):
            raise refuse(f"a numpy scalar of dtype {dtype or 'int/uint/float'}")
        try:
            return np.dtype(encoded["dtype"]).type(encoded["__npscalar__"])
        except (TypeError, ValueError, OverflowError):
            raise refuse(f"a numpy scalar of dtype {encoded['dtype']}") from None
    if current is None and isinstance(encoded, bool):
        return encoded
    if not (encoded is None or _is_number(encoded)):
        raise refuse("a number or null")
    return encoded


# numpy scalar dtypes a snapshot may create where the live value is a number or None
_SCALAR_DTYPES = {
    np.dtype(t).str
    for t in (
        np.bool_,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.float16,
        np.float32,
        np.float64,
    )
}


def _tagged(encoded: Any, keys: set[str]) -> bool:
    return isinstance(encoded, dict) and set(encoded) == keys


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def restore_moments(moments: Any, state: Any, path: str) -> None:
    """Load a RunningMoments.state() read from a file into `moments` (same shape); else CheckpointError."""
    problem = moments_problem(state, moments.mean.size)
    if problem is not None:
        raise CheckpointError(f"{path}: {problem}")
    moments.load(state)


def set_generator_state(rng: np.random.Generator, state: Any, path: str = "rng") -> None:
    """Set an RNG in place from a state read from a file: one numpy takes back exactly, for the same bit
    generator; else CheckpointError naming `path`."""
    problem = rng_state_problem(state, type(rng.bit_generator).__name__)
    if problem is not None:
        raise CheckpointError(f"{path} {problem}")
    rng.bit_generator.state = state
