"""Checkpoints: a directory a crash can never leave half-written, and nothing pickled in it.

    ckpt/
      config.json        the algorithm's config (secrets such as redis_password left out)
      state.json         counters, RNG states, weights version, episode window, relayrl version, worker states
      learner/           a tf.train.Checkpoint of models and optimisers (learner/table.npz: tabular learners)
      replay.npz         the replay buffer, when the algorithm has one in this process
      COMPLETE           written last: the file list with sizes and sha256; a checkpoint without it is refused

Written to `<dir>.tmp-<pid>`, every file fsynced, then renamed into place (an existing checkpoint of the same
name is replaced only after the new one is complete).

A checkpoint is data from elsewhere, loaded as such (`verify` before anything reads it):
- nothing named in it is imported, resolved or called (`Config.from_checkpoint_dict`, core/config_io.py);
- COMPLETE has a schema: relative paths inside the checkpoint only (no `..`, no absolute path), sizes and
  sha256 of regular files, under MAX_FILE_BYTES each and MAX_TOTAL_BYTES together, checked before hashing;
- the directory holds exactly the files COMPLETE lists, all regular files: a symbolic link, a device, a FIFO
  or an unlisted file anywhere in it is refused, so nothing is read that was not checked. The path the caller
  names may itself be a symbolic link (the caller chose it); nothing below it may;
- every malformed file (COMPLETE, state.json, config.json, learner files, replay.npz) raises CheckpointError,
  one line naming the file.
The SHA-256 sums prove a file is what the manifest says, not who wrote it: anyone can edit a checkpoint and
recompute them, which is why loading trusts nothing in it. A checkpoint must not change while it loads.
Files are written, opened, hashed and parsed by checkpoint_io.py.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from typing import Any

import numpy as np

from relayrl.core.checks import is_int
from relayrl.core.knobs import SECRET_FIELDS
from relayrl.core.saved_state import FORMAT, CheckpointError, shown, state_problem
from relayrl.persistence.checkpoint_io import file_sha256, fsync_tree, hash_regular, read_json, write_json

MARKER = "COMPLETE"
# Limits on what a checkpoint may hold, checked before anything is hashed or parsed (raise them here for
# larger replay buffers): per file, all files together, entries, and JSON files parsed into memory.
MAX_FILE_BYTES = 32 << 30
MAX_TOTAL_BYTES = 64 << 30
MAX_FILES = 10_000
MAX_JSON_BYTES = 256 << 20  # state.json (worker env states can be large)
MAX_SMALL_JSON_BYTES = 4 << 20  # COMPLETE, config.json
TOP_LEVEL = ("config.json", "state.json", "replay.npz", "learner")  # what may sit beside COMPLETE
_PATH_PART = re.compile(r"[A-Za-z0-9._-]{1,255}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


# ---------------------------------------------------------------------------------------------- writing
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
    state = {
        "format": FORMAT,
        "relayrl_version": __version__,
        "algo": algo.config.algo_name,
        **algo.get_state(),
    }
    write_json(os.path.join(tmp, "state.json"), state)
    algo.save_learner(os.path.join(tmp, "learner"))
    replay_state = algo.replay_state()
    if replay_state is not None:
        np.savez(os.path.join(tmp, "replay.npz"), **replay_state)
    files = {}
    for folder, _, names in os.walk(tmp):
        for name in names:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, tmp).replace(os.sep, "/")
            files[rel] = {"bytes": os.path.getsize(full), "sha256": file_sha256(full)}
    fsync_tree(tmp)
    write_json(os.path.join(tmp, MARKER), {"format": FORMAT, "files": files})
    fsync_tree(tmp)
    old = f"{path}.old-{os.getpid()}"
    if os.path.exists(path):
        os.rename(path, old)
    os.rename(tmp, path)
    shutil.rmtree(old, ignore_errors=True)
    return path


# ---------------------------------------------------------------------------------------------- reading
def verify(path: str, algo: str | None = None) -> dict:
    """Check the marker, the manifest, the directory against it, every file's size and checksum, and
    state.json's schema and version (and that it is an `algo` checkpoint, when given); returns state.json.
    Raises CheckpointError naming the file."""
    from relayrl import __version__

    if not os.path.exists(path):
        raise CheckpointError(f"checkpoint {path!r} does not exist")
    if not os.path.isdir(path):
        raise CheckpointError(f"checkpoint {path!r} is not a directory")
    found = _tree(path)
    if MARKER not in found:
        raise CheckpointError(
            f"checkpoint {path!r} is incomplete (no {MARKER} marker): it was not finished writing"
        )
    manifest = read_json(path, MARKER, MAX_SMALL_JSON_BYTES)
    files = _check_manifest(path, manifest)
    unlisted = sorted(set(found) - set(files) - {MARKER})
    if unlisted:
        raise CheckpointError(
            f"checkpoint {path!r}: {shown(unlisted[0])} is not listed in {MARKER}: a "
            f"checkpoint holds only the files its manifest lists (remove it)"
        )
    for rel, (size, _digest) in files.items():
        if rel not in found:
            raise CheckpointError(f"checkpoint {path!r} is corrupted: {rel} is missing")
        if found[rel].st_size != size:
            raise CheckpointError(
                f"checkpoint {path!r} is corrupted: {rel} has {found[rel].st_size} bytes, "
                f"{MARKER} says {size}"
            )
    for rel, (size, digest) in files.items():
        if hash_regular(path, rel, size) != digest:
            raise CheckpointError(f"checkpoint {path!r} is corrupted: {rel} does not match its checksum")
    state = read_json(path, "state.json", MAX_JSON_BYTES)
    if not isinstance(state, dict):
        raise CheckpointError(
            f"checkpoint {path!r}: state.json: allowed: a JSON object, got {type(state).__name__}"
        )
    version = state.get("relayrl_version")
    if not isinstance(version, str) or version.split(".")[:2] != __version__.split(".")[:2]:
        raise CheckpointError(
            f"checkpoint {path!r} was written by relayrl {str(version)[:40]}, this is "
            f"relayrl {__version__}: versions before 1.0 only load their own minor version"
        )
    problem = state_problem(state)
    if problem is not None:
        raise CheckpointError(f"checkpoint {path!r}: state.json: {problem}")
    if algo is not None and state["algo"] != algo:
        raise CheckpointError(f"checkpoint {path!r} is a {state['algo']} checkpoint, not {algo}")
    return state


def read_config(path: str) -> dict:
    """config.json as a dict (call verify first). Data only: see Config.from_checkpoint_dict."""
    config = read_json(path, "config.json", MAX_SMALL_JSON_BYTES)
    if not isinstance(config, dict):
        raise CheckpointError(
            f"checkpoint {path!r}: config.json: allowed: a JSON object, got {type(config).__name__}"
        )
    return config


def check_resume_env(path: str, env: object) -> None:
    """A run resumes a checkpoint on the env it was trained on: config.json's env (read as data, never
    resolved) must be this run's env id. A callable or another env is refused with CheckpointError."""
    saved = read_config(path).get("env")
    if saved != env:
        raise CheckpointError(
            f"checkpoint {path!r}: config.json: env = {shown(saved)} is not this run's env "
            f"{shown(env)}: a checkpoint resumes on the env it was trained on"
        )


