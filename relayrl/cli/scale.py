"""`relayrl scale`: measure env steps/s and time per iteration against the number of rollout workers (0: in
this process, no Ray), write a CSV and a PNG, and recommend a worker count.

The recommendation is the knee among the counts this machine's cores can serve: walking up from the fewest
workers, a count is worth it only when it adds >= 10% throughput per added worker AND more than the noise
(two standard errors of the difference, from the per-iteration throughputs). A count whose workers need more
CPU than the cores have (measured worker CPU use x workers + the learner's share) is never recommended. A
run too short to estimate the noise, or differences within it, keeps the fewest workers and says so.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable

from relayrl.cli.common import (
    EXIT_BAD_INPUT,
    add_run_args,
    config_from_args,
    fail,
    int_at_least,
    nonempty,
    positive_float,
)
from relayrl.cli.run_names import make_writable_dir, run_name
from relayrl.cli.scale_runs import MIN_SAMPLES, plot, run_rounds, write_csv

KNEE_GAIN = 0.10  # relative throughput one more worker must add to be worth it
NOISE_Z = 2.0  # a difference counts when it exceeds this many standard errors
MAX_WORKERS = 4096  # past this a worker count is a typo


def knee(rows: list[dict]) -> tuple[int, str]:
    """(recommended count, why): why is 'gain' (the next count adds < KNEE_GAIN per worker), 'noise' (its
    difference is within the noise), 'cores' (the next count needs more cores than there are) or 'end'."""
    rows = sorted(rows, key=lambda r: r["workers"])
    served = [r for r in rows if r.get("servable", True)]
    for here, nxt in zip(served, served[1:]):
        gain_per_worker = (nxt["env_steps_per_s"] / here["env_steps_per_s"] - 1.0) / max(
            nxt["workers"] - here["workers"], 1
        )
        if gain_per_worker < KNEE_GAIN:
            return here["workers"], "gain"
        if not significant(here, nxt):
            return here["workers"], "noise"
    best = served[-1]["workers"]
    return best, "cores" if any(r["workers"] > best for r in rows) else "end"


def recommend(rows: list[dict]) -> int:
    return knee(rows)[0]


def significant(a: dict, b: dict) -> bool:
    """Whether b's throughput differs from a's by more than NOISE_Z standard errors (rows without a
    standard error are exact; a nan one, too few samples to tell, is never significant)."""
    se = math.hypot(a.get("env_steps_per_s_se", 0.0), b.get("env_steps_per_s_se", 0.0))
    return not math.isnan(se) and abs(b["env_steps_per_s"] - a["env_steps_per_s"]) > NOISE_Z * se


def mark_cores(rows: list[dict], cores: float) -> list[str]:
    """Set each row's cores_needed and servable: N workers need N x the CPU one worker used where it ran
    least contended (the fewest Ray workers) plus the driver's busy share (learning and weight sync). 0 (one
    process) is always served. Returns a note per count the cores cannot serve."""
    ray_rows = [r for r in sorted(rows, key=lambda r: r["workers"]) if r["workers"] >= 1]
    per_worker = ray_rows[0]["worker_cpu_util"] if ray_rows else math.nan
    per_worker = 1.0 if math.isnan(per_worker) else per_worker  # unmeasured: assume CPU-bound
    notes = []
    for r in rows:
        r["cores_needed"] = 1.0
        if r["workers"] >= 1:
            r["cores_needed"] = r["workers"] * per_worker + r["learn_frac"] + r["sync_frac"]
        r["servable"] = r["workers"] == 0 or r["cores_needed"] <= cores
        if not r["servable"]:
            notes.append(
                f"{plural(r['workers'])} need ~{r['cores_needed']:.1f} cores ({per_worker:.2f} per worker, "
                f"measured at {ray_rows[0]['workers']}, + {r['learn_frac'] + r['sync_frac']:.2f} for the "
                f"learner) and {cores:g} are here: not recommended"
            )
    return notes


def add_ratios(rows: list[dict]) -> list[dict]:
    """speedup: throughput over the fewest workers'; efficiency: throughput per worker over that of the
    fewest Ray workers (nan for 0: no workers to share it)."""
    base = min(rows, key=lambda r: r["workers"])
    ray_rows = [r for r in rows if r["workers"] >= 1]
    unit = min(ray_rows, key=lambda r: r["workers"]) if ray_rows else None
    for r in rows:
        r["speedup"] = r["env_steps_per_s"] / base["env_steps_per_s"]
        r["efficiency"] = math.nan
        if unit is not None and r["workers"] >= 1:
            r["efficiency"] = (r["env_steps_per_s"] / r["workers"]) / (
                unit["env_steps_per_s"] / unit["workers"]
            )
    return rows


def run(
    make_config: Callable[[int], object],
    worker_counts: list[int],
    iterations: int,
    out_dir: str,
    title: str,
    address: str | None = None,
    report: Callable[[str], None] = print,
    repeats: int = 1,
) -> tuple[list[dict], int, str, list[str]]:
    """Measure every count (one Ray session for all, started only when a count needs it), then write
    scale.csv and scale.png under out_dir: (rows, recommended count, why, notes on the cores)."""
    os.makedirs(out_dir, exist_ok=True)
    cores = float(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    if any(w >= 1 for w in worker_counts):
        from relayrl.runtime.cluster import cluster_cpus, init_ray

        init_ray(address)  # each count starts (and stops) its own actors on this one session
        cores = cluster_cpus()
    rows = run_rounds(make_config, worker_counts, iterations, repeats, report)
    add_ratios(rows)
    notes = mark_cores(rows, cores)
    best, why = knee(rows)
    write_csv(rows, os.path.join(out_dir, "scale.csv"))
    plot(rows, os.path.join(out_dir, "scale.png"), title, best)
    return rows, best, why, notes


def register(sub) -> None:
    s = sub.add_parser(
        "scale",
        help="env steps/s and time per iteration against the number of workers",
        description="Measure throughput per worker count (0 = sampling in this process) and recommend the "
        "knee among the counts this machine's cores can serve, with the noise taken into account.",
    )
    add_run_args(s)
    s.add_argument(
        "--workers",
        type=_int_list,
        default=None,
        metavar="N,N,...",
        help="comma-separated worker counts, 0 = in-process (default: 0 and 1, 2, 4, ... up to the cores)",
    )
    s.add_argument(
        "--iterations",
        type=int_at_least(1),
        default=5,
        metavar="N",
        help="measured iterations per worker count and round, after one warm-up (3+ in all to estimate "
        "the noise)",
    )
    s.add_argument(
        "--repeats",
        type=int_at_least(1),
        default=1,
        metavar="R",
        help="rounds over all counts (each builds afresh; more rounds average out the machine's load)",
    )
    s.add_argument(
        "--cpus-per-worker",
        type=positive_float,
        default=None,
        help="CPUs reserved per worker actor (default: 1, or less so that the largest count fits)",
    )
    s.add_argument(
        "--out",
        type=nonempty,
        default=None,
        metavar="DIR",
        help="directory for scale.csv and scale.png (default ./relayrl_scale/ALGO_ENV_TIME)",
    )
    s.set_defaults(handler=run_scale)


def _int_list(text: str) -> list[int]:
    allowed = f"allowed: comma-separated worker counts from 0 to {MAX_WORKERS}, e.g. 0,1,2,4"
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        values = []
    if not values or any(not 0 <= v <= MAX_WORKERS for v in values):
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is invalid: {allowed}")
    return sorted(set(values))


def default_counts() -> list[int]:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return [0] + [2**k for k in range(16) if 2**k <= cores]


def run_scale(args: argparse.Namespace) -> int:
    counts = args.workers or default_counts()
    try:
        config = config_from_args(args)
        for workers in counts:  # every count's config is valid before anything is measured
            config.copy().update_from_dict({"num_rollout_workers": workers}).validate()
        out = args.out or os.path.join("relayrl_scale", run_name(args.algo, args.env))
        make_writable_dir(out, "--out")
    except (ValueError, OSError) as exc:
        return fail(EXIT_BAD_INPUT, str(exc))

    def make_config(workers: int):
        fields: dict = {"num_rollout_workers": workers}
        if workers >= 1:
            from relayrl.runtime.cluster import cluster_cpus

            fields["num_cpus_per_worker"] = args.cpus_per_worker or min(1.0, cluster_cpus() / max(counts))
        return config.copy().update_from_dict(fields)

    def report(line: str) -> None:
        print(f"relayrl: {line}", file=sys.stderr, flush=True)

    title = f"relayrl scale {args.algo} {args.env}"
    rows, best, why, notes = run(
        make_config, counts, args.iterations, out, title, config.address, report, args.repeats
    )
    for note in notes:
        report(note)
    if why == "noise" or rows[0]["iterations"] < MIN_SAMPLES:
        report(f"warning: {noise_warning(rows)}")
    print(f"wrote {os.path.join(out, 'scale.csv')} and {os.path.join(out, 'scale.png')}")
    print(f"recommended workers: {best} ({reason(rows, best, why)})")
    return 0


def noise_warning(rows: list[dict]) -> str:
    n = rows[0]["iterations"]
    if n < MIN_SAMPLES:
        return (
            f"too short to separate the counts: {n} measured iteration(s) per count, the noise needs "
            f">= {MIN_SAMPLES} (--iterations, --repeats): no significant difference; keep the fewest"
        )
    worst = max(r["env_steps_per_s_se"] / r["env_steps_per_s"] for r in rows)
    return (
        f"the counts differ by less than their noise (up to ±{NOISE_Z * worst:.0%} at {NOISE_Z:g} standard "
        f"errors): no significant difference; keep the fewest (more --iterations or --repeats to separate)"
    )


def reason(rows: list[dict], best: int, why: str) -> str:
    fewest = min(r["workers"] for r in rows)
    if len(rows) == 1:
        return "the only count measured"
    if why == "noise" or (best == fewest and rows[0]["iterations"] < MIN_SAMPLES):
        text = "no significant difference; keep the fewest"
    elif why == "gain":
        text = f"each worker past it adds < {KNEE_GAIN:.0%} throughput"
    elif why == "cores":
        text = "the next count needs more cores than there are"
    else:
        text = "throughput still grew at the largest count: try more workers"
    top = max(rows, key=lambda r: r["env_steps_per_s"])
    return (
        f"{text}; the most throughput measured: {plural(top['workers'])} at {top['speedup']:.2f}x {fewest}'s"
    )


def plural(workers: int) -> str:
    return f"{workers} worker{'' if workers == 1 else 's'}"
