"""The learner's variable groups (one Adam each, TD3's delayed actor) under a MirroredStrategy over 2 logical
CPUs give the same update as one replica."""

import json
import os
import subprocess
import sys

from tests.helpers.paths import HELPERS, ROOT


def test_grouped_update_on_two_replicas_equals_one_replica():
    script = HELPERS / "mirrored_groups_check.py"
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["replicas"] == [1, 2]
    assert out["actor_steps"] == [2, 2]  # 4 critic steps, the actor on steps 2 and 4
    assert out["max_weight_change"] > 1e-4
    assert out["max_weight_diff"] < 1e-5, out
    assert out["max_metric_diff"] < 1e-5, out
