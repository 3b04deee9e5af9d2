"""Learning curves from run directories: one run's `learning_curve.png`, and
`relayrl plot RUN_DIR [RUN_DIR ...]`.

A run directory holds `progress.csv` and `config.json` (written by `relayrl.persistence.run_record` for every
Algorithm with a log_dir). `relayrl plot` groups runs (by default: same algorithm and env, i.e. seeds of one
setup), interpolates each run's return onto a common x grid (env steps or training time) and draws the mean
across the group with a shaded spread (min-max or +-1 std), over each run's own thin curve. The grid spans the
range every run of the group covers, so the mean never mixes in a run that has already stopped.

matplotlib is imported only when a figure is drawn (its Figure API: no pyplot state, no display needed).
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from relayrl.persistence.run_dir import CONFIG_FILE, PROGRESS_FILE

Y_KEY = "episode_reward_mean"
X_AXES = {"steps": ("timesteps_total", "env steps"), "time": ("time_total_s", "wall-clock training time (s)")}
GRID_POINTS = 200


@dataclass
class Run:
    path: str
    algo: str
    config: dict[str, Any]
    columns: dict[str, np.ndarray] = field(repr=False)

    @property
    def name(self) -> str:
        return os.path.basename(os.path.normpath(self.path))

    def curve(self, x_key: str, y_key: str = Y_KEY) -> tuple[np.ndarray, np.ndarray]:
        """(x, y) at the iterations where both are finite (no return before the first finished episode)."""
        x, y = self.columns.get(x_key), self.columns.get(y_key)
        if x is None or y is None:
            return np.zeros(0), np.zeros(0)
        ok = np.isfinite(x) & np.isfinite(y)
        return x[ok], y[ok]


def read_run(run_dir: str) -> Run:
    """Load a run directory; ValueError naming the directory and what is missing."""
    if not os.path.isdir(run_dir):
        raise ValueError(f"RUN_DIR {run_dir!r} is not a directory")
    progress = os.path.join(run_dir, PROGRESS_FILE)
    if not os.path.exists(progress):
        raise ValueError(
            f"RUN_DIR {run_dir!r} has no {PROGRESS_FILE} (expected the --logdir of a relayrl train run)"
        )
    with open(progress, newline="") as fh:
        rows = list(csv.DictReader(fh))
    if not rows:
        raise ValueError(f"RUN_DIR {run_dir!r}: {PROGRESS_FILE} has no rows yet (no iteration finished)")
    columns = {key: np.array([_float(r.get(key)) for r in rows]) for key in rows[0]}
    algo, config = "?", {}
    config_path = os.path.join(run_dir, CONFIG_FILE)
    if os.path.exists(config_path):
        with open(config_path) as fh:
            meta = json.load(fh)
        algo, config = meta.get("algo", "?"), meta.get("config", {})
    return Run(run_dir, algo, config, columns)


def _float(text: str | None) -> float:
    try:
        return float(text) if text not in (None, "") else math.nan
    except ValueError:
        return math.nan


def group_runs(runs: Sequence[Run], keys: Sequence[str]) -> dict[str, list[Run]]:
    """Runs with equal values of `keys` ('algo', 'run' = the directory, or any config field) share a group."""
    groups: dict[str, list[Run]] = {}
    for run in runs:
        values = []
        for key in keys:
            if key == "algo":
                values.append(run.algo)
            elif key == "run":
                values.append(run.name)
            elif key in run.config:
                values.append(f"{key}={run.config[key]}" if key != "env" else str(run.config[key]))
            else:
                raise ValueError(
                    f"--group-by {key!r}: run {run.path!r} has no such config field; allowed: algo, run, "
                    f"or a config field ({', '.join(sorted(run.config)[:8])}, ...)"
                )
        groups.setdefault(" ".join(values), []).append(run)
    return groups


def mean_and_spread(
    curves: Sequence[tuple[np.ndarray, np.ndarray]], spread: str = "minmax", points: int = GRID_POINTS
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(grid, mean, low, high) across curves interpolated onto the x range all of them cover."""
    curves = [(x, y) for x, y in curves if len(x)]
    if not curves:
        return (np.zeros(0),) * 4
    start, end = max(x[0] for x, _ in curves), min(x[-1] for x, _ in curves)
    if end < start or (end == start and len(curves) > 1):  # no x range that every run covers
        return (np.zeros(0),) * 4
    grid = np.linspace(start, end, points)
    ys = np.stack([np.interp(grid, x, y) for x, y in curves])  # [runs, points]
    mean = ys.mean(axis=0)
    if spread == "std":
        std = ys.std(axis=0)
        return grid, mean, mean - std, mean + std
    return grid, mean, ys.min(axis=0), ys.max(axis=0)


