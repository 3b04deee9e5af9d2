"""The files of a run directory (the log dir): written by run_record.py and run_info.py, read by plot.py."""

from __future__ import annotations

PROGRESS_FILE = "progress.csv"
CONFIG_FILE = "config.json"
CURVE_FILE = "learning_curve.png"
RUN_INFO_FILE = "run.json"  # argv, versions, git revision, tuned file (run_info.py)
