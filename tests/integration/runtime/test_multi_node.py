"""relayrl joins an existing Ray cluster by address and spreads its workers over its nodes."""

import json
import os
import subprocess
import sys

from tests.helpers.paths import HELPERS, ROOT


def test_workers_run_on_both_nodes_of_a_two_node_cluster_and_training_progresses():
    script = HELPERS / "two_node_check.py"
    env = dict(
        os.environ,
        TF_CPP_MIN_LOG_LEVEL="3",
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=str(ROOT),
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=400)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["cluster_nodes"] == 2
    assert out["worker_nodes"] == 2, out
    assert out["iterations"] == 3 and out["timesteps_total"] > 600 and out["healthy"] == 2