def _figure(panels: int):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.6 * panels, 4.2))
    axes = fig.subplots(1, panels, squeeze=False)[0]
    return fig, list(axes)


def _threshold(env: Any) -> float | None:
    try:
        import gymnasium as gym

        return gym.spec(env).reward_threshold if isinstance(env, str) else None
    except Exception:  # not a registered id (a callable's name, an env from another package): no line
        return None


def _finish(fig, axes, title: str, env: Any, out: str) -> str:
    threshold = _threshold(env)
    for ax in axes:
        if threshold is not None:
            ax.axhline(threshold, color="grey", ls="--", lw=1, label=f"{env} threshold ({threshold:g})")
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()  # one legend under the panels: no curve hidden
    columns = 3 if len(axes) > 1 else 2
    rows = -(-len(labels) // columns)
    fig.legend(handles, labels, loc="lower center", ncol=columns, fontsize=8, frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.045 * rows + 0.01, 1, 1))
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def _y_label(runs: Sequence[Run]) -> str:
    windows = {r.config.get("metrics_num_episodes_for_smoothing") for r in runs}
    window = windows.pop() if len(windows) == 1 else None
    return f"episode return (mean of last {window})" if window else "episode return (smoothed)"


def learning_curve(run_dir: str, out: str, title: str | None = None) -> str:
    """One run: return against env steps and against training time, shaded between the smoothing window's
    lowest and highest episode return."""
    run = read_run(run_dir)
    fig, axes = _figure(2)
    for ax, (x_key, x_label) in zip(axes, X_AXES.values()):
        x, y = run.curve(x_key)
        lo, hi = run.curve(x_key, "episode_reward_min")[1], run.curve(x_key, "episode_reward_max")[1]
        if len(lo) == len(x) == len(hi) and len(x):
            ax.fill_between(x, lo, hi, color="tab:blue", alpha=0.2, lw=0, label="episode min-max (window)")
        ax.plot(x, y, color="tab:blue", lw=1.8, label="mean return")
        ax.set(xlabel=x_label, ylabel=_y_label([run]))
    return _finish(fig, axes, title or f"{run.algo} {run.config.get('env', '')}", run.config.get("env"), out)


def compare(
    run_dirs: Sequence[str],
    out: str,
    x: str = "both",
    group_by: Sequence[str] = ("algo", "env"),
    spread: str = "minmax",
    title: str | None = None,
) -> str:
    """Overlay runs: per group, the mean across its runs with a shaded spread (see the module docstring)."""
    runs = [read_run(d) for d in run_dirs]
    groups = group_runs(runs, group_by)
    x_axes = list(X_AXES.items()) if x == "both" else [(x, X_AXES[x])]
    fig, axes = _figure(len(x_axes))
    colors = [f"C{i}" for i in range(10)]
    spread_name = "min-max" if spread == "minmax" else "+-1 std"
    for ax, (_, (x_key, x_label)) in zip(axes, x_axes):
        for (label, members), color in zip(groups.items(), colors * 10):
            curves = [run.curve(x_key) for run in members]
            for cx, cy in curves:
                ax.plot(cx, cy, color=color, lw=0.7, alpha=0.35)
            grid, mean, lo, hi = mean_and_spread(curves, spread)
            n = len(members)
            if n > 1:
                ax.fill_between(
                    grid, lo, hi, color=color, alpha=0.2, lw=0, label=f"{label}: {spread_name} of {n} runs"
                )
            ax.plot(grid, mean, color=color, lw=2, label=f"{label}: mean of {n} runs" if n > 1 else label)
        if len(runs) > len(groups):  # thin lines: each run on its own, also past the range all runs cover
            ax.plot([], [], color="grey", lw=0.7, alpha=0.6, label="single runs")
        ax.set(xlabel=x_label, ylabel=_y_label(runs))
    envs = {str(r.config.get("env")) for r in runs}
    env = envs.pop() if len(envs) == 1 else None
    seeds = sorted({r.config.get("seed") for r in runs}, key=str)
    seed_text = (
        f" (seeds {', '.join(map(str, seeds))})" if None not in seeds and len(seeds) == len(runs) > 1 else ""
    )
    default_title = f"{', '.join(groups)}: {len(runs)} run{'s' * (len(runs) > 1)}{seed_text}"
    return _finish(fig, axes, title or default_title, env, out)
