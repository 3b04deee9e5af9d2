"""What relayrl writes to stderr: its own lines. `VERBOSE_ENV=1` (`--verbose`) also lets TensorFlow's native
start-up lines through; it is an environment variable so that the Ray workers a run starts inherit it."""

from __future__ import annotations

import os

VERBOSE_ENV = "RELAYRL_VERBOSE"


def set_verbose(verbose: bool) -> None:
    if verbose:
        os.environ[VERBOSE_ENV] = "1"


def verbose() -> bool:
    return os.environ.get(VERBOSE_ENV) == "1"
