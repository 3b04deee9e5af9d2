"""A checkpoint's files, written durably and read back without trusting them.

Writing: every file and folder fsynced before the rename that publishes a checkpoint. Reading: a file is
opened without following a link or blocking on a FIFO, must be a regular file within its size limit, and is
hashed or parsed within that limit; every failure is a CheckpointError naming the file.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from typing import Any

from relayrl.core.saved_state import CheckpointError


# ---------------------------------------------------------------------------------------------- writing
def file_sha256(path: str) -> str:
    """SHA-256 of a file this process wrote."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def fsync_tree(root: str) -> None:
    """fsync every file and folder under `root`, so a crash after the rename leaves them whole."""
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
    """`data` as JSON at `path` (sorted keys, so a checkpoint's files diff cleanly)."""
    with open(path, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)


# ---------------------------------------------------------------------------------------------- reading
def _open_regular(full: str, size_limit: int, label: str, path: str) -> tuple[int, int]:
    """(fd, size) of a regular file opened without following a link or blocking on a FIFO."""
    try:
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise CheckpointError(f"checkpoint {path!r}: {label} cannot be opened: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > size_limit:
        os.close(fd)
        raise CheckpointError(
            f"checkpoint {path!r}: {label} is not a regular file of at most {size_limit} bytes"
        )
    return fd, st.st_size


def hash_regular(path: str, rel: str, size: int) -> str:
    """SHA-256 of the checkpoint file `rel`, which must be a regular file of exactly `size` bytes."""
    fd, actual = _open_regular(os.path.join(path, rel), size, rel, path)
    digest = hashlib.sha256()
    try:
        with os.fdopen(fd, "rb") as fh:
            left = size
            while left > 0:
                chunk = fh.read(min(left, 1 << 20))
                if not chunk:
                    break
                digest.update(chunk)
                left -= len(chunk)
    except OSError as exc:
        raise CheckpointError(f"checkpoint {path!r}: {rel} cannot be read: {exc.strerror}") from None
    if actual != size or left:
        raise CheckpointError(f"checkpoint {path!r} is corrupted: {rel} changed size while it was read")
    return digest.hexdigest()


def read_json(path: str, rel: str, limit: int) -> Any:
    """The checkpoint file `rel` parsed as JSON: a regular file of at most `limit` bytes."""
    fd, _ = _open_regular(os.path.join(path, rel), limit, rel, path)
    try:
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(limit + 1)
        return json.loads(data)
    except OSError as exc:
        raise CheckpointError(f"checkpoint {path!r}: {rel} cannot be read: {exc.strerror}") from None
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, nesting too deep, an int of 5000 digits
        raise CheckpointError(f"checkpoint {path!r}: {rel} is not valid JSON: {exc}") from None
