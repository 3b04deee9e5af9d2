"""The files of a run directory (the log dir): written by run_record.py, read by plot.py."""

from __future__ import annotations

PROGRESS_FILE = "progress.csv"
CONFIG_FILE = "config.json"
CURVE_FILE = "learning_curve.png"
