"""Plain, pickle-free snapshots of live Python objects (environments, RNGs, accumulators) as JSON.

`capture(obj)` walks an object's attributes and keeps what can be restored exactly: numpy arrays, numbers,
strings, None, numpy Generators (their bit-generator state), and nested gymnasium envs / wrappers / lists
of them. `restore(obj, snapshot)` writes those values back into an object built the same way. This covers
envs whose state is plain numpy (classic control, toy text); an env holding native handles (Box2D, MuJoCo)
is reported by `capture` in `skipped` and cannot be resumed bit-exactly.
"""
from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np

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
    if isinstance(value, (list, tuple)) and all(isinstance(v, _SCALARS + (np.generic, np.ndarray)) for v in value):
        return {"__seq__": [encode(v) for v in value], "tuple": isinstance(value, tuple)}
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return np.array(value["__ndarray__"], dtype=np.dtype(value["dtype"])).reshape(value["shape"])
        if "__npscalar__" in value:
            return np.dtype(value["dtype"]).type(value["__npscalar__"])
        if "__dict__" in value:
            return {k: decode(v) for k, v in value["__dict__"].items()}
        if "__seq__" in value:
            items = [decode(v) for v in value["__seq__"]]
            return tuple(items) if value["tuple"] else items
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
    return isinstance(value, (gym.Space, EnvSpec, enum.Enum, type, types.ModuleType, types.FunctionType,
                              types.MethodType)) or (isinstance(value, dict) and not value)


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


def restore(obj: Any, snapshot: dict) -> None:
    for key, value in snapshot["values"].items():
        decoded = decode(value)
        current = getattr(obj, key, None)
        if isinstance(current, np.random.Generator) and isinstance(decoded, dict) and "__generator__" in value:
            current.bit_generator.state = value["__generator__"]
        elif isinstance(value, dict) and "__generator__" in value:
            generator = np.random.Generator(getattr(np.random, value["__generator__"]["bit_generator"])())
            generator.bit_generator.state = value["__generator__"]
            setattr(obj, key, generator)
        else:
            setattr(obj, key, decoded)
    for key, child in snapshot["children"].items():
        target = getattr(obj, key)
        if isinstance(child, list):
            for sub, snap in zip(target, child):
                restore(sub, snap)
        else:
            restore(target, child)


def dumps(snapshot: Any) -> str:
    return json.dumps(snapshot)


def generator_state(rng: np.random.Generator) -> dict:
    return rng.bit_generator.state


def set_generator_state(rng: np.random.Generator, state: dict) -> None:
    rng.bit_generator.state = state
