"""Shared fixtures: one real Ray session for all integration tests; quiet TensorFlow."""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")

import pytest


@pytest.fixture(scope="session")
def ray_session():
    """A real embedded Ray started once per test session (2 CPUs, as on the CI machine)."""
    import ray

    from relayrl.runtime.ray_workers import init_ray

    init_ray()
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server on 127.0.0.1, a free port and a random password; stopped after the session.
    (scripts/ensure-redis.sh installs Debian's redis-server; CI runs it first.)"""
    import secrets
    import shutil
    import socket
    import subprocess
    import time

    exe = shutil.which("redis-server")
    if exe is None:
        pytest.fail("redis-server is not installed: run `bash scripts/ensure-redis.sh`")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    password = secrets.token_hex(16)
    workdir = tmp_path_factory.mktemp("redis")
    proc = subprocess.Popen([exe, "--bind", "127.0.0.1", "--port", str(port), "--requirepass", password,
                             "--save", "", "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, password=password)
    for _ in range(200):
        try:
            client.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.02)
    yield {"address": f"127.0.0.1:{port}", "password": password, "port": port}
    proc.terminate()
    proc.wait(timeout=10)
