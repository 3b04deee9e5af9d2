"""`relayrl serve` as users run it: a real server process, real client processes over HTTP on loopback."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", RAY_USAGE_STATS_ENABLED="0", PYTHONPATH=str(ROOT))


def start_server(tmp_path, *args):
    """Start `relayrl serve` on a free port; return (process, url, stderr file)."""
    err = tmp_path / "server.err"
    proc = subprocess.Popen([sys.executable, "-m", "relayrl.cli", "serve", *args, "--port", "0"],
                            stdout=subprocess.PIPE, stderr=err.open("w"), text=True, env=ENV, cwd=ROOT)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        match = re.search(r"serving \S+ on (http://127\.0\.0\.1:\d+)", err.read_text())
        if match:
            return proc, match.group(1), err
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"server did not start: {err.read_text()[-2000:]}")


@pytest.mark.learning
def test_four_client_processes_train_ppo_on_cartpole_to_400(tmp_path):
    server, url, err = start_server(tmp_path, "ppo", "--env", "CartPole-v1", "--seed", "0", "--stop-reward", "400",
                                    "--stop-time", "240", "--json", "--quiet")
    clients = [subprocess.Popen([sys.executable, "examples/external_cartpole.py", "--address", url, "--seed", str(i),
                                 "--max-seconds", "240"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=ENV, cwd=ROOT) for i in range(4)]
    try:
        out, _ = server.communicate(timeout=260)
        for client in clients:  # the server stopped: every client notices and exits by itself
            c_out, c_err = client.communicate(timeout=30)
            assert client.returncode == 0, c_err[-2000:]
            assert int(re.search(r"played (\d+) episodes", c_out).group(1)) > 0
    finally:
        for p in [server, *clients]:
            if p.poll() is None:
                p.kill()
    assert server.returncode == 0, err.read_text()[-2000:]
    final = json.loads(out.strip().splitlines()[-1])
    print(f"\nserver final: reward {final['episode_reward_mean']:.1f} after {final['timesteps_total']} steps, "
          f"{final['training_iteration']} iterations, {final['wall_time_s']:.1f} s")
    assert final["episode_reward_mean"] >= 400, final
    assert final["weights_version"] == final["training_iteration"] > 0


@pytest.mark.parametrize("args,message", [
    (["serve", "dqnn", "--env", "CartPole-v1"], "unknown algorithm 'dqnn'; allowed: ppo"),
    (["serve", "ppo", "--env", "CartPole-v1", "--port", "70000"], "--port 70000: allowed 0..65535"),
    (["serve", "ppo", "--env", "CartPol-v1"], "unknown environment id 'CartPol-v1'"),
    (["serve", "ppo", "--env", "no_such_module:X-v0"], "cannot import 'no_such_module'"),
    (["serve", "ppo", "--env", "text_commands:TextCommands-v0"], "is Text: pass a codec"),
])
def test_serve_bad_input_is_one_line_on_stderr_and_exit_2(args, message):
    env = dict(ENV, PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'examples'}")
    proc = subprocess.run([sys.executable, "-m", "relayrl.cli", *args], capture_output=True, text=True, timeout=120,
                          env=env, cwd=ROOT)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("relayrl")]
    assert len(lines) == 1 and message in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
