"""relayrl against the incumbents (Stable-Baselines3, RLlib, CleanRL) side by side on this machine.

    bash benchmarks/anchors/setup.sh                      # once: the incumbents' own venv
    .venv/bin/python benchmarks/run.py --workloads W1,W2,W5 --libs relayrl,sb3,rllib,cleanrl --seeds 3
    .venv/bin/python benchmarks/run.py --report-only benchmarks/results/anchors.csv
    .venv/bin/python benchmarks/run.py --workloads W7 --libs relayrl,sb3,rllib --seeds 3 --cap W7=100000
    .venv/bin/python benchmarks/run.py --workloads W10,W11,W12 --libs relayrl,sb3 --seeds 3   # MuJoCo, hours

Runs the libraries ALTERNATELY (A B C A B C ... for each seed), so that load from other processes on the
machine falls on all of them alike; each run is a fresh process (benchmarks/anchors/*_runner.py) whose JSON
line is appended to the CSV as soon as it finishes (partial results survive). Then writes a markdown table
of medians and ratios (relayrl / best incumbent, against the issue's targets) and PNG charts.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "anchors"))
import mujoco_report  # noqa: E402  (issue 17's MuJoCo workloads: W10-<Env>, W11-<Env>, W12-<Env>)
from common import CURVES_DIR_ENV, read_curve  # noqa: E402

LIBRARIES = ("relayrl", "sb3", "rllib", "cleanrl", "tianshou")
RUNNERS = {lib: os.path.join(HERE, "anchors", f"{lib}_runner.py") for lib in LIBRARIES}
INCUMBENTS = LIBRARIES[1:]
COLUMNS = [
    "library",
    "version",
    "workload",
    "variant",
    "seed",
    "solved",
    "time_to_solve_s",
    "first_iter_s",
    "env_steps",
    "steps_per_s",
    "updates_per_s",
    "final_return",
    "wall_s",
    "load1_before",
    "load1_after",
    "curve_file",
    "error",
    # Atari (W7-W9); appended last so that the rows of an older CSV keep their columns (append_csv)
    "cap",
    "frames_per_s",
    "transitions",
    "rss_bytes",
    "bytes_per_transition",
    "extrapolated_1m_bytes",
]

# (workload, library) -> variants to run; absent = the one default run ("").
VARIANTS = {
    ("W3", "relayrl"): ["raw1", "raw16", "worker16"],
    ("W5", "relayrl"): ["", "w2"],
    ("W5", "rllib"): ["r0", "r2"],
    # envpool: a "not run" row where it is not importable; bf16: model.compute_dtype = "bfloat16"
    ("W7", "relayrl"): ["", "w2", "envpool", "envpool_bf16"],
    # does envpool, and the bf16 torso on it, learn as well as the plain run? (the score at 1M steps)
    ("W8", "relayrl"): ["", "envpool", "envpool_bf16"],
    ("W7", "rllib"): ["r0", "r2"],
    ("W9", "sb3"): ["plain", "optimized"],  # optimize_memory_usage False / True
}
VARIANTS.update(mujoco_report.VARIANTS)
DEFAULT_VARIANT = "default"  # how --variants names the "" variant
NOT_APPLICABLE = {
    ("W3", "sb3"),
    ("W3", "rllib"),
    ("W3", "cleanrl"),
    ("W5", "cleanrl"),
    ("W7", "cleanrl"),  # CleanRL's PyPI scripts do not run here (docs/benchmarks.md)
    ("W8", "rllib"),  # the issue compares W8 and W9 with SB3 only
    ("W8", "cleanrl"),
    ("W9", "rllib"),
    ("W9", "cleanrl"),
} | mujoco_report.NOT_APPLICABLE
TIMEOUT_S = {"W1": 900, "W2": 1200, "W3": 120, "W4": 900, "W4R": 3600, "W5": 300, "W6": 1200}
TIMEOUT_S.update({"W7": 1800, "W8": 6 * 3600, "W9": 1800})
# The caps the timeouts above are sized for (agent steps; transitions for W9): `--cap` scales the timeout.
DEFAULT_CAP = {"W7": 50_000, "W8": 1_000_000, "W9": 1_000_000}
TIMEOUT_S.update(mujoco_report.TIMEOUT_S)
DEFAULT_CAP.update(mujoco_report.DEFAULT_CAP)

TIME_COLUMNS = ("time_to_solve_s", "first_iter_s", "wall_s")
# workload -> (metric column, better, label, target); target = (kind, value): "ratio_max": relayrl/best <= v,
# "ratio_min": relayrl/best >= v, "abs_max": relayrl <= v (per variant), "vs_sb3_min": relayrl/SB3 >= v,
# "sb3_within_noise": relayrl's mean over seeds >= SB3's mean - v pooled standard deviations of the two
# (needs >= 2 seeds each), "mem_max": relayrl <= v["abs"] bytes and <= the median of the (library, variant)
# v["vs"].
METRICS = {
    "W1": [
        ("time_to_solve_s", "min", "time to last-100 mean >= 475 (s)", ("ratio_max", 0.5)),
        ("steps_per_s", "max", "steady env steps/s", None),
    ],
    "W2": [
        ("time_to_solve_s", "min", "time to last-100 mean >= 475 (s)", ("ratio_max", 0.5)),
        ("steps_per_s", "max", "steady env steps/s", None),
    ],
    "W3": [("steps_per_s", "max", "env steps/s, random actions", None)],
    "W4": [("steps_per_s", "max", "env steps/s over 50k steps", ("ratio_min", 2.0))],
    "W4R": [("final_return", "max", "return (last 10 episodes) at 300k steps", None)],
    "W5": [
        (
            "first_iter_s",
            "min",
            "process start -> first finished iteration (s)",
            ("abs_max", {"": 3.0, "w2": 8.0}),
        )
    ],
    "W6": [
        ("time_to_solve_s", "min", "time to last-10 mean >= -200 (s)", None),
        ("updates_per_s", "max", "gradient updates/s", ("vs_sb3_min", 2.0)),
    ],
    "W7": [
        ("frames_per_s", "max", "Breakout env frames/s (agent steps x 4), 8 envs", ("ratio_min", 2.0)),
        ("steps_per_s", "max", "Breakout agent steps/s", None),
    ],
    "W8": [
        (
            "final_return",
            "max",
            "Breakout score (last 100 games) at 1M agent steps",
            ("sb3_within_noise", 1.0),
        ),
        ("wall_s", "min", "wall time of the 1M-step run (s)", None),
    ],
    "W9": [
        (
            "extrapolated_1m_bytes",
            "min",
            "replay memory, 1M Atari transitions",
            ("mem_max", {"abs": 8e9, "vs": ("sb3", "optimized")}),
        ),
        ("bytes_per_transition", "min", "bytes per transition", None),
        ("rss_bytes", "min", "process RSS at the size measured", None),
    ],
    **mujoco_report.METRICS,  # "best_within_noise": mujoco_report.within_noise_best
}
# Tianshou is issue 17's MuJoCo reference only (its own venv: anchors/setup_tianshou.sh)
NOT_APPLICABLE |= {(w, "tianshou") for w in METRICS if w not in mujoco_report.WORKLOADS}


# ----------------------------------------------------------------------------------------------- running
def timeout_s(workload: str, cap: int | None) -> float:
    """The workload's timeout, scaled with a `--cap` other than the cap it is sized for (at least 5 min)."""
    base = TIMEOUT_S.get(workload, 1200)
    if cap is None or workload not in DEFAULT_CAP:
        return base
    return max(300.0, base * cap / DEFAULT_CAP[workload])


