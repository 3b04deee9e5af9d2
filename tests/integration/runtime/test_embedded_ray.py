"""Embedded means embedded: without an address a relayrl run starts a Ray of its own. It never joins a cluster
that `ray start` began on this machine, nor a dead one that RAY_ADDRESS or a stale `ray_current_cluster` file
names (Ray's `ray.init()` without an address would join all three); `--address auto` is the way to join."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from tests.helpers.paths import ROOT

TRAIN = [sys.executable, "-m", "relayrl.cli", "train", "ppo", "CartPole-v1", "--workers", "1"]
TRAIN += ["--stop-iters", "1", "--quiet", "--set", "train_batch_size=256"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_train(tmp_path, **env: str) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **env}
    return subprocess.run(
        [*TRAIN, "--logdir", str(tmp_path / "run")], env=full_env, capture_output=True, text=True, timeout=240
    )


def ray_status(address: str, env: dict) -> subprocess.CompletedProcess:
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    return subprocess.run(
        [ray_cli, "status", "--address", address], env=env, capture_output=True, text=True, timeout=60
    )


@pytest.fixture
def ray_start_head():
    """A `ray start --head` cluster in its own temp dir (so the test's own Ray and other runs are not
    touched), killed with its whole process group at the end, even when the test fails."""
    ray_cli = os.path.join(os.path.dirname(sys.executable), "ray")
    if not os.path.exists(ray_cli):
        pytest.skip("the `ray` command is not installed beside this Python")
    # short: Ray's unix sockets live under it, and a socket path may not exceed 107 bytes
    port, temp_dir = free_port(), tempfile.mkdtemp(prefix="rr-", dir="/tmp")
    # token auth, as `ray start` turns it on: `ray status` needs the token (~/.ray/auth_token) to connect
    env = {**os.environ, "RAY_TMPDIR": temp_dir, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token"}
    head = subprocess.Popen(
        [ray_cli, "start", "--head", "--block", "--port", str(port), "--num-cpus", "1"]
        + ["--node-ip-address", "127.0.0.1", "--include-dashboard", "false", "--temp-dir", str(temp_dir)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    address = f"127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while ray_status(address, env).returncode != 0:
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"`ray start --head` did not come up (exit {head.poll()})")
            time.sleep(1)
        yield address, env
    finally:
        # SIGTERM lets Ray drain for up to 30 s: not wait that. No SIGKILL once the head is reaped: its
        # group id is then free for the kernel to hand to another process (as benchmarks' _terminate does)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(head.pid, sig)
                head.wait(timeout=5)
                break
            except ProcessLookupError:
                break
            except subprocess.TimeoutExpired:
                continue
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_a_run_beside_a_ray_start_cluster_starts_its_own_ray_and_leaves_the_cluster_alone(
    tmp_path, ray_start_head
):
    address, env = ray_start_head
    # RAY_TMPDIR as the cluster's: a plain ray.init() would find its ray_current_cluster file and join it
    done = run_train(tmp_path, RAY_TMPDIR=env["RAY_TMPDIR"])
    assert done.returncode == 0, done.stderr[-2000:]
    assert ray_status(address, env).returncode == 0, "the `ray start` cluster must still be running"


def test_a_dead_cluster_named_by_ray_address_or_a_stale_file_is_ignored(tmp_path):
    temp_dir = tempfile.mkdtemp(prefix="rr-", dir="/tmp")
    try:
        dead = f"127.0.0.1:{free_port()}"  # nothing listens there
        with open(os.path.join(temp_dir, "ray_current_cluster"), "w") as fh:
            fh.write(dead)
        done = run_train(tmp_path, RAY_TMPDIR=temp_dir, RAY_ADDRESS=dead)
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        shutil.rmtree(temp_dir, ignore_errors=True)
