"""`relayrl scale`: measure env steps/s and time per iteration against the number of rollout workers,
write a CSV and a PNG, and recommend a worker count (the knee: where one more worker adds < 10%).

Measure before you scale: past the knee more workers add nothing, or slow the run down.
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import time
from collections.abc import Callable

import numpy as np

from relayrl.cli.common import (
    EXIT_BAD_INPUT,
    add_run_args,
    config_from_args,
    fail,
    int_at_least,
    positive_float,
    run_name,
)

KNEE_GAIN = 0.10  # relative throughput one more worker must add to be worth it

FIELDS = [
    "workers",
    "env_steps_per_s",
    "time_per_iter_s",
    "speedup",
    "efficiency",
    "sample_frac",
    "learn_frac",
    "sync_frac",
    "iterations",
]


def measure(make_config: Callable[[int], object], workers: int, iterations: int) -> dict:
    """Build with `workers` rollout workers, run `iterations` + 1 iterations (the first warms up: tracing,
    actor start-up) and return throughput and the time shares of the measured ones."""
    algo = make_config(workers).build()
    try:
        algo.train()
        steps = seconds = 0.0
        shares = dict.fromkeys(("sample", "learn", "sync"), 0.0)
        for _ in range(iterations):
            r = algo.train()
            steps += r["env_steps_this_iter"]
            seconds += r["time_this_iter_s"]
            for k in shares:
                shares[k] += r[f"timers/{k}_s"]
    finally:
        algo.stop()
    return {
        "workers": workers,
        "env_steps_per_s": steps / seconds,
        "time_per_iter_s": seconds / iterations,
        **{f"{k}_frac": v / seconds for k, v in shares.items()},
        "iterations": iterations,
    }


def recommend(rows: list[dict]) -> int:
    """The knee: the first worker count after which each added worker adds < KNEE_GAIN throughput."""
    rows = sorted(rows, key=lambda r: r["workers"])
    for here, nxt in zip(rows, rows[1:]):
        gain_per_worker = (nxt["env_steps_per_s"] / here["env_steps_per_s"] - 1.0) / (
            nxt["workers"] - here["workers"]
        )
        if gain_per_worker < KNEE_GAIN:
            return here["workers"]
    return rows[-1]["workers"]


def add_ratios(rows: list[dict]) -> list[dict]:
    base = min(rows, key=lambda r: r["workers"])
    for r in rows:
        r["speedup"] = r["env_steps_per_s"] / base["env_steps_per_s"]
        r["efficiency"] = r["speedup"] / (r["workers"] / base["workers"])
    return rows


def write_csv(rows: list[dict], path: str) -> None:
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=FIELDS)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: (round(r[k], 6) if isinstance(r[k], float) else r[k]) for k in FIELDS})


def plot(rows: list[dict], path: str, title: str, best: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    w = np.array([r["workers"] for r in rows], float)
    sps = np.array([r["env_steps_per_s"] for r in rows])
    per_iter = np.array([r["time_per_iter_s"] for r in rows])
    ideal = sps[0] * w / w[0]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    ax1.plot(w, ideal, "--", color="grey", label="ideal (linear)")
    ax1.plot(w, sps, "o-", color="tab:blue", label="measured")
    ax1.axvline(best, color="tab:green", alpha=0.5, label=f"recommended: {best}")
    ax1.set(xlabel="rollout workers", ylabel="env steps / s", title="throughput")
    ax1.set_xticks(w)
    ax1.legend()
    ax2.plot(w, per_iter, "o-", color="tab:orange")
    ax2.set(xlabel="rollout workers", ylabel="seconds / iteration", title="time per iteration")
    ax2.set_xticks(w)
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.set_ylim(bottom=0)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run(
    make_config: Callable[[int], object],
    worker_counts: list[int],
    iterations: int,
    out_dir: str,
    title: str,
    address: str | None = None,
    report: Callable[[str], None] = print,
) -> tuple[list[dict], int]:
    """Measure every worker count on one Ray session, then write scale.csv and scale.png under out_dir."""
    from relayrl.runtime.cluster import init_ray

    os.makedirs(out_dir, exist_ok=True)
    init_ray(address)  # one Ray session for all counts: each count starts (and stops) its own actors
    rows = []
    for workers in worker_counts:
        start = time.perf_counter()
        row = measure(make_config, workers, iterations)
        rows.append(row)
        report(
            f"workers {workers:>3}: {row['env_steps_per_s']:>10,.0f} env steps/s  "
            f"{row['time_per_iter_s']:.3f} s/iter  "
            f"sample {row['sample_frac']:.0%} learn {row['learn_frac']:.0%}  "
            f"({time.perf_counter() - start:.1f} s)"
        )
    add_ratios(rows)
    best = recommend(rows)
    write_csv(rows, os.path.join(out_dir, "scale.csv"))
    plot(rows, os.path.join(out_dir, "scale.png"), title, best)
    return rows, best


def register(sub) -> None:
    s = sub.add_parser("scale", help="env steps/s and time per iteration against the number of workers")
    add_run_args(s)
    s.add_argument(
        "--workers", type=_int_list, default=[1, 2, 4, 8], help="comma-separated worker counts, e.g. 1,2,4,8"
    )
    s.add_argument(
        "--iterations",
        type=int_at_least(1),
        default=5,
        help="measured iterations per worker count (after one warm-up)",
    )
    s.add_argument(
        "--cpus-per-worker",
        type=positive_float,
        default=None,
        help="CPUs reserved per worker actor (default: 1, or less so that the largest count fits)",
    )
    s.add_argument(
        "--out",
        default=None,
        help="directory for scale.csv and scale.png (default ./relayrl_scale/ALGO_ENV_TIME)",
    )
    s.set_defaults(handler=run_scale)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v < 1 for v in values):
        raise argparse.ArgumentTypeError(f"expected worker counts >= 1, got {text!r}")
    return sorted(set(values))


def run_scale(args: argparse.Namespace) -> int:
    try:
        config = config_from_args(args)
    except (ValueError, OSError) as exc:
        return fail(EXIT_BAD_INPUT, str(exc))
    out = args.out or os.path.join("relayrl_scale", run_name(args.algo, args.env))
    largest = max(args.workers)

    def make_config(workers: int):
        from relayrl.runtime.cluster import cluster_cpus

        cpus = args.cpus_per_worker or min(1.0, cluster_cpus() / largest)
        return config.copy().update_from_dict({"num_rollout_workers": workers, "num_cpus_per_worker": cpus})

    def report(line: str) -> None:
        print(f"relayrl: {line}", file=sys.stderr, flush=True)

    rows, best = run(
        make_config,
        args.workers,
        args.iterations,
        out,
        f"relayrl scale {args.algo} {args.env}",
        config.address,
        report,
    )
    print(f"wrote {os.path.join(out, 'scale.csv')} and {os.path.join(out, 'scale.png')}")
    why = (
        f"each worker past it adds < {KNEE_GAIN:.0%} throughput"
        if best < rows[-1]["workers"]
        else "throughput still grew at the largest count: try more workers"
    )
    print(
        f"recommended workers: {best} ({why}; {rows[-1]['workers']} workers ran at "
        f"{rows[-1]['speedup']:.2f}x "
        f"the throughput of {rows[0]['workers']})"
    )
    return 0
