"""A Ray started by relayrl keeps to loopback: every listening socket of the processes it started is bound
to 127.0.0.1 (the report lists any that is not); the dashboard is off unless asked, then on 127.0.0.1."""

import json
import os
import subprocess
import sys

import pytest

from tests.helpers.paths import HELPERS, ROOT

LOOPBACK = {"127.0.0.1", "::ffff:127.0.0.1", "::1"}


@pytest.mark.parametrize("mode", ["plain", "dashboard"])
def test_embedded_ray_listens_on_loopback_only(mode):
    script = HELPERS / "security_check.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_ENABLE_WINDOWS")}
    env.update(
        TF_CPP_MIN_LOG_LEVEL="3",
        RAY_USAGE_STATS_ENABLED="0",
        PYTHONPATH=str(ROOT),
    )
    proc = subprocess.run(
        [sys.executable, str(script), mode], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    exposed = [s for s in out["listening"] if s["ip"] not in LOOPBACK]
    print("\nlistening sockets:", out["listening"])
    assert out["listening"], "expected Ray's own listeners"
    assert not exposed, f"listening beyond loopback: {exposed}"
    if mode == "dashboard":
        assert out["dashboard_url"].startswith("http://127.0.0.1:")
    else:
        assert out["dashboard_url"] is None
