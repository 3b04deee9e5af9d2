"""Tuned configs (zoo style): relayrl/core/tuned/<algo>-<env id>.yaml, applied by the CLI when the
env matches; a namespaced id ('ALE/Breakout-v5') has its file in the namespace's folder
(ALE/ppo-Breakout-v5.yaml).

Each file holds config fields plus a `_result` note (what it reached, in how many steps, on what machine),
which is documentation and not applied.
"""

from __future__ import annotations

import os
import re

from relayrl.core import yaml_io

HERE = os.path.dirname(os.path.abspath(__file__))
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")  # no separators, no leading dot: stays inside HERE


def path_for(algo: str, env_id: str) -> str:
    namespace, _, name = env_id.rpartition("/")
    return os.path.join(HERE, namespace, f"{algo}-{name}.yaml")


def _has_file(algo: str, env_id: str) -> bool:
    parts = env_id.split("/") if isinstance(env_id, str) else []
    if not 1 <= len(parts) <= 2 or not all(_NAME.match(p) for p in parts):
        return False
    return os.path.exists(path_for(algo, env_id))


def load(algo: str, env_id: str) -> tuple[dict, str | None]:
    """(fields, path) of the tuned config for this algorithm and env, or ({}, None)."""
    if not _has_file(algo, env_id):
        return {}, None
    path = path_for(algo, env_id)
    with open(path) as fh:
        data = yaml_io.load(fh) or {}
    return {k: v for k, v in data.items() if not k.startswith("_")}, path


def available(algo: str) -> list[str]:
    """Env ids with a tuned config for this algorithm (namespaced ids from the namespaces' folders)."""
    prefix = f"{algo}-"
    ids = []
    for folder, _, files in os.walk(HERE):
        namespace = os.path.relpath(folder, HERE)
        for f in files:
            if f.startswith(prefix) and f.endswith(".yaml"):
                name = f[len(prefix) : -len(".yaml")]
                ids.append(name if namespace == "." else f"{namespace}/{name}")
    return sorted(ids)


def notes(path: str) -> dict:
    """The documentation entries of a tuned file (keys starting with '_', e.g. `_result`)."""
    with open(path) as fh:
        data = yaml_io.load(fh) or {}
    return {k: v for k, v in data.items() if k.startswith("_")}
