"""Where runs go without --logdir: one folder per run under the results root, named so that a run of an
(algorithm, env) pair can be found again (`--resume auto`); the check that an output folder is writable."""

from __future__ import annotations

import os
import re
import time


def run_name(algo: str, env: str) -> str:
    return f"{algo}_{env.replace('/', '-')}_{time.strftime('%Y%m%d-%H%M%S')}_{os.getpid()}"


def run_name_pattern(algo: str, env: str) -> re.Pattern[str]:
    """What run_name(algo, env) writes, for finding a pair's runs again (`--resume auto`)."""
    return re.compile(rf"{re.escape(algo)}_{re.escape(env.replace('/', '-'))}_[0-9]{{8}}-[0-9]{{6}}_[0-9]+")


def results_root() -> str:
    """Where runs go without --logdir, one folder per run_name()."""
    return os.path.join(os.path.expanduser("~"), "relayrl_results")


def default_logdir(algo: str, env: str) -> str:
    return os.path.join(results_root(), run_name(algo, env))


def make_writable_dir(path: str, flag: str) -> None:
    """Create `path` and check this user can write there, else ValueError naming the flag."""
    import tempfile

    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ValueError(
            f"{flag} {path}: cannot write there ({exc.strerror or exc}); allowed: a directory "
            f"this user can create and write"
        ) from None
