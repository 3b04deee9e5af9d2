"""`relayrl scale` end to end on real Ray: CSV rows per worker count, a PNG, a recommendation."""

import csv
import os
import subprocess
import sys


def test_scale_writes_csv_png_and_recommends(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "relayrl.cli",
            "scale",
            "ppo",
            "CartPole-v1",
            "--workers",
            "1,2",
            "--iterations",
            "2",
            "--out",
            str(tmp_path),
            "--set",
            "train_batch_size=256",
            "--set",
            "sgd_minibatch_size=128",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(tmp_path / "scale.csv") as fh:
        table = list(csv.DictReader(fh))
    assert [int(r["workers"]) for r in table] == [1, 2]
    assert all(float(r["env_steps_per_s"]) > 0 and float(r["time_per_iter_s"]) > 0 for r in table)
    assert float(table[0]["speedup"]) == 1.0
    assert (tmp_path / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "recommended workers: " in proc.stdout
