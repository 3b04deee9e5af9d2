"""Where things are, for tests that start subprocesses or read the repository's files."""

from __future__ import annotations

from pathlib import Path

HELPERS = Path(__file__).resolve().parent  # scripts that tests run as subprocesses
ROOT = HELPERS.parents[1]  # the repository