def run_one(
    lib: str, workload: str, seed: int, variant: str, cap: int | None = None, curves_dir: str | None = None
) -> dict:
    """One run in a fresh process; its curve file goes to curves_dir (default: benchmarks/results/curves)."""
    limit = timeout_s(workload, cap)
    cmd = [
        sys.executable,
        RUNNERS[lib],
        "--workload",
        workload,
        "--seed",
        str(seed),
        "--variant",
        variant,
        "--timeout",
        str(limit),
    ] + (["--cap", str(cap)] if cap is not None else [])
    env = dict(os.environ, **({CURVES_DIR_ENV: os.path.abspath(curves_dir)} if curves_dir else {}))
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit + 120, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {
            "library": lib,
            "workload": workload,
            "variant": variant,
            "seed": seed,
            "solved": False,
            "error": f"runner exit {proc.returncode}: {proc.stderr.strip()[-300:]}",
        }
    return json.loads(lines[-1])


def append_csv(path: str, row: dict) -> None:
    new = not os.path.exists(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    if not new:
        with open(path, newline="") as f:
            header = next(csv.reader(f), [])
        if header != COLUMNS:  # an older CSV: rewrite it once under today's header, its values kept
            old = read_csv(path)
            with open(path, "w", newline="") as f:
                writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
                writer.writeheader()
                writer.writerows(old)
    with open(path, "a", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        if new:
            writer.writeheader()
        writer.writerow({k: ("" if row.get(k) is None else row.get(k)) for k in COLUMNS})


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def run_all(
    workloads: list[str],
    libs: list[str],
    seeds: int,
    first_seed: int,
    csv_path: str,
    log_path: str,
    caps: dict[str, int] | None = None,
    only_variants: set[str] | None = None,
    curves_dir: str | None = None,
) -> None:
    with open(log_path, "a") as log:
        for workload in workloads:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {workload} start: {uptime()}\n")
            log.flush()
            for seed in range(first_seed, first_seed + seeds):
                for lib in libs:  # alternate: A B C A B C ...
                    if (workload, lib) in NOT_APPLICABLE:
                        continue
                    for variant in VARIANTS.get((workload, lib), [""]):
                        if only_variants is not None and (variant or DEFAULT_VARIANT) not in only_variants:
                            continue
                        row = run_one(lib, workload, seed, variant, (caps or {}).get(workload), curves_dir)
                        append_csv(csv_path, row)
                        t = row.get("time_to_solve_s") or row.get("first_iter_s")
                        print(
                            f"{workload} {lib}{'/' + variant if variant else ''} seed={seed}: "
                            f"solved={row.get('solved')} "
                            f"t={t} steps/s={row.get('steps_per_s')} updates/s={row.get('updates_per_s')} "
                            f"return={row.get('final_return')} frames/s={row.get('frames_per_s')} "
                            f"1M-transition bytes={row.get('extrapolated_1m_bytes')} "
                            f"load={row.get('load1_before')}"
                            f"{' ERROR ' + row['error'][:200] if row.get('error') else ''}",
                            flush=True,
                        )
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {workload} end:   {uptime()}\n")
            log.flush()


# ---------------------------------------------------------------------------------------------- reporting
def read_csv(path: str) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _num(value) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def metric_values(rows: list[dict], column: str) -> list[float]:
    """One value per run; an unsolved run counts as infinite time (a median of 3 with 2 unsolved is inf)."""
    out = []
    for r in rows:
        if r.get("error") and not r.get("error", "").startswith("timeout"):
            continue
        short = _num(r.get("cap")) is not None and (_num(r.get("env_steps")) or 0) < _num(r["cap"])
        if r.get("workload") == "W8" and short:
            continue  # return and wall time at 1M steps: a run stopped short of its cap (timeout) has neither
        if r.get("workload") in mujoco_report.METRICS and r.get("error"):
            continue  # likewise (relayrl counts transitions, a few short of the cap: the timeout tells)
        if column == "time_to_solve_s":
            solved = str(r.get("solved")).lower() == "true"
            out.append(_num(r.get(column)) if solved and _num(r.get(column)) is not None else math.inf)
        elif _num(r.get(column)) is not None:
            out.append(_num(r[column]))
    return out


def summarise(rows: list[dict]) -> dict:
    """{(workload, library, variant): {"stats": {column: (median, n, solved_count)}, "values": {column: [one
    value per run]}, "runs": n, "errors": [...]}}"""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["workload"], r["library"], r.get("variant", "")), []).append(r)
    out = {}
    for key, runs in groups.items():
        stats, per_run = {}, {}
        for column, *_ in METRICS.get(key[0], []):
            values = metric_values(runs, column)
            per_run[column] = values
            if values:
                stats[column] = (
                    statistics.median(values),
                    len(values),
                    sum(1 for r in runs if str(r.get("solved")).lower() == "true"),
                )
        errors = [r["error"] for r in runs if r.get("error") and not r["error"].startswith("timeout")]
        out[key] = {"stats": stats, "values": per_run, "runs": len(runs), "errors": errors}
    return out


