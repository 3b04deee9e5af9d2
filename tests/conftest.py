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

    from relayrl.runtime.cluster import init_ray

    init_ray()
    yield ray
    ray.shutdown()


class RedisProcess:
    """A real redis-server on 127.0.0.1 with a free port and a random password, which a test may freeze
    (SIGSTOP), kill or restart on the same port and directory (its AOF there, when appendonly is on)."""

    def __init__(self, workdir, appendonly: bool = False):
        import secrets
        import shutil
        import socket

        self.exe = shutil.which("redis-server")
        if self.exe is None:
            pytest.fail("redis-server is not installed: run `bash scripts/ensure-redis.sh`")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.password = secrets.token_hex(16)
        self.address = f"127.0.0.1:{self.port}"
        self.workdir, self.appendonly = str(workdir), appendonly
        self.proc = None
        self.start()

    def start(self) -> None:
        import subprocess
        import time

        import redis

        self.proc = subprocess.Popen(
            [
                self.exe,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--requirepass",
                self.password,
                "--save",
                "",
                "--appendonly",
                "yes" if self.appendonly else "no",
                "--appendfsync",
                "always",
                "--dir",
                self.workdir,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(host="127.0.0.1", port=self.port, password=self.password, socket_timeout=1)
        for _ in range(200):
            try:
                client.ping()
                return
            except (redis.ConnectionError, redis.TimeoutError):
                time.sleep(0.02)
        pytest.fail(f"redis-server on port {self.port} did not start")

    def signal(self, sig: int) -> None:
        self.proc.send_signal(sig)

    def stop(self) -> None:
        """Resume (if frozen) and end the server; it may already be dead."""
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.terminate()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A real redis-server shared by the session: {"address", "password", "port"}; stopped at the end.
    (scripts/ensure-redis.sh installs Debian's redis-server; CI runs it first.)"""
    server = RedisProcess(tmp_path_factory.mktemp("redis"))
    yield {"address": server.address, "password": server.password, "port": server.port}
    server.stop()


@pytest.fixture
def redis_factory(tmp_path_factory):
    """make(appendonly=False) -> a dedicated RedisProcess that the test may freeze, kill or restart; every one
    is resumed and stopped afterwards, whatever the test did to it."""
    servers = []

    def make(appendonly: bool = False) -> RedisProcess:
        servers.append(RedisProcess(tmp_path_factory.mktemp("redis"), appendonly))
        return servers[-1]

    yield make
    for server in servers:
        server.stop()
