"""run.py's pieces for issue 17's MuJoCo workloads (W10-<Env> SAC, W11-<Env> TD3, W12-<Env> PPO; the
workloads themselves: anchors/mujoco_workloads.py): their metrics and targets, timeouts, the "at least the
best incumbent within seed noise" verdict, and mujoco_curves.png (evaluation return against env steps, every
library on one panel per workload)."""

from __future__ import annotations

import math
import os
import statistics
import sys
from collections.abc import Callable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "anchors"))
import mujoco_workloads as mw  # noqa: E402
from common import read_curve  # noqa: E402

WORKLOADS = list(mw.specs())
# issue 17: relayrl vs SB3 and Tianshou
NOT_APPLICABLE = {(w, lib) for w in WORKLOADS for lib in ("rllib", "cleanrl")}
# relayrl's variants (mujoco_workloads.RELAYRL_VARIANTS), run by run.py as its other workloads' are
VARIANTS = {
    (w, "relayrl"): list(mw.RELAYRL_VARIANTS[spec[0]])
    for w, spec in mw.specs().items()
    if spec[0] in mw.RELAYRL_VARIANTS
}
# Timeouts from the SB3 smoke runs' rates at load 5-10 (docs/benchmarks.md, "MuJoCo (issue 17)"), with
# room: SAC/TD3 52-62 updates/s (290k updates: ~1.5 h), PPO ~400 steps/s (1M steps + 100 evaluations).
TIMEOUT_S = {w: (3 if w.startswith("W12") else 4) * 3600 for w in WORKLOADS}
DEFAULT_CAP = {w: cap for w, (_, _, cap, _) in mw.specs().items()}


def _steps(n: int) -> str:
    return f"{n / 1e6:g}M" if n >= 1_000_000 else f"{n // 1000}k"


METRICS = {
    w: [
        (
            "final_return",
            "max",
            f"return, final deterministic evaluation (10 episodes) at {_steps(cap)} steps",
            ("best_within_noise", 1.0),
        ),
        ("wall_s", "min", "wall time of the run, evaluations included (s)", ("ratio_max", 0.5)),
        ("steps_per_s", "max", "env steps/s (evaluations included)", None),
    ]
    for w, (_, _, cap, _) in mw.specs().items()
}


def within_noise_best(
    mine: list[float], incumbents: dict[str, list[float]], k: float
) -> tuple[str, str, str]:
    """relayrl's mean over seeds >= the best incumbent's mean - k standard deviations of seed noise. The noise
    is pooled over relayrl's and that incumbent's seeds when both have >= 2; an incumbent run once (a long
    run, as the issue allows) gives no spread of its own, so relayrl's seeds alone estimate it (said in the
    cell). Undecided below 2 relayrl seeds."""
    target = f">= best incumbent - {k:g} SD"
    runs = {lib: values for lib, values in incumbents.items() if values}
    if not runs:
        return "-", target, "- (no incumbent run)"
    best = max(runs, key=lambda lib: statistics.fmean(runs[lib]))
    if len(mine) < 2:
        return "-", target, f"- (needs >= 2 relayrl seeds: {len(mine)})"
    theirs = runs[best]
    if len(theirs) >= 2:
        noise, source = math.sqrt((statistics.variance(mine) + statistics.variance(theirs)) / 2), "pooled"
    else:
        noise, source = statistics.stdev(mine), "relayrl's seeds"
    gap = statistics.fmean(mine) - statistics.fmean(theirs)
    # the value columns are medians; the verdict compares means, so the cell says so
    text = f"means {gap:+,.0f} vs {best} (SD {noise:,.0f}, {source})"
    return text, target, "PASS" if gap >= -k * noise else "MISS"


def expand(names: list[str]) -> list[str]:
    return mw.expand(names)


def curve_chart(
    rows: list[dict], out_dir: str, base_dir: str, plt, colors: dict, style: Callable[[str], str]
) -> str | None:
    """mujoco_curves.png: one panel per MuJoCo workload run (algorithms down, envs across), evaluation mean
    against env steps, one line per seed, every library on the same panel; a library's variant (relayrl's
    orthogonal) in its colour, drawn in style(variant) and named library/variant in the legend."""
    present = [w for w in WORKLOADS if any(r["workload"] == w and r.get("curve_file") for r in rows)]
    if not present:
        return None
    groups = [g for g in mw.ALGOS if any(w.startswith(g + "-") for w in present)]
    envs = [e for e in mw.ENVS if any(w.endswith("-" + e) for w in present)]
    fig, axes = plt.subplots(
        len(groups), len(envs), figsize=(5 * len(envs), 3.6 * len(groups)), squeeze=False
    )
    for i, group in enumerate(groups):
        for j, env in enumerate(envs):
            ax, workload = axes[i][j], f"{group}-{env}"
            seen = set()
            # library by library, its plain run before its variants: the legend's order whatever the CSV's
            runs = [r for r in rows if r["workload"] == workload]
            for r in sorted(runs, key=lambda r: (r["library"], r.get("variant", ""), str(r["seed"]))):
                pts = read_curve(base_dir, r)
                lib, variant = r["library"], r.get("variant", "")
                name = lib + (f"/{variant}" if variant else "")
                ax.plot(
                    [p[1] for p in pts],
                    [p[2] for p in pts],
                    color=colors.get(lib, "k"),
                    ls=style(variant),
                    alpha=0.8,
                    lw=1.2,
                    label=None if name in seen else name,
                )
                seen.add(name)
            algo = mw.ALGOS[group][0].upper()
            ax.set_title(f"{workload}: {algo} {mw.ENVS[env]} (one line per seed)", fontsize=9)
            ax.set_xlabel("env steps")
            ax.set_ylabel("deterministic evaluation return")
            if seen:
                ax.legend(fontsize=8)
            else:  # the grid is algorithms x envs with any run; this pair has none yet
                ax.text(0.5, 0.5, "not yet measured", ha="center", va="center", transform=ax.transAxes)
    fig.tight_layout()
    path = os.path.join(out_dir, "mujoco_curves.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
