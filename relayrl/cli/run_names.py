"""Where runs go without --logdir: one folder per run under the results root, named so that a run of an
(algorithm, env) pair can be found again (`--resume auto`)."""

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