def best_incumbent(summary: dict, workload: str, column: str, better: str):
    """The best median among the incumbents; for W3 the reference is the raw vectorised env instead (relayrl's
    worker with 16 envs against gym.make_vec with the same 16 envs and no policy)."""
    refs = {("gymnasium", "raw16")} if workload == "W3" else None
    cands = [
        (s["stats"][column][0], lib, var)
        for (w, lib, var), s in summary.items()
        if w == workload and column in s["stats"] and ((lib, var) in refs if refs else lib in INCUMBENTS)
    ]
    finite = [c for c in cands if math.isfinite(c[0])]
    if not finite:
        return None
    return (min if better == "min" else max)(finite)


def verdict(target, relayrl_value: float, variant: str, best, ref) -> tuple[str, str, str]:
    """-> (ratio text, target text, PASS/MISS/-); ref(library, variant) -> (its (median, n, solved) or None,
    its per-run values) for this workload and metric."""
    ratio = relayrl_value / best[0] if best and best[0] else None
    ratio_txt = f"{ratio:.2f}x" if ratio is not None and math.isfinite(ratio) else "-"
    if target is None:
        return ratio_txt, "-", "-"
    kind, value = target
    if kind in ("ratio_max", "ratio_min"):
        at_most = kind == "ratio_max"
        target_txt = f"{'<=' if at_most else '>='} {value}x best"
        if best is None:  # no incumbent run, or none with a finite figure
            return ratio_txt, target_txt, "- (no incumbent figure)"
        ok = ratio is not None and (ratio <= value if at_most else ratio >= value)
        return ratio_txt, target_txt, "PASS" if ok else "MISS"
    if kind == "abs_max":
        limit = value.get(variant)
        if limit is None:
            return ratio_txt, "-", "-"
        return ratio_txt, f"<= {limit} s", "PASS" if relayrl_value <= limit else "MISS"
    if kind == "vs_sb3_min":
        sb3 = ref("sb3", "")[0]
        r = relayrl_value / sb3[0] if sb3 and sb3[0] else None
        txt = f"{r:.2f}x SB3" if r is not None else "-"
        return txt, f">= {value}x SB3", "PASS" if r is not None and r >= value else "MISS"
    if kind == "best_within_noise":
        incumbents = {lib: ref(lib, "")[1] for lib in INCUMBENTS}
        return mujoco_report.within_noise_best(ref("relayrl", variant)[1], incumbents, value)
    if kind == "sb3_within_noise":
        return within_noise(ref("relayrl", variant)[1], ref("sb3", "")[1], value)
    if kind == "mem_max":
        other = ref(*value["vs"])[0]
        target_txt = f"<= {value['abs'] / 1e9:g} GB and <= {'/'.join(value['vs'])}"
        if other is None:
            return ratio_txt, target_txt, f"- (no {'/'.join(value['vs'])} run)"
        ok = relayrl_value <= value["abs"] and relayrl_value <= other[0]
        return (
            f"{relayrl_value / other[0]:.2f}x {'/'.join(value['vs'])}",
            target_txt,
            "PASS" if ok else "MISS",
        )
    return ratio_txt, "-", "-"


