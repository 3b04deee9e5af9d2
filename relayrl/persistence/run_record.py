"""The files a run leaves in its log directory besides TensorBoard's: config.json, progress.csv,
learning_curve.png.

- `config.json`: {"algo": name, "relayrl_version": ..., "config": the config's fields (secrets left out)}, so
  `relayrl plot` can group runs by algorithm, env or any field.
- `progress.csv`: one row per `train()` iteration, every numeric entry of the result dict; the fixed columns
  come first. Flushed after each row, so a run that crashes keeps the rows of every finished iteration. A key
  that first appears later (e.g. learner metrics once updates start) rewrites the file once with the wider
  header (earlier rows get empty cells). A run that resumes from a checkpoint in the same directory drops the
  rows past the checkpoint's iteration, so the file reads as one run.
- `learning_curve.png`: written at close (return against env steps and against training time).
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any

from relayrl.persistence.run_dir import CONFIG_FILE, CURVE_FILE, PROGRESS_FILE

FIRST_COLUMNS = (
    "training_iteration",
    "timesteps_total",
    "time_total_s",
    "episode_reward_mean",
    "episode_reward_min",
    "episode_reward_max",
    "episodes_total",
)


def numeric_items(result: dict[str, Any]) -> dict[str, float | int]:
    """The scalar numeric entries of a result dict (bools as 0/1)."""
    return {k: int(v) if isinstance(v, bool) else v for k, v in result.items() if isinstance(v, (int, float))}


class RunRecord:
    """Loop that uses it:  record = RunRecord(log_dir, "ppo", config.to_dict()); record.log(result) per
    iteration; record.close() at the end (writes learning_curve.png)."""

    def __init__(self, log_dir: str, algo: str, config: dict[str, Any]):
        from relayrl import __version__
        from relayrl.core.knobs import SECRET_FIELDS

        self.log_dir = log_dir
        self.path = os.path.join(log_dir, PROGRESS_FILE)
        self.title = f"{algo} {config.get('env')}"
        os.makedirs(log_dir, exist_ok=True)
        config = {k: (None if k in SECRET_FIELDS else v) for k, v in config.items()}
        with open(os.path.join(log_dir, CONFIG_FILE), "w") as fh:
            json.dump(
                {"algo": algo, "relayrl_version": __version__, "config": config}, fh, indent=1, sort_keys=True
            )
        self._fh = None
        self._columns: list[str] = []
        self.rows_written = 0

    def log(self, result: dict[str, Any]) -> None:
        row = numeric_items(result)
        if self._fh is None:
            self._start(row)
        elif any(k not in self._columns for k in row):
            self._rewrite(self._read_rows(), row)
        csv.DictWriter(self._fh, self._columns).writerow(row)
        self._fh.flush()  # a crash loses at most the iteration in progress
        self.rows_written += 1

    def _start(self, row: dict[str, Any]) -> None:
        """First row of this process: keep an earlier run's rows only up to where this one resumes."""
        kept = [r for r in self._read_rows() if _iteration(r) < row.get("training_iteration", math.inf)]
        if not kept:  # a fresh run in an old directory: none of the old columns either
            self._columns = []
        self._rewrite(kept, row)

    def _read_rows(self) -> list[dict[str, str]]:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if not os.path.exists(self.path):
            return []
        with open(self.path, newline="") as fh:
            reader = csv.DictReader(fh)
            rows = list(reader)
            self._columns = self._columns or list(reader.fieldnames or [])
        return rows

    def _rewrite(self, rows: list[dict[str, str]], new_row: dict[str, Any]) -> None:
        """Write the kept rows under a header that also holds new_row's keys (atomically), then append."""
        columns = list(self._columns)
        for key in (*FIRST_COLUMNS, *new_row):
            if key not in columns:
                columns.append(key)
        self._columns = [c for c in FIRST_COLUMNS if c in columns] + [
            c for c in columns if c not in FIRST_COLUMNS
        ]
        tmp = f"{self.path}.tmp"
        with open(tmp, "w", newline="") as fh:
            writer = csv.DictWriter(fh, self._columns)
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, self.path)
        self._fh = open(self.path, "a", newline="")

    def close(self, plot: bool = True) -> str | None:
        """Close progress.csv and draw learning_curve.png from it; returns the PNG's path (None: no rows)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        if not plot or self.rows_written == 0:
            return None
        from relayrl.persistence.plot import learning_curve

        return learning_curve(self.log_dir, os.path.join(self.log_dir, CURVE_FILE), title=self.title)


def _iteration(row: dict[str, str]) -> float:
    try:
        return float(row.get("training_iteration") or "nan")
    except ValueError:
        return math.nan
