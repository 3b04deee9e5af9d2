"""What anyone who edits a checkpoint can do, for the hostile-checkpoint tests: change a file and recompute
the COMPLETE manifest (its SHA-256 sums prove integrity, not origin), or write the manifest by hand."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
from collections.abc import Callable
from typing import Any

from relayrl.persistence import checkpoint, checkpoint_io


def copy(src: str, dst: str) -> str:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def reseal(path: str) -> None:
    """Recompute COMPLETE over the regular files under `path`, as an attacker would after editing them."""
    files = {}
    for folder, _, names in os.walk(path):
        for name in names:
            full = os.path.join(folder, name)
            rel = os.path.relpath(full, path)
            if rel != checkpoint.MARKER and os.path.isfile(full) and not os.path.islink(full):
                files[rel] = {"bytes": os.path.getsize(full), "sha256": checkpoint_io.file_sha256(full)}
    write_json(path, checkpoint.MARKER, {"format": checkpoint.FORMAT, "files": files})


def read_json(path: str, rel: str) -> Any:
    with open(os.path.join(path, rel)) as fh:
        return json.load(fh)


def write_json(path: str, rel: str, data: Any) -> None:
    with open(os.path.join(path, rel), "w") as fh:
        json.dump(data, fh)


def edit_json(path: str, rel: str, change: Callable[[Any], Any]) -> None:
    """Apply `change` (which edits in place or returns a replacement) to a JSON file, then reseal."""
    data = read_json(path, rel)
    result = change(data)
    write_json(path, rel, data if result is None else result)
    reseal(path)


def learner_data_file(path: str) -> str:
    folder = os.path.join(path, "learner")
    return os.path.join(folder, next(n for n in sorted(os.listdir(folder)) if ".data-" in n))


@contextlib.contextmanager
def time_limit(seconds: float):
    """TimeoutError when the block runs longer (a hang), also out of a blocking open() or read()."""

    def expire(*_):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