def within_noise(mine: list[float], sb3: list[float], k: float) -> tuple[str, str, str]:
    """relayrl's mean >= SB3's mean - k pooled sample standard deviations (seed noise: how far two seeds of
    the same library land apart); undecided below 2 runs each, where there is no noise estimate."""
    target = f">= SB3 - {k:g} pooled SD"
    if len(mine) < 2 or len(sb3) < 2:
        return "-", target, f"- (needs >= 2 seeds each: {len(mine)}, {len(sb3)})"
    noise = math.sqrt((statistics.variance(mine) + statistics.variance(sb3)) / 2)
    gap = statistics.fmean(mine) - statistics.fmean(sb3)
    return f"{gap:+.1f} vs SB3 (SD {noise:.1f})", target, "PASS" if gap >= -k * noise else "MISS"


def _fmt(x: float | None, column: str) -> str:
    if x is None:
        return "-"
    if not math.isfinite(x):
        return "not solved"
    if column in TIME_COLUMNS:
        return f"{x:.1f}"
    if column.endswith("_bytes"):
        return f"{x / 1e9:.2f} GB"
    if column == "bytes_per_transition":
        return f"{x:,.0f} B"
    if column == "final_return" and abs(x) < 100:  # Breakout scores at 1M steps: tens
        return f"{x:.1f}"
    return f"{x:,.0f}"


