"""Tuned configs (zoo style): relayrl/core/tuned/<algo>-<env id>.yaml, applied by the CLI when the env
matches.

Each file holds config fields plus a `_result` note (what it reached, in how many steps, on what machine),
which is documentation and not applied.
"""

from __future__ import annotations

import os

from relayrl.core import yaml_io

HERE = os.path.dirname(os.path.abspath(__file__))


def path_for(algo: str, env_id: str) -> str:
    return os.path.join(HERE, f"{algo}-{env_id}.yaml")


def load(algo: str, env_id: str) -> tuple[dict, str | None]:
    """(fields, path) of the tuned config for this algorithm and env, or ({}, None)."""
    path = path_for(algo, env_id)
    if not isinstance(env_id, str) or not os.path.exists(path):
        return {}, None
    with open(path) as fh:
        data = yaml_io.load(fh) or {}
    return {k: v for k, v in data.items() if not k.startswith("_")}, path


def available(algo: str) -> list[str]:
    """Env ids with a tuned config for this algorithm."""
    prefix = f"{algo}-"
    return sorted(
        f[len(prefix) : -len(".yaml")]
        for f in os.listdir(HERE)
        if f.startswith(prefix) and f.endswith(".yaml")
    )


def notes(path: str) -> dict:
    """The documentation entries of a tuned file (keys starting with '_', e.g. `_result`)."""
    with open(path) as fh:
        data = yaml_io.load(fh) or {}
    return {k: v for k, v in data.items() if k.startswith("_")}