def _tree(path: str) -> dict[str, os.stat_result]:
    """Every regular file under the checkpoint by relative path ('/'-separated), links never followed;
    anything but directories and regular files is refused."""
    found: dict[str, os.stat_result] = {}
    folders, entries = [""], 0
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(os.path.join(path, folder)) as listing:
                items = [(e.name, e.stat(follow_symlinks=False)) for e in listing]
        except OSError as exc:
            raise CheckpointError(f"checkpoint {path!r}: {folder or '.'} cannot be listed: {exc}") from None
        for name, st in items:
            rel = f"{folder}/{name}" if folder else name
            entries += 1
            if entries > MAX_FILES:
                raise CheckpointError(f"checkpoint {path!r} holds more than {MAX_FILES} entries")
            if stat.S_ISDIR(st.st_mode) and rel.count("/") < 8:
                folders.append(rel)
            elif stat.S_ISREG(st.st_mode):
                found[rel] = st
            else:
                kind = (
                    "a symbolic link"
                    if stat.S_ISLNK(st.st_mode)
                    else "a directory too deep"
                    if stat.S_ISDIR(st.st_mode)
                    else "not a regular file"
                )
                raise CheckpointError(
                    f"checkpoint {path!r}: {shown(rel)} is {kind}: allowed: regular files only"
                )
    return found