def table(summary: dict) -> str:
    libs_present = [lib for lib in ("relayrl", "gymnasium", *INCUMBENTS) if any(k[1] == lib for k in summary)]
    head = ["workload", "metric"] + libs_present + ["relayrl / best incumbent", "target", "verdict"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for workload, metrics in METRICS.items():
        keys = [k for k in summary if k[0] == workload]
        if not keys:
            continue
        for column, better, label, target in metrics:
            cells = {}
            for lib in libs_present:
                parts = []
                for w, lib_name, var in sorted(k for k in keys if k[1] == lib):
                    s = summary[(w, lib_name, var)]
                    if column in s["stats"]:
                        med, n, solved = s["stats"][column]
                        extra = f" ({solved}/{n} solved)" if column == "time_to_solve_s" else f" (n={n})"
                        name = var or default_name(lib, w)
                        multi = sum(1 for k in keys if k[1] == lib) > 1 or bool(var)
                        parts.append(f"{name + ': ' if multi else ''}{_fmt(med, column)}{extra}")
                    elif s["errors"]:
                        parts.append(f"{var + ': ' if var else ''}did not run")
                cells[lib] = "<br>".join(parts) or "-"
            best = best_incumbent(summary, workload, column, better)

            def ref(lib: str, var: str, workload=workload, column=column):
                entry = summary.get((workload, lib, var))
                return (entry["stats"].get(column), entry["values"].get(column, [])) if entry else (None, [])

            ratios, targets, verdicts = [], [], []
            keys_relayrl = [k for k in keys if k[1] == "relayrl"]
            for w, lib_name, var in sorted(k for k in keys if k[1] == "relayrl"):
                stat = summary[(w, lib_name, var)]["stats"].get(column)
                if stat is None:
                    continue
                r, t, v = verdict(target, stat[0], var, best, ref)
                tag = f"{var or default_name('relayrl', w)}: " if len(ratios) or len(keys_relayrl) > 1 else ""
                ratios.append(tag + r)
                targets.append(tag + t)
                verdicts.append(tag + v)
            best_variant = "/" + best[2] if best and best[2] else ""
            best_txt = f" ({'vs' if workload == 'W3' else 'best'}: {best[1]}{best_variant})" if best else ""
            row = (
                [workload, label]
                + [cells[lib] for lib in libs_present]
                + [
                    "<br>".join(ratios) + (best_txt if ratios else "") or "-",
                    "<br>".join(targets) or "-",
                    "<br>".join(verdicts) or "-",
                ]
            )
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def default_name(lib: str, workload: str) -> str:
    """The table's name for a library's plain ("") run beside its variants: relayrl's plain run of the
    Atari / CartPole workloads is the in-process one (its variants add Ray workers or envpool)."""
    return "in-process" if lib == "relayrl" and not mujoco_report.mw.is_mujoco(workload) else "default"


COLORS = {
    "relayrl": "tab:red",
    "sb3": "tab:blue",
    "rllib": "tab:green",
    "cleanrl": "tab:purple",
    "tianshou": "tab:orange",
    "gymnasium": "tab:gray",
}


def charts(summary: dict, rows: list[dict], out_dir: str, base_dir: str) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = bar_charts(summary, out_dir, plt)
    paths = [curve_chart(rows, out_dir, base_dir, plt)]
    paths.append(mujoco_report.curve_chart(rows, out_dir, base_dir, plt, COLORS, variant_style))
    return written + [p for p in paths if p]


def bar_charts(summary: dict, out_dir: str, plt) -> list[str]:
    written = []
    panels = [
        ("time_to_solve_s", "W1", "W1 PPO CartPole: time to solve (s)"),
        ("time_to_solve_s", "W2", "W2 DQN CartPole: time to solve (s)"),
        ("first_iter_s", "W5", "W5 start -> first iteration (s)"),
        ("time_to_solve_s", "W6", "W6 SAC Pendulum: time to -200 (s)"),
    ]
    throughput = [
        ("steps_per_s", "W1", "W1 PPO CartPole env steps/s"),
        ("steps_per_s", "W2", "W2 DQN CartPole env steps/s"),
        ("steps_per_s", "W3", "W3 CartPole env steps/s (random)"),
        ("steps_per_s", "W4", "W4 PPO HalfCheetah env steps/s"),
        ("updates_per_s", "W6", "W6 SAC Pendulum updates/s"),
    ]
    atari = [
        ("frames_per_s", "W7", "W7 PPO Breakout env frames/s, 8 envs"),
        ("final_return", "W8", "W8 Breakout score at 1M agent steps"),
        ("extrapolated_1m_bytes", "W9", "W9 replay memory, 1M transitions (GB)"),
    ]
    for name, spec in (
        ("time_bars.png", panels),
        ("throughput_bars.png", throughput),
        ("atari_bars.png", atari),
    ):
        spec = [p for p in spec if any(k[0] == p[1] and p[0] in s["stats"] for k, s in summary.items())]
        if not spec:
            continue
        fig, axes = plt.subplots(1, len(spec), figsize=(4.2 * len(spec), 3.8), squeeze=False)
        for ax, (column, workload, title) in zip(axes[0], spec):
            items = [
                (f"{lib}{'/' + var if var else ''}", s["stats"][column][0], lib)
                for (w, lib, var), s in sorted(summary.items())
                if w == workload and column in s["stats"]
            ]
            labels = [i[0] for i in items]
            scale = 1e-9 if column.endswith("_bytes") else 1.0  # memory in GB
            values = [i[1] * scale if math.isfinite(i[1]) else 0.0 for i in items]
            bars = ax.bar(range(len(items)), values, color=[COLORS.get(i[2], "k") for i in items])
            if name == "atari_bars.png":  # each seed's value over its median: the seed noise W8 is judged by
                for x, (label, _, lib) in enumerate(items):
                    lib_var = (lib, label.partition("/")[2])
                    runs = summary[(workload, *lib_var)]["values"][column]
                    ax.plot([x] * len(runs), [v * scale for v in runs], "k.", ms=4)
            for bar, item in zip(bars, items):
                ax.annotate(
                    _fmt(item[1], column),
                    (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                    ha="center",
                    va="bottom",
                    fontsize=8,
                )
            ax.set_xticks(range(len(items)), labels, rotation=30, ha="right", fontsize=8)
            ax.set_title(title, fontsize=9)
        fig.suptitle("medians over seeds (same machine, same run)", fontsize=9)
        fig.tight_layout()
        path = os.path.join(out_dir, name)
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


VARIANT_STYLES = ("--", ":", "-.")


def variant_style(variant: str) -> str:
    """A library's plain run solid, each of its variants in its own dash pattern (they share its colour)."""
    if not variant:
        return "-"
    names = sorted({v for variants in VARIANTS.values() for v in variants if v})
    return VARIANT_STYLES[names.index(variant) % len(VARIANT_STYLES)] if variant in names else "--"


def curve_chart(rows: list[dict], out_dir: str, base_dir: str, plt) -> str | None:
    """learning_curves.png: each run's curve, one panel per workload that has curves."""
    curves = [
        w
        for w in ("W1", "W2", "W6", "W4R", "W8")
        if any(r["workload"] == w and r.get("curve_file") for r in rows)
    ]
    if not curves:
        return None
    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.8), squeeze=False)
    for ax, workload in zip(axes[0], curves):
        seen = set()
        for r in rows:
            pts = read_curve(base_dir, r) if r["workload"] == workload else []
            if not pts:
                continue
            label = r["library"] + (f"/{r['variant']}" if r.get("variant") else "")
            x_col = 1 if workload == "W8" else 0  # W8 compares returns at equal env steps
            ax.plot(
                [p[x_col] for p in pts],
                [p[2] for p in pts],
                color=COLORS.get(r["library"], "k"),
                ls=variant_style(r.get("variant", "")),
                alpha=0.8,
                lw=1.2,
                label=None if label in seen else label,
            )
            seen.add(label)
        ax.set_xlabel("agent steps" if workload == "W8" else "wall clock from process start (s)")
        ax.set_ylabel("mean episode return")
        x_name = "agent steps" if workload == "W8" else "wall clock"
        ax.set_title(f"{workload}: reward vs {x_name} (one line per seed)", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, "learning_curves.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def report(csv_path: str, out_dir: str) -> str:
    rows = read_csv(csv_path)
    summary = summarise(rows)
    md = table(summary)
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "table.md"), "w") as f:
        f.write(md)
    base_dir = HERE  # a curve_file is relative to benchmarks/ or absolute (anchors/common.py writes it)
    for path in charts(summary, rows, out_dir, base_dir):
        print(f"wrote {path}")
    return md


