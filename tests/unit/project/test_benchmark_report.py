"""benchmarks/run.py's table logic on a small synthetic CSV: medians, unsolved runs as infinite time,
ratios against the best incumbent, and the issue's targets (no incumbent is run here)."""

from __future__ import annotations

import csv
import importlib.util
import math
import os
import sys

import pytest

from tests.helpers.paths import ROOT

RUN_PY = str(ROOT / "benchmarks" / "run.py")


@pytest.fixture(scope="module")
def run_py():
    spec = importlib.util.spec_from_file_location("bench_run", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(path, rows, columns):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: r.get(k, "") for k in columns})


def row(lib, workload, seed, variant="", **kw):
    return {"library": lib, "workload": workload, "seed": seed, "variant": variant, **kw}


def test_medians_ratios_and_verdicts(run_py, tmp_path):
    rows = [
        # W1: relayrl 4, 5, 6 s; SB3 14, 15, 17 s (best); RLlib 40, 60, unsolved
        *[
            row("relayrl", "W1", s, solved="True", time_to_solve_s=t, steps_per_s=9000)
            for s, t in enumerate([5, 4, 6])
        ],
        *[
            row("sb3", "W1", s, solved="True", time_to_solve_s=t, steps_per_s=3000)
            for s, t in enumerate([14, 17, 15])
        ],
        row("rllib", "W1", 0, solved="True", time_to_solve_s=40),
        row("rllib", "W1", 1, solved="True", time_to_solve_s=60),
        row("rllib", "W1", 2, solved="False", time_to_solve_s=""),
        # W2: relayrl solves 2 of 3 in 20, 30 s -> median 30; SB3 solves 1 of 3 -> median inf; RLlib 200 s
        row("relayrl", "W2", 0, solved="True", time_to_solve_s=20),
        row("relayrl", "W2", 1, solved="True", time_to_solve_s=30),
        row("relayrl", "W2", 2, solved="False"),
        row("sb3", "W2", 0, solved="True", time_to_solve_s=50),
        row("sb3", "W2", 1, solved="False"),
        row("sb3", "W2", 2, solved="False"),
        *[row("rllib", "W2", s, solved="True", time_to_solve_s=200) for s in range(3)],
        # W4: throughput, higher is better
        *[row("relayrl", "W4", s, steps_per_s=5000) for s in range(3)],
        *[row("rllib", "W4", s, steps_per_s=2400) for s in range(3)],
        # W5: absolute limits per relayrl variant; CleanRL did not run (an error row)
        *[row("relayrl", "W5", s, first_iter_s=2.5) for s in range(3)],
        *[row("relayrl", "W5", s, "w2", first_iter_s=9.0) for s in range(3)],
        *[row("rllib", "W5", s, "r0", first_iter_s=6.6) for s in range(3)],
        row("cleanrl", "W1", 0, solved="False", error="exit 1: ModuleNotFoundError: No module named 'gym'"),
        # W6: updates/s against SB3's
        *[row("relayrl", "W6", s, solved="True", time_to_solve_s=6, updates_per_s=500) for s in range(3)],
        *[row("sb3", "W6", s, solved="True", time_to_solve_s=60, updates_per_s=100) for s in range(3)],
    ]
    path = tmp_path / "anchors.csv"
    write(path, rows, run_py.COLUMNS)
    summary = run_py.summarise(run_py.read_csv(path))

    assert summary[("W1", "relayrl", "")]["stats"]["time_to_solve_s"] == (5.0, 3, 3)
    assert summary[("W1", "rllib", "")]["stats"]["time_to_solve_s"][0] == 60.0
    assert math.isinf(summary[("W2", "sb3", "")]["stats"]["time_to_solve_s"][0])
    assert run_py.best_incumbent(summary, "W1", "time_to_solve_s", "min")[:2] == (15.0, "sb3")
    assert run_py.best_incumbent(summary, "W2", "time_to_solve_s", "min")[:2] == (200.0, "rllib")
    assert summary[("W1", "cleanrl", "")]["errors"]

    md = run_py.table(summary)
    lines = {tuple(c.strip() for c in ln.strip("|").split("|")[:2]): ln for ln in md.splitlines()[2:]}
    w1 = lines[("W1", "time to last-100 mean >= 475 (s)")]
    assert "0.33x" in w1 and "PASS" in w1 and "did not run" in w1  # 5 / 15
    w2 = lines[("W2", "time to last-100 mean >= 475 (s)")]
    assert "0.15x" in w2 and "PASS" in w2 and "not solved (1/3 solved)" in w2  # 30 / 200
    w4 = lines[("W4", "env steps/s over 50k steps")]
    assert "2.08x" in w4 and "PASS" in w4  # 5000 / 2400
    w5 = lines[("W5", "process start -> first finished iteration (s)")]
    assert "in-process: PASS" in w5 and "w2: MISS" in w5  # 2.5 <= 3; 9 > 8
    w6 = lines[("W6", "gradient updates/s")]
    assert "5.00x SB3" in w6 and "PASS" in w6


def test_miss_when_slower_than_half(run_py, tmp_path):
    rows = [
        row("relayrl", "W1", 0, solved="True", time_to_solve_s=10),
        row("sb3", "W1", 0, solved="True", time_to_solve_s=15),
    ]
    path = tmp_path / "a.csv"
    write(path, rows, run_py.COLUMNS)
    md = run_py.table(run_py.summarise(run_py.read_csv(path)))
    w1 = next(ln for ln in md.splitlines() if ln.startswith("| W1 | time"))
    assert "0.67x" in w1 and "MISS" in w1


def test_a_trial_run_writes_its_curves_under_its_own_out_dir(run_py, tmp_path, monkeypatch):
    """run.py --out elsewhere: the runner's curve file goes there (named by an absolute path the report
    reads), not into the committed benchmarks/results/curves."""
    common = sys.modules["common"]
    monkeypatch.setenv(common.CURVES_DIR_ENV, str(tmp_path / "curves"))
    run = common.Run("relayrl", "0", "W1", seed=7, curve=[[1.0, 100, 20.0], [2.0, 200, 40.0]])
    out = common.finish(run, common.WORKLOADS["W1"], wall=2.0, load_before=0.0)
    assert out["curve_file"] == str(tmp_path / "curves" / "W1_relayrl_s7.json")
    assert run_py.read_curve(run_py.HERE, out) == [[1.0, 100, 20.0], [2.0, 200, 40.0]]
    assert not (ROOT / "benchmarks" / "results" / "curves" / "W1_relayrl_s7.json").exists()
    committed = ROOT / "benchmarks" / "results" / "curves" / "x.json"
    assert common._curve_reference(str(committed)) == os.path.join("results", "curves", "x.json")