def _check_manifest(path: str, manifest: Any) -> dict[str, tuple[int, str]]:
    """COMPLETE's schema -> {relative path: (bytes, sha256)}."""
    where = f"checkpoint {path!r}: {MARKER}"
    if not isinstance(manifest, dict) or set(manifest) != {"format", "files"}:
        raise CheckpointError(f"{where}: allowed: a JSON object with the keys 'files' and 'format'")
    if not is_int(manifest["format"]) or manifest["format"] != FORMAT:
        raise CheckpointError(
            f"checkpoint {path!r} has format {shown(manifest['format'])}, this relayrl reads format {FORMAT}"
        )
    entries = manifest["files"]
    if not isinstance(entries, dict) or not 1 <= len(entries) <= MAX_FILES:
        raise CheckpointError(
            f"{where}: 'files' allowed: an object of 1 to {MAX_FILES} entries {{path: {{bytes, sha256}}}}"
        )
    files, total = {}, 0
    for rel, entry in entries.items():
        problem = _path_problem(rel)
        if problem is not None:
            raise CheckpointError(f"{where}: path {shown(rel)} is refused: {problem}")
        if not isinstance(entry, dict) or set(entry) != {"bytes", "sha256"}:
            raise CheckpointError(f"{where}: {rel}: allowed: an object with the keys 'bytes' and 'sha256'")
        size, digest = entry["bytes"], entry["sha256"]
        if not is_int(size) or not 0 <= size <= MAX_FILE_BYTES:
            raise CheckpointError(
                f"{where}: {rel}: bytes = {shown(size)}: allowed: an integer from 0 to "
                f"{MAX_FILE_BYTES} (checkpoint.MAX_FILE_BYTES)"
            )
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise CheckpointError(
                f"{where}: {rel}: sha256 = {shown(digest)}: allowed: 64 lowercase hex digits"
            )
        total += size
        files[rel] = (size, digest)
    if total > MAX_TOTAL_BYTES:
        raise CheckpointError(
            f"{where}: the files add up to {total} bytes: allowed: at most "
            f"{MAX_TOTAL_BYTES} (checkpoint.MAX_TOTAL_BYTES)"
        )
    layout = "a checkpoint holds config.json, state.json and learner/"
    for required in ("config.json", "state.json"):
        if required not in files:
            raise CheckpointError(f"{where}: {required} is not listed: {layout}")
    if not any(rel.startswith("learner/") for rel in files):
        raise CheckpointError(f"{where}: no learner/ file is listed: {layout}")
    return files


def _path_problem(rel: Any) -> str | None:
    allowed = (
        "allowed: a relative path inside the checkpoint such as learner/learner.index (no '..', no "
        "absolute path)"
    )
    if not isinstance(rel, str) or len(rel) > 1024:
        return allowed
    parts = rel.split("/")
    if any(p in (".", "..") or not _PATH_PART.fullmatch(p) for p in parts) or len(parts) > 8:
        return allowed
    if parts[0] not in TOP_LEVEL or (parts[0] == "learner") == (len(parts) == 1):
        return "allowed: config.json, state.json, replay.npz and files under learner/"
    return None


# ---------------------------------------------------------------------------------------------- run folders
_CKPT_NAME = re.compile(r"ckpt-[0-9]{1,19}")


def latest(directory: str) -> str | None:
    """The newest complete checkpoint under `directory` (names sort by iteration), or None. Only real
    directories count (a link named ckpt-N is not one save() wrote)."""
    if not os.path.isdir(directory):
        return None

    def complete(name: str) -> bool:
        try:
            return stat.S_ISDIR(os.lstat(os.path.join(directory, name)).st_mode) and stat.S_ISREG(
                os.lstat(os.path.join(directory, name, MARKER)).st_mode
            )
        except OSError:
            return False

    names = sorted(n for n in os.listdir(directory) if _CKPT_NAME.fullmatch(n) and complete(n))
    return os.path.join(directory, names[-1]) if names else None


def prune(directory: str, keep: int) -> None:
    """Keep the newest `keep` complete checkpoints under `directory`."""
    names = sorted(n for n in os.listdir(directory) if n.startswith("ckpt-") and ".tmp-" not in n)
    for name in names[:-keep] if keep > 0 else []:
        shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