def parse_caps(specs: list[str]) -> dict[str, int]:
    """['W7=100000', ...] -> {'W7': 100000}; a bad one exits with one line naming it."""
    caps = {}
    for spec in specs:
        workload, _, number = spec.partition("=")
        named = mujoco_report.expand([workload])  # W10=N: the cap of W10-HalfCheetah, W10-Hopper, ...
        if any(w not in DEFAULT_CAP for w in named) or not number.isdigit() or int(number) < 1:
            sys.exit(f"run.py: --cap {spec!r}: allowed: W=N with W one of {sorted(DEFAULT_CAP)} and N >= 1")
        caps.update({w: int(number) for w in named})
    return caps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--workloads",
        default="W1,W2,W5",
        help="comma-separated: " + ",".join(METRICS) + " (W10, W11, W12: all three of their envs)",
    )
    p.add_argument("--libs", default="relayrl,sb3,rllib,cleanrl")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument(
        "--cap",
        action="append",
        default=[],
        metavar="W=N",
        help="step cap of workload W instead of its default (agent steps for W7/W8, transitions for W9): "
        "--cap W7=100000; the timeout scales with it",
    )
    p.add_argument(
        "--variants",
        default=None,
        help=f"comma-separated: run only these variants of each library (e.g. envpool_bf16; "
        f"'{DEFAULT_VARIANT}' is a library's plain run); all by default",
    )
    p.add_argument("--csv", default=os.path.join(HERE, "results", "anchors.csv"))
    p.add_argument("--out", default=os.path.join(HERE, "results"), help="directory for table.md and the PNGs")
    p.add_argument(
        "--report-only", metavar="CSV", default=None, help="regenerate table and charts from a CSV"
    )
    args = p.parse_args()
    if args.report_only:
        print(report(args.report_only, args.out))
        return
    workloads = mujoco_report.expand([w.strip() for w in args.workloads.split(",") if w.strip()])
    libs = [lib.strip() for lib in args.libs.split(",") if lib.strip()]
    bad = [w for w in workloads if w not in METRICS] + [lib for lib in libs if lib not in RUNNERS]
    if bad:
        sys.exit(
            f"run.py: unknown workload/library {bad}; workloads: {sorted(METRICS)}, libs: {sorted(RUNNERS)}"
        )
    caps = parse_caps(args.cap)
    only = None if args.variants is None else {v.strip() for v in args.variants.split(",") if v.strip()}
    known = {v or DEFAULT_VARIANT for variants in VARIANTS.values() for v in variants} | {DEFAULT_VARIANT}
    if only is not None and (not only or only - known):
        sys.exit(f"run.py: --variants {args.variants!r}: allowed: comma-separated from {sorted(known)}")
    os.makedirs(args.out, exist_ok=True)
    log = os.path.join(args.out, "run_log.txt")
    # the curves go beside the table: a trial run with --out elsewhere leaves benchmarks/results alone
    curves = os.path.join(args.out, "curves")
    run_all(workloads, libs, args.seeds, args.first_seed, args.csv, log, caps, only, curves)
    print(report(args.csv, args.out))


if __name__ == "__main__":
    main()
