"""The measurements of `relayrl scale`: each worker count built, warmed up and run for some iterations, in
rounds (every count once per round, so drift in the machine's load spreads over all counts); and the
scale.csv / scale.png they leave."""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable

import numpy as np

MIN_SAMPLES = 3  # measured iterations per count below which no standard error is estimated
FIELDS = [
    "workers",
    "env_steps_per_s",
    "env_steps_per_s_se",
    "time_per_iter_s",
    "speedup",
    "efficiency",
    "sample_frac",
    "learn_frac",
    "sync_frac",
    "worker_cpu_util",
    "cores_needed",
    "iterations",
]


def measure(make_config: Callable[[int], object], workers: int, iterations: int) -> list[dict]:
    """Build with `workers` rollout workers, run one warm-up iteration (tracing, actor start-up), then
    `iterations` measured ones; each measured iteration's figures."""
    algo = make_config(workers).build()
    samples = []
    try:
        algo.train()
        for _ in range(iterations):
            r = algo.train()
            cpu = [v for k, v in r.items() if k.startswith("workers/") and k.endswith("/cpu_util")]
            samples.append(
                {
                    "steps": r["env_steps_this_iter"],
                    "seconds": r["time_this_iter_s"],
                    **{k: r[f"timers/{k}_s"] for k in ("sample", "learn", "sync")},
                    "worker_cpu_util": float(np.mean(cpu)) if cpu else math.nan,
                }
            )
    finally:
        algo.stop()
    return samples


def summarise(workers: int, samples: list[dict]) -> dict:
    """One row per worker count: throughput (all steps over all seconds) with the standard error of the
    per-iteration throughputs (nan with fewer than MIN_SAMPLES: too few to estimate it), time shares, the
    workers' CPU use."""
    steps = sum(s["steps"] for s in samples)
    seconds = sum(s["seconds"] for s in samples)
    rates = np.array([s["steps"] / max(s["seconds"], 1e-9) for s in samples])
    se = float(np.std(rates, ddof=1) / math.sqrt(len(rates))) if len(rates) >= MIN_SAMPLES else math.nan
    cpu = [s["worker_cpu_util"] for s in samples if not math.isnan(s["worker_cpu_util"])]
    return {
        "workers": workers,
        "env_steps_per_s": steps / seconds,
        "env_steps_per_s_se": se,
        "time_per_iter_s": seconds / len(samples),
        **{f"{k}_frac": sum(s[k] for s in samples) / seconds for k in ("sample", "learn", "sync")},
        "worker_cpu_util": float(np.mean(cpu)) if cpu else math.nan,
        "iterations": len(samples),
    }


def run_rounds(
    make_config: Callable[[int], object],
    worker_counts: list[int],
    iterations: int,
    repeats: int,
    report: Callable[[str], None],
) -> list[dict]:
    """Every count measured `repeats` times, round by round; one summary row per count."""
    samples: dict[int, list[dict]] = {w: [] for w in worker_counts}
    for round_index in range(repeats):
        for workers in worker_counts:
            start = time.perf_counter()
            got = measure(make_config, workers, iterations)
            samples[workers] += got
            row = summarise(workers, got)
            report(
                f"workers {workers:>3}{' (in-process)' if workers == 0 else ''}: "
                f"{row['env_steps_per_s']:>10,.0f} env steps/s  {row['time_per_iter_s']:.3f} s/iter  "
                f"sample {row['sample_frac']:.0%} learn {row['learn_frac']:.0%}  "
                f"(round {round_index + 1}/{repeats}, {time.perf_counter() - start:.1f} s)"
            )
    return [summarise(w, samples[w]) for w in worker_counts]


def write_csv(rows: list[dict], path: str) -> None:
    def cell(value):
        if isinstance(value, float):
            return "" if math.isnan(value) else round(value, 6)
        return value

    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: cell(r.get(k, math.nan)) for k in FIELDS})


def plot(rows: list[dict], path: str, title: str, best: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = np.array([r["workers"] for r in rows], float)
    sps = np.array([r["env_steps_per_s"] for r in rows])
    se = np.nan_to_num(np.array([r["env_steps_per_s_se"] for r in rows]))
    per_iter = np.array([r["time_per_iter_s"] for r in rows])
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    one = [r for r in rows if r["workers"] >= 1]
    if one:  # linear from the fewest Ray workers measured (0 is another mode: sampling in this process)
        ideal = one[0]["env_steps_per_s"] * w / one[0]["workers"]
        ax1.plot(w[w >= 1], ideal[w >= 1], "--", color="grey", label="ideal (linear)")
    ax1.errorbar(w, sps, yerr=2 * se, fmt="o-", color="tab:blue", capsize=3, label="measured (±2 s.e.)")
    ax1.axvline(best, color="tab:green", alpha=0.5, label=f"recommended: {best}")
    ax1.set(xlabel="rollout workers (0 = in-process)", ylabel="env steps / s", title="throughput")
    ax1.set_xticks(w)
    ax1.legend()
    ax2.plot(w, per_iter, "o-", color="tab:orange")
    ax2.set(
        xlabel="rollout workers (0 = in-process)", ylabel="seconds / iteration", title="time per iteration"
    )
    ax2.set_xticks(w)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
