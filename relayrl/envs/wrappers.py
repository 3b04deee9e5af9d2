"""The config's `env_wrappers`: gymnasium wrappers applied to each env, innermost first.

Each entry is {'wrapper': NAME, 'kwargs': {...}}. A bare NAME is looked up in `gymnasium.wrappers` only (its
public names, and only classes that subclass gymnasium.Wrapper): nothing is imported for it. 'module:Class'
imports the module (relayrl/envs/user_code.py): your own config, never a checkpoint's. Every refusal is one
line naming `env_wrappers[i]`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from relayrl.envs.user_code import import_user_module

WrapperList = Sequence[Mapping[str, Any]]  # config.env_wrappers


def _where(index: int, name: Any) -> str:
    return f"env_wrappers[{index}] = {name!r}"


def resolve_wrapper(index: int, name: Any) -> type[gym.Wrapper]:
    """The wrapper class entry `index` names; ValueError naming `env_wrappers[index]`."""
    where = _where(index, name)
    if not isinstance(name, str):
        raise ValueError(f"{where}: allowed: a gymnasium.wrappers class name or 'package.module:Class'")
    module, sep, attr = name.partition(":")
    if sep:
        obj: Any = import_user_module(module, where)
        for part in attr.split("."):
            obj = getattr(obj, part, None)
        if obj is None:
            raise ValueError(f"{where}: module {module!r} has no {attr!r}")
    else:
        if name not in gym.wrappers.__all__:
            raise ValueError(
                f"{where} is not a gymnasium.wrappers class (e.g. ClipReward, TimeLimit, "
                f"FrameStackObservation), and a wrapper of your own is written 'package.module:Class'"
            )
        try:
            obj = getattr(gym.wrappers, name)  # some are loaded lazily and need an optional package
        except (ImportError, gym.error.Error) as exc:
            raise ValueError(f"{where}: {' '.join(str(exc).split())}") from None
    if not (isinstance(obj, type) and issubclass(obj, gym.Wrapper)):
        raise ValueError(f"{where} is a {type(obj).__name__}, not a gymnasium.Wrapper subclass")
    return obj


def wrap(env: gym.Env, wrappers: WrapperList) -> gym.Env:
    """`env` inside each wrapper of the list in order (the first is innermost)."""
    for index, entry in enumerate(wrappers):
        cls = resolve_wrapper(index, entry.get("wrapper"))
        kwargs = entry.get("kwargs") or {}
        try:
            env = cls(env, **kwargs)
        except (TypeError, ValueError, AssertionError, gym.error.Error) as exc:
            env.close()
            raise ValueError(
                f"{_where(index, entry['wrapper'])} with kwargs {kwargs!r}: {' '.join(str(exc).split())}"
            ) from None
    return env


# gymnasium wrappers that write files or open windows: a checkpoint or an export may not ask for them
WRITES_OR_DISPLAYS = ("RecordVideo", "HumanRendering")


def check_data_wrappers(wrappers: WrapperList) -> None:
    """ValueError unless every entry names a gymnasium.wrappers class that neither writes files nor opens a
    window: what a checkpoint's or an export's own file may ask for (it never imports a module)."""
    for index, entry in enumerate(wrappers):
        name = entry.get("wrapper")
        if not isinstance(name, str) or ":" in name:
            raise ValueError(
                f"{_where(index, name)} is code of your own, which a saved file never imports: "
                f"supply the env yourself (--env ID)"
            )
        if name in WRITES_OR_DISPLAYS:
            raise ValueError(f"{_where(index, name)} writes files or opens a window: not from a saved file")
        resolve_wrapper(index, name)
