"""`relayrl scale --workers 0,1` end to end: the in-process count is measured and compared like a Ray count,
and a run too short to estimate the noise says so in one line and keeps the fewest workers."""

import csv
import os
import subprocess
import sys


def test_scale_compares_in_process_and_warns_when_too_short(tmp_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0")
    proc = subprocess.run(
        [
            sys.executable, "-m", "relayrl.cli", "scale", "ppo", "CartPole-v1", "--workers", "0,1",
            "--iterations", "2", "--out", str(tmp_path), "--set", "train_batch_size=128",
            "--set", "sgd_minibatch_size=64", "--set", "num_sgd_iter=1",
        ],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    with open(tmp_path / "scale.csv") as fh:
        table = list(csv.DictReader(fh))
    assert [int(r["workers"]) for r in table] == [0, 1]
    assert all(float(r["env_steps_per_s"]) > 0 and r["env_steps_per_s_se"] == "" for r in table)
    assert table[0]["efficiency"] == "" and float(table[1]["cores_needed"]) > 0
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("relayrl: warning: ")]
    assert warnings == [
        "relayrl: warning: too short to separate the counts: 2 measured iteration(s) per count, the noise "
        "needs >= 3 (--iterations, --repeats): no significant difference; keep the fewest"
    ]
    assert "recommended workers: 0 (no significant difference; keep the fewest; " in proc.stdout
