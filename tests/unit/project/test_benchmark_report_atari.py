"""benchmarks/run.py's Atari workloads (W7-W9) on small synthetic CSVs: frames/s against the best incumbent,
W8's "at least SB3 within seed noise" verdict, W9's memory limits, an older CSV's header migrated in place,
and --cap refused in one line (no library is run here)."""

from __future__ import annotations

import csv
import importlib.util

import pytest

from tests.helpers.paths import ROOT

RUN_PY = str(ROOT / "benchmarks" / "run.py")


@pytest.fixture(scope="module")
def run_py():
    spec = importlib.util.spec_from_file_location("bench_run_atari", RUN_PY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def row(lib, workload, seed, variant="", **kw):
    return {
        "library": lib,
        "workload": workload,
        "seed": seed,
        "variant": variant,
        **kw,
    }


def table_lines(run_py, path, rows):
    for r in rows:
        run_py.append_csv(str(path), r)
    md = run_py.table(run_py.summarise(run_py.read_csv(str(path))))
    return {tuple(c.strip() for c in ln.strip("|").split("|")[:2]): ln for ln in md.splitlines()[2:]}


def test_w7_frames_per_s_against_the_best_incumbent_variant(run_py, tmp_path):
    rows = [
        *[row("relayrl", "W7", s, frames_per_s=8000) for s in range(2)],
        *[row("relayrl", "W7", s, "w2", frames_per_s=6000) for s in range(2)],
        row(
            "relayrl",
            "W7",
            0,
            "envpool",
            error="not run: envpool is not importable in relayrl's venv",
        ),
        *[row("sb3", "W7", s, frames_per_s=2400) for s in range(2)],
        *[row("rllib", "W7", s, "r2", frames_per_s=3600) for s in range(2)],
        *[row("rllib", "W7", s, "r0", frames_per_s=2000) for s in range(2)],
    ]
    w7 = table_lines(run_py, tmp_path / "a.csv", rows)[("W7", run_py.METRICS["W7"][0][2])]
    assert "in-process: 2.22x" in w7 and "w2: 1.67x" in w7 and "best: rllib/r2" in w7  # 8000 / 3600
    assert "in-process: PASS" in w7 and "w2: MISS" in w7 and "envpool: did not run" in w7


@pytest.mark.parametrize(
    ("relayrl", "sb3", "verdict"),
    [
        ([14, 18], [20, 24], "MISS"),  # mean gap -6, pooled SD 2.83
        ([19, 21], [20, 24], "PASS"),  # mean gap -2, pooled SD 2.24
        ([30], [20], "needs >= 2 seeds each"),
    ],
)
def test_w8_score_within_seed_noise_of_sb3(run_py, tmp_path, relayrl, sb3, verdict):
    rows = [row("relayrl", "W8", s, final_return=v, cap=100, env_steps=100) for s, v in enumerate(relayrl)]
    rows += [row("sb3", "W8", s, final_return=v, cap=100, env_steps=100) for s, v in enumerate(sb3)]
    w8 = table_lines(run_py, tmp_path / "a.csv", rows)[("W8", run_py.METRICS["W8"][0][2])]
    assert verdict in w8


def test_w8_leaves_out_a_run_stopped_short_of_its_cap(run_py, tmp_path):
    rows = [
        row("relayrl", "W8", 0, final_return=20, cap=100, env_steps=100, wall_s=10),
        row(
            "relayrl",
            "W8",
            1,
            final_return=1,
            cap=100,
            env_steps=30,
            wall_s=99,
            error="timeout after 99 s",
        ),
    ]
    for r in rows:
        run_py.append_csv(str(tmp_path / "a.csv"), r)
    stats = run_py.summarise(run_py.read_csv(str(tmp_path / "a.csv")))[("W8", "relayrl", "")]["stats"]
    assert stats["final_return"][:2] == (20.0, 1) and stats["wall_s"][:2] == (10.0, 1)


@pytest.mark.parametrize(
    ("relayrl_bytes", "sb3_optimized", "verdict"),
    [
        (7.2e9, 28.3e9, "PASS"),
        (8.5e9, 28.3e9, "MISS"),
        (3.0e9, 2.5e9, "MISS"),
    ],  # over 8 GB; over SB3's
)
def test_w9_memory_under_8_gb_and_sb3_optimized(run_py, tmp_path, relayrl_bytes, sb3_optimized, verdict):
    rows = [
        row("relayrl", "W9", 0, extrapolated_1m_bytes=relayrl_bytes),
        row("sb3", "W9", 0, "plain", extrapolated_1m_bytes=56.6e9),
        row("sb3", "W9", 0, "optimized", extrapolated_1m_bytes=sb3_optimized),
    ]
    w9 = table_lines(run_py, tmp_path / "a.csv", rows)[("W9", run_py.METRICS["W9"][0][2])]
    assert verdict in w9 and f"{relayrl_bytes / 1e9:.2f} GB" in w9


def test_an_older_csv_gets_the_new_columns_and_keeps_its_values(run_py, tmp_path):
    path = tmp_path / "old.csv"
    old_columns = run_py.COLUMNS[: run_py.COLUMNS.index("error") + 1]
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=old_columns)
        writer.writeheader()
        writer.writerow({"library": "relayrl", "workload": "W4", "seed": 0, "steps_per_s": 5000})
    run_py.append_csv(str(path), row("sb3", "W7", 0, frames_per_s=2400, cap=50000))
    rows = run_py.read_csv(str(path))
    assert list(rows[0]) == run_py.COLUMNS
    assert (
        rows[0]["steps_per_s"] == "5000" and rows[1]["frames_per_s"] == "2400" and rows[1]["cap"] == "50000"
    )


@pytest.mark.parametrize("spec", ["W7=abc", "W1=5", "W7=0", "W7"])
def test_a_bad_cap_is_refused_in_one_line(run_py, spec):
    with pytest.raises(SystemExit, match=r"--cap .*allowed: W=N"):
        run_py.parse_caps([spec])
    assert run_py.parse_caps(["W7=2048", "W9=1000"]) == {"W7": 2048, "W9": 1000}
