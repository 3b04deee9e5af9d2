"""What a SavedModel export records about its env: assets/relayrl_policy.json, with the env id, env_config,
env_wrappers and the observation and action spaces (type, shape, dtype, bounds or n).

`relayrl evaluate` / `relayrl enjoy` of a SavedModel then need no `--env`, and an env whose spaces do not
fit the policy is refused in one line before TensorFlow runs anything. The file is data, like a checkpoint's
config.json: size-capped, checked field by field, and nothing named in it is imported (its env must be an
id gymnasium has registered, its wrappers gymnasium's own). An export without it (written before this file
existed) is checked against its serving signature instead.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

METADATA_FILE = os.path.join("assets", "relayrl_policy.json")
FORMAT = 1
MAX_BYTES = 1 << 20  # spaces are described compactly (uniform bounds as one number): a bigger file is hostile


def _bound(values: np.ndarray) -> Any:
    """One number when every entry is the same, else the list; infinities as the strings 'inf' / '-inf'."""
    flat = np.asarray(values, np.float64).ravel()
    items = [x if np.isfinite(x) else ("inf" if x > 0 else "-inf") for x in flat.tolist()]
    return items[0] if items and all(x == items[0] for x in items) else items


def describe_space(space: gym.Space) -> dict[str, Any]:
    """A JSON description of a space: what must match between a policy and an env."""
    out: dict[str, Any] = {"type": type(space).__name__}
    if isinstance(space, gym.spaces.Discrete):
        out.update(n=int(space.n), start=int(space.start))
    elif isinstance(space, gym.spaces.MultiDiscrete):
        out.update(nvec=np.asarray(space.nvec).tolist())
    elif isinstance(space, gym.spaces.MultiBinary):
        out.update(n=np.asarray(space.n).tolist())
    if space.shape is not None:
        out.update(shape=list(space.shape))
    if space.dtype is not None:
        out.update(dtype=np.dtype(space.dtype).name)
    if isinstance(space, gym.spaces.Box):
        out.update(low=_bound(space.low), high=_bound(space.high))
    return out


def brief(description: dict) -> str:
    """A space description in a few words for messages: 'Box [4] float32', 'Discrete(2)' (each part cut
    short: a hostile file's values can be long)."""

    def part(key: str, limit: int = 40) -> str:
        text = str(description.get(key))
        return text if len(text) <= limit else text[: limit - 3] + "..."

    if "n" in description or "nvec" in description:
        return f"{part('type')}({part('n' if 'n' in description else 'nvec')})"
    bounds = ""
    if "low" in description and not isinstance(description["low"], list):
        bounds = f" in [{part('low')}, {part('high')}]"
    return f"{part('type')} {part('shape')} {part('dtype')}{bounds}"


@dataclass(frozen=True)
class PolicyMetadata:
    env: str | None  # None: the env was a Python callable, which an export cannot name
    env_config: dict = field(default_factory=dict)
    env_wrappers: list = field(default_factory=list)
    observation_space: dict = field(default_factory=dict)
    action_space: dict = field(default_factory=dict)


def write_metadata(export_dir: str, config: Any, obs_space: gym.Space, action_space: gym.Space) -> None:
    """Write assets/relayrl_policy.json into a SavedModel directory (`config`: the algorithm's, or None)."""
    env = getattr(config, "env", None)
    data = {
        "format": FORMAT,
        "env": env if isinstance(env, str) else None,
        "env_config": getattr(config, "env_config", {}) if isinstance(env, str) else {},
        "env_wrappers": getattr(config, "env_wrappers", []),
        "observation_space": describe_space(obs_space),
        "action_space": describe_space(action_space),
    }
    os.makedirs(os.path.join(export_dir, "assets"), exist_ok=True)
    with open(os.path.join(export_dir, METADATA_FILE), "w") as fh:
        json.dump(data, fh, indent=1)


def _checked(data: Any, where: str) -> PolicyMetadata:
    from relayrl.core import checks
    from relayrl.core.saved_state import shown

    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{where}: allowed: a JSON object with format {FORMAT}")
    unknown = set(data) - {"format", *PolicyMetadata.__dataclass_fields__}
    if unknown:
        raise ValueError(f"{where}: unknown key {shown(sorted(unknown)[0])}")
    env = data.get("env")
    if env is not None and not isinstance(env, str):
        raise ValueError(f"{where}: env = {shown(env)}; allowed: an env id or null")
    for name, check in (("env_config", checks.mapping()), ("env_wrappers", checks.wrapper_list())):
        problem = check(data.get(name, {} if name == "env_config" else []))
        if problem is not None:
            raise ValueError(f"{where}: {name} is invalid: {problem}")
    for name in ("observation_space", "action_space"):
        if not isinstance(data.get(name), dict) or not isinstance(data[name].get("type"), str):
            raise ValueError(f"{where}: {name} is missing or not a space description")
    return PolicyMetadata(**{k: v for k, v in data.items() if k != "format"})


def read_metadata(export_dir: str) -> PolicyMetadata | None:
    """The export's checked metadata, None for an export written without it; ValueError (one line) when it
    is malformed, oversized or not JSON."""
    path = os.path.join(export_dir, METADATA_FILE)
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path) or os.path.islink(path):
        raise ValueError(f"{path}: allowed: a regular file")
    if os.path.getsize(path) > MAX_BYTES:
        raise ValueError(f"{path}: larger than {MAX_BYTES} bytes")
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh, parse_constant=lambda name: name)  # NaN / Infinity stay strings
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    return _checked(data, path)


def recorded_env(metadata: PolicyMetadata | None, export_dir: str) -> tuple[str, dict, list]:
    """(env id, env_config, env_wrappers) to evaluate an export on when the caller names no env: the
    recorded ones, if the id is one gymnasium has registered and the wrappers are gymnasium's own (nothing
    named in the file is imported). ValueError saying to pass --env otherwise."""
    from relayrl.core.config_io import registered_env_id
    from relayrl.envs.wrappers import check_data_wrappers

    if metadata is None:
        raise ValueError(
            f"{export_dir} records no env (exported before relayrl wrote {METADATA_FILE}): pass --env ID"
        )
    try:
        env = registered_env_id(metadata.env)
        check_data_wrappers(metadata.env_wrappers)
        if "render_mode" in metadata.env_config:  # a window, or frames nobody asked for: the caller's choice
            raise ValueError("env_config.render_mode is not taken from a saved file")
    except ValueError as exc:
        raise ValueError(f"{export_dir}/{METADATA_FILE}: {exc}") from None
    return env, dict(metadata.env_config), list(metadata.env_wrappers)
