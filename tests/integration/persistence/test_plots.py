"""Every run writes progress.csv and learning_curve.png; `relayrl plot` overlays runs as mean and spread."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from relayrl import PPOConfig
from relayrl.cli import app as cli
from tests.helpers.paths import ROOT

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(ROOT))
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(path, min_bytes=20_000):
    data = Path(path).read_bytes()
    assert data[:8] == PNG_MAGIC and len(data) > min_bytes, (path, len(data))


def test_train_runs_write_progress_csv_and_a_learning_curve_and_plot_overlays_them(tmp_path, capsys):
    cli_run = tmp_path / "cli_seed0"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "relayrl.cli",
            "train",
            "ppo",
            "CartPole-v1",
            "--seed",
            "0",
            "--stop-iters",
            "6",
            "--logdir",
            str(cli_run),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(cli_run / "progress.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [int(r["training_iteration"]) for r in rows] == [1, 2, 3, 4, 5, 6]
    steps = np.array([float(r["timesteps_total"]) for r in rows])
    times = np.array([float(r["time_total_s"]) for r in rows])
    # tuned PPO: 16 envs x 32 steps per iteration, less the autoreset steps (not env steps)
    assert np.all(np.diff(np.concatenate([[0], steps])) > 400) and np.all(np.diff(steps) <= 512)
    assert np.all(np.diff(times) > 0)
    rewards = np.array([float(r["episode_reward_mean"]) for r in rows])
    assert np.all((rewards[1:] >= 8) & (rewards[1:] <= 500))  # CartPole returns are 8..500
    assert int(rows[-1]["episodes_total"]) > 0 and "learner/kl" in rows[0]
    assert_png(cli_run / "learning_curve.png")

    for seed in (1, 2):  # two more seeds in this process: Algorithm with a log_dir writes the same files
        algo = (
            PPOConfig.from_tuned("CartPole-v1")
            .debugging(seed=seed)
            .reporting(log_dir=str(tmp_path / f"lib_seed{seed}"))
            .build()
        )
        for _ in range(5):
            algo.train()
        algo.stop()
        assert_png(tmp_path / f"lib_seed{seed}" / "learning_curve.png")
    out = tmp_path / "compare.png"
    runs = [str(cli_run), str(tmp_path / "lib_seed1"), str(tmp_path / "lib_seed2")]
    assert cli.main(["plot", *runs, "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    assert_png(out)
    assert (
        cli.main(
            [
                "plot",
                *runs,
                "--out",
                str(tmp_path / "time.png"),
                "--x",
                "time",
                "--spread",
                "std",
                "--group-by",
                "seed",
            ]
        )
        == 0
    )
    assert_png(tmp_path / "time.png", min_bytes=10_000)


def test_plot_refuses_a_directory_that_is_not_a_run(tmp_path, capsys):
    assert cli.main(["plot", str(tmp_path), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"relayrl: error: RUN_DIR {str(tmp_path)!r} has no progress.csv "
        "(expected the --logdir of a relayrl train run)"
    ]
    assert cli.main(["plot", str(tmp_path / "nope")]) == 2
    assert "is not a directory" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        cli.main(["plot", str(tmp_path), "--x", "episodes"])
    assert exit_.value.code == 2
    assert "--x" in capsys.readouterr().err
    assert not (tmp_path / "x.png").exists()
