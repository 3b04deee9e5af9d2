"""Value checks for config fields. A check returns None when the value is fine, else a sentence
saying what is allowed (the config adds the field name and the value)."""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable
from typing import Any

Check = Callable[[Any], str | None]


def is_int(v: Any) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool) and v == v  # v == v rejects NaN


# No integer field means more than this; a larger value is a typo that would only fail later, deep inside
# numpy or TensorFlow (an int32 index or shape).
MAX_INT = 2**31 - 1
MAX_BATCH = 10_000_000  # env steps or replay rows per iteration
MAX_WIDTH = 65_536  # units of a layer, filters, kernel sizes: beyond it a network is a typo (or an attack)
MAX_LAYERS = 64
MAX_ENVS = 65_536  # envs per worker


def integer(low: int | None = None, high: int | None = None) -> Check:
    def check(v: Any) -> str | None:
        if not is_int(v) or (low is not None and v < low) or (high is not None and v > high):
            return "allowed: an integer" + _bounds(low, high)
        if v > MAX_INT:
            return "allowed: an integer" + _bounds(low, MAX_INT)
        return None

    return check


def batch_size() -> Check:
    return integer(1, MAX_BATCH)


def number(low: float | None = None, high: float | None = None, strict: bool = False) -> Check:
    """A finite real number in [low, high] (or (low, high] when strict)."""

    def check(v: Any) -> str | None:
        bad = not _is_number(v) or abs(v) == float("inf")
        bad = (
            bad or (low is not None and (v <= low if strict else v < low)) or (high is not None and v > high)
        )
        if bad:
            return "allowed: a finite number" + _bounds(low, high, strict)
        return None

    return check


def _bounds(low: Any, high: Any, strict: bool = False) -> str:
    parts = []
    if low is not None:
        parts.append(f"{'>' if strict else '>='} {low}")
    if high is not None:
        parts.append(f"<= {high}")
    return (" " + " and ".join(parts)) if parts else ""


def one_of(*choices: Any) -> Check:
    def check(v: Any) -> str | None:
        return None if v in choices else "allowed: one of " + ", ".join(repr(c) for c in choices)

    return check


def boolean() -> Check:
    return lambda v: None if isinstance(v, bool) else "allowed: true or false"


def string() -> Check:
    return lambda v: None if isinstance(v, str) and v else "allowed: a non-empty string"


def mapping() -> Check:
    return lambda v: None if isinstance(v, dict) else "allowed: a mapping (dict) of keyword arguments"


def optional(inner: Check) -> Check:
    def check(v: Any) -> str | None:
        if v is None:
            return None
        problem = inner(v)
        return None if problem is None else problem + ", or null"

    return check


def auto_or(inner: Check) -> Check:
    def check(v: Any) -> str | None:
        if v == "auto":
            return None
        problem = inner(v)
        return None if problem is None else problem + ", or 'auto'"

    return check


def env_spec() -> Check:
    def check(v: Any) -> str | None:
        if v is None or (isinstance(v, str) and v) or callable(v):
            return None
        return "allowed: a gymnasium env id (str) or a callable f(env_config) -> gymnasium.Env"

    return check


WRAPPER_NAME = re.compile(r"^[A-Za-z_][\w.]*(:[A-Za-z_][\w.]*)?$")


def wrapper_list() -> Check:
    """[{'wrapper': NAME, 'kwargs': {...}}, ...]: NAME a gymnasium.wrappers class or 'module:Class'."""
    allowed = "allowed: a list of {'wrapper': NAME, 'kwargs': {...}} mappings (kwargs optional)"

    def check(v: Any) -> str | None:
        if not isinstance(v, list) or len(v) > MAX_LAYERS:
            return allowed
        for item in v:
            if not isinstance(item, dict) or set(item) - {"wrapper", "kwargs"}:
                return allowed
            name = item.get("wrapper")
            if not isinstance(name, str) or not WRAPPER_NAME.match(name):
                return allowed + ", NAME like 'ClipReward' or 'package.module:Class'"
            if not isinstance(item.get("kwargs", {}), dict):
                return allowed
        return None

    return check


def int_list(min_len: int = 1) -> Check:
    """Layer widths: min_len..MAX_LAYERS integers in 1..MAX_WIDTH."""

    def check(v: Any) -> str | None:
        ok = isinstance(v, (list, tuple)) and min_len <= len(v) <= MAX_LAYERS
        ok = ok and all(is_int(x) and 0 < x <= MAX_WIDTH for x in v)
        return None if ok else (f"allowed: a list of {min_len} to {MAX_LAYERS} integers in 1..{MAX_WIDTH}")

    return check


def conv_filters() -> Check:
    def check(v: Any) -> str | None:
        ok = (
            isinstance(v, (list, tuple))
            and 1 <= len(v) <= MAX_LAYERS
            and all(
                isinstance(f, (list, tuple))
                and len(f) == 3
                and all(is_int(x) and 0 < x <= MAX_WIDTH for x in f)
                for f in v
            )
        )
        return (
            None
            if ok
            else (f"allowed: a list of [filters, kernel, stride] triples of integers in 1..{MAX_WIDTH}")
        )

    return check


def schedule() -> Check:
    """[[timestep, value], ...] with non-decreasing timesteps starting at 0 and positive values."""

    def check(v: Any) -> str | None:
        ok = (
            isinstance(v, (list, tuple))
            and len(v) >= 1
            and all(
                isinstance(p, (list, tuple))
                and len(p) == 2
                and is_int(p[0])
                and p[0] >= 0
                and _is_number(p[1])
                and p[1] >= 0
                for p in v
            )
        )
        ok = ok and v[0][0] == 0 and all(a[0] <= b[0] for a, b in zip(v, v[1:]))
        return (
            None
            if ok
            else "allowed: [[timestep, value], ...] starting at timestep 0, timesteps non-decreasing, "
            "values >= 0"
        )

    return check


def model(key_checks: dict[str, Check], name: str = "model") -> Check:
    """A mapping whose keys are among key_checks' and whose values pass their checks (model, atari)."""

    def check(v: Any) -> str | None:
        if not isinstance(v, dict):
            return "allowed: a mapping with keys " + ", ".join(key_checks)
        for key, value in v.items():
            if key not in key_checks:
                return f"unknown {name} key {key!r}; allowed keys: " + ", ".join(key_checks)
            problem = key_checks[key](value)
            if problem is not None:
                return f"{name}[{key!r}] = {value!r}: {problem}"
        return None

    return check


_HOST_PORT = re.compile(r"^(ray://)?[A-Za-z0-9.\-]+:[0-9]{1,5}$")


def ray_address() -> Check:
    """'auto' or host:port (optionally ray://host:port), the forms ray.init takes for a cluster."""

    def check(v: Any) -> str | None:
        ok = v == "auto" or (
            isinstance(v, str) and _HOST_PORT.match(v) is not None and 0 < int(v.rpartition(":")[2]) < 65536
        )
        return None if ok else "allowed: 'auto', or a cluster's head as host:port (e.g. 10.0.0.1:6379)"

    return check
