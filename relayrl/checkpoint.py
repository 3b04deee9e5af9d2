"""Checkpoints: a directory a crash can never leave half-written, and nothing pickled in it.

    ckpt/
      config.json        the algorithm's config (secrets such as redis_password left out)
      state.json         counters, RNG states, weights version, episode window, relayrl version, worker states
      learner/           a tf.train.Checkpoint of models and optimisers (or learner.npz for tabular learners)
      replay.npz         the replay buffer, when the algorithm has one in this process
      COMPLETE           written last: the file list with sizes and sha256; a checkpoint without it is refused

Written to `<dir>.tmp-<pid>`, every file fsynced, then renamed into place (an existing checkpoint of the same
name is replaced only after the new one is complete).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from typing import Any

import numpy as np

from relayrl.config import SECRET_FIELDS

FORMAT = 1
MARKER = "COMPLETE"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded: incomplete, corrupted, or from an incompatible version."""


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fsync_tree(root: str) -> None:
    for folder, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as fh:
                os.fsync(fh.fileno())
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def write_json(path: str, data: Any) -> None:
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)


def save(algo, path: str) -> str:
    """Write algo's full state to `path` atomically; returns the absolute path."""
    from relayrl import __version__

    path = os.path.abspath(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    config = algo.config.to_dict()
    for secret in SECRET_FIELDS:
        if secret in config:
            config[secret] = None
    write_json(os.path.join(tmp, "config.json"), config)
    state = {"format": FORMAT, "relayrl_version": __version__, "algo": algo.config.algo_name, **algo.get_state()}
    write_json(os.path.join(tmp, "state.json"), state)
    algo.save_learner(os.path.join(tmp, "learner"))
    replay_state = algo.replay_state()
    if replay_state is not None:
        np.savez(os.path.join(tmp, "replay.npz"), **replay_state)
    files = {}
    for folder, _, names in os.walk(tmp):
        for name in names:
            full = os.path.join(folder, name)
            files[os.path.relpath(full, tmp)] = {"bytes": os.path.getsize(full), "sha256": _sha256(full)}
    _fsync_tree(tmp)
    write_json(os.path.join(tmp, MARKER), {"format": FORMAT, "files": files})
    _fsync_tree(tmp)
    old = f"{path}.old-{os.getpid()}"
    if os.path.exists(path):
        os.rename(path, old)
    os.rename(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
    return path


def verify(path: str) -> dict:
    """Check the marker, the format and every file's size and checksum; returns state.json."""
    from relayrl import __version__

    marker = os.path.join(path, MARKER)
    if not os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path!r} does not exist")
    if not os.path.exists(marker):
        raise CheckpointError(f"checkpoint {path!r} is incomplete (no {MARKER} marker): it was not finished writing")
    try:
        with open(marker) as fh:
            manifest = json.load(fh)
    except (OSError, json.JSONDecodeError) as exc:
        raise CheckpointError(f"checkpoint {path!r} has an unreadable {MARKER} marker: {exc}") from None
    if manifest.get("format") != FORMAT:
        raise CheckpointError(f"checkpoint {path!r} has format {manifest.get('format')}, this relayrl reads format {FORMAT}")
    for rel, expected in manifest["files"].items():
        full = os.path.join(path, rel)
        if not os.path.exists(full):
            raise CheckpointError(f"checkpoint {path!r} is corrupted: {rel} is missing")
        if os.path.getsize(full) != expected["bytes"] or _sha256(full) != expected["sha256"]:
            raise CheckpointError(f"checkpoint {path!r} is corrupted: {rel} does not match its checksum")
    with open(os.path.join(path, "state.json")) as fh:
        state = json.load(fh)
    major = str(state.get("relayrl_version", "")).split(".")[:2]
    if major != __version__.split(".")[:2]:
        raise CheckpointError(f"checkpoint {path!r} was written by relayrl {state.get('relayrl_version')}, "
                              f"this is relayrl {__version__}: versions before 1.0 only load their own minor version")
    return state


def read_config(path: str) -> dict:
    with open(os.path.join(path, "config.json")) as fh:
        return json.load(fh)


def latest(directory: str) -> str | None:
    """The newest complete checkpoint under `directory` (names sort by iteration), or None."""
    if not os.path.isdir(directory):
        return None
    names = sorted(n for n in os.listdir(directory)
                   if n.startswith("ckpt-") and ".tmp-" not in n and ".old-" not in n
                   and os.path.exists(os.path.join(directory, n, MARKER)))
    return os.path.join(directory, names[-1]) if names else None


def prune(directory: str, keep: int) -> None:
    """Keep the newest `keep` complete checkpoints under `directory`."""
    names = sorted(n for n in os.listdir(directory) if n.startswith("ckpt-") and ".tmp-" not in n)
    for name in names[:-keep] if keep > 0 else []:
        shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
