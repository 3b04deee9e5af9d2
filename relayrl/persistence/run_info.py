"""run.json in a run's log directory: how the run was started, so that it can be started again.

    {"argv": [...], "started_utc": ISO time, "tuned_file": path | null, "resumed_from": path | null,
     "versions": {"relayrl", "python", "tensorflow", "ray", "gymnasium", "numpy"},
     "git_revision": sha | null, "git_dirty": bool | null, "earlier": [the entries of earlier starts]}

The resolved config is config.json beside it (run_record.py). A run resumed in the same directory keeps the
earlier starts' entries under "earlier" (oldest first). Secrets never appear: the caller masks argv.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from importlib import metadata
from typing import Any

from relayrl.persistence.run_dir import RUN_INFO_FILE

PACKAGES = ("tensorflow", "ray", "gymnasium", "numpy")
GIT_TIMEOUT_S = 5.0
MAX_EARLIER = 100  # entries kept from earlier starts (a run restarted by a scheduler every hour stays small)
MAX_READ_BYTES = 1 << 20  # an earlier run.json larger than this is not ours: started afresh


def versions() -> dict[str, str | None]:
    """relayrl's, Python's and the installed versions of the packages a run depends on (None: missing)."""
    from relayrl import __version__

    out: dict[str, str | None] = {"relayrl": __version__, "python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def git_revision() -> tuple[str | None, bool | None]:
    """(HEAD, has uncommitted changes) of the relayrl source when it is the top of a git checkout (an
    installed package inside some other repository is not), else (None, None)."""
    import relayrl

    source = os.path.dirname(os.path.dirname(os.path.abspath(relayrl.__file__)))

    def git(*args: str) -> str | None:
        try:
            proc = subprocess.run(
                ["git", "-C", source, *args], capture_output=True, text=True, timeout=GIT_TIMEOUT_S
            )
        except (OSError, subprocess.SubprocessError):  # no git, or it hangs (a network file system)
            return None
        return proc.stdout.strip() if proc.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if top is None or os.path.realpath(top) != os.path.realpath(source):
        return None, None
    head = git("rev-parse", "HEAD")
    if head is None:
        return None, None
    status = git("status", "--porcelain", "--untracked-files=no")
    return head, (None if status is None else status != "")


def write(
    log_dir: str, argv: list[str], tuned_file: str | None = None, resumed_from: str | None = None
) -> str:
    """Write run.json (atomically) for a run starting now in log_dir; returns its path."""
    revision, dirty = git_revision()
    entry: dict[str, Any] = {
        "argv": list(argv),
        "started_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "tuned_file": tuned_file,
        "resumed_from": resumed_from,
        "versions": versions(),
        "git_revision": revision,
        "git_dirty": dirty,
    }
    path = os.path.join(log_dir, RUN_INFO_FILE)
    entry["earlier"] = _earlier(path)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        json.dump(entry, fh, indent=1)
    os.replace(tmp, path)
    return path


def _earlier(path: str) -> list[dict]:
    """The earlier starts recorded in an existing run.json; anything unreadable or not in this shape is
    dropped (this file is a record, not an input: nothing in it is acted on)."""
    try:
        if os.path.getsize(path) > MAX_READ_BYTES:
            return []
        with open(path) as fh:
            data = json.load(fh)
    except (OSError, ValueError):
        return []
    if not isinstance(data, dict) or not isinstance(data.get("earlier", []), list):
        return []
    entries = [*data.get("earlier", []), {k: v for k, v in data.items() if k != "earlier"}]
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("argv"), list)][-MAX_EARLIER:]
