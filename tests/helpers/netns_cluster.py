"""A real multi-address Ray cluster on one machine: each node in its own network namespace with its own
address (10.231.0.1, .2, ...), joined by a bridge in one more namespace, Ray started in each, token auth on.

    with NamespaceCluster(nodes=3) as cluster:          # skips the test when it cannot run (not root, no ip)
        job = cluster.popen(0, ["python", "-m", "relayrl.cli", "train", ..., "--address", cluster.address])
        cluster.kill_node(2)                             # SIGKILL every process of node 3
        cluster.revive(2)                                # Ray started there again (restart(): every node)
        cluster.listening(0)                             # (address, port, command line) per TCP listener
        ...

Traffic stays inside the namespaces it creates (the bridge connects only them, with no route out), and
`close()` (also on an exception, and from __exit__) kills every process in them and deletes them. Used by
tests/integration/runtime/test_namespace_cluster.py and benchmarks.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

SUBNET = "10.231.0"
RAY_PORT = 6379
BIN = os.path.dirname(sys.executable)


class ClusterUnavailable(RuntimeError):
    """This machine cannot host the cluster (not root, no `ip`, no netns support): tests skip with it."""


def _sh(*argv: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")


class NamespaceCluster:
    def __init__(self, nodes: int = 3, cpus_per_node: int = 2, env: dict[str, str] | None = None):
        if os.geteuid() != 0 or shutil.which("ip") is None:
            raise ClusterUnavailable("needs root and iproute2's `ip` for network namespaces")
        tag = f"rr{os.getpid() % 100000}"
        self.bridge = f"{tag}br"
        self.namespaces = [f"{tag}n{i + 1}" for i in range(nodes)]
        self.ips = [f"{SUBNET}.{i + 1}" for i in range(nodes)]
        self.address = f"{self.ips[0]}:{RAY_PORT}"
        self.cpus_per_node = cpus_per_node
        self.root = f"/tmp/{tag}"  # short: Ray's unix socket paths under it must stay within 107 bytes
        # Token auth on every node and client, with a token of this cluster's own: Ray reads it from the file
        # RAY_AUTH_TOKEN_PATH names (on real machines: one file copied to every node, or ~/.ray/auth_token)
        self.token_path = os.path.join(self.root, "auth_token")
        self.env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0"}
        self.env.update({"RAY_AUTH_TOKEN_PATH": self.token_path, **(env or {})})
        self.env.pop("RAY_AUTH_TOKEN", None)  # it would win over the file
        # an embedded Ray started earlier in this process (relayrl's init_ray) switched multi-node off for its
        # own children through this variable: these nodes must not inherit that
        self.env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> NamespaceCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self, timeout_s: float = 180.0) -> None:
        os.makedirs(self.root, mode=0o700, exist_ok=True)
        fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32))  # what `ray get-auth-token --generate` writes
        self._network()
        for i in range(len(self.namespaces)):
            self._ray_start(i)
        self.wait_for_nodes(len(self.namespaces), timeout_s)

    def _network(self) -> None:
        try:
            _sh("ip", "netns", "add", self.bridge)
        except RuntimeError as exc:
            raise ClusterUnavailable(f"cannot create a network namespace: {exc}") from None
        _sh("ip", "-n", self.bridge, "link", "set", "lo", "up")
        _sh("ip", "-n", self.bridge, "link", "add", "br0", "type", "bridge")
        _sh("ip", "-n", self.bridge, "link", "set", "br0", "up")
        for ns, ip in zip(self.namespaces, self.ips):
            _sh("ip", "netns", "add", ns)
            inner, outer = f"{ns}a", f"{ns}b"
            _sh(
                "ip",
                "link",
                "add",
                inner,
                "netns",
                ns,
                "type",
                "veth",
                "peer",
                "name",
                outer,
                "netns",
                self.bridge,
            )
            _sh("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", inner)
            _sh("ip", "-n", ns, "link", "set", inner, "up")
            _sh("ip", "-n", ns, "link", "set", "lo", "up")
            _sh("ip", "-n", self.bridge, "link", "set", outer, "master", "br0")
            _sh("ip", "-n", self.bridge, "link", "set", outer, "up")

    def _ray_start(self, i: int) -> None:
        temp_dir = os.path.join(self.root, f"n{i + 1}")
        os.makedirs(temp_dir, exist_ok=True)
        role = ["--head", "--port", str(RAY_PORT), "--include-dashboard", "false"] if i == 0 else []
        role = role or ["--address", self.address]
        argv = [os.path.join(BIN, "ray"), "start", *role, "--node-ip-address", self.ips[i]]
        argv += ["--num-cpus", str(self.cpus_per_node), "--temp-dir", temp_dir]
        done = self.run(i, argv, timeout=120)
        if done.returncode != 0:
            raise RuntimeError(f"ray start on node {i + 1} failed: {done.stderr.strip()[-500:]}")

    def wait_for_nodes(self, count: int, timeout_s: float, without: str | None = None) -> None:
        """Until `count` nodes are alive in the cluster as the head's GCS sees them, none of them at address
        `without` (a lost node: Ray declares it dead only after missed health checks, tens of seconds)."""
        script = "import ray; ray.init(address=%r, logging_level='ERROR'); "
        script += "print('ALIVE', *[n['NodeManagerAddress'] for n in ray.nodes() if n['Alive']])"
        deadline = time.monotonic() + timeout_s
        while True:
            done = self.run(0, [sys.executable, "-c", script % self.address], timeout=120)
            # Ray may print warnings around the line
            lines = [line.split()[1:] for line in done.stdout.splitlines() if line.startswith("ALIVE")]
            alive = lines[-1] if done.returncode == 0 and lines else None
            if alive is not None and len(alive) == count and without not in alive:
                return
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"cluster: alive {alive}, wanted {count} after {timeout_s} s: {done.stderr[-500:]}"
                )
            time.sleep(2)

    def close(self) -> None:
        for ns in [*self.namespaces, self.bridge]:
            for pid in self.pids(ns):
                _kill(pid)
        for ns in [*self.namespaces, self.bridge]:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=60)
        shutil.rmtree(self.root, ignore_errors=True)

    # ------------------------------------------------------------------ running and killing
    def command(self, node: int, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.namespaces[node], *argv]

    def run(self, node: int, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess:
        return subprocess.run(
            self.command(node, argv), env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def popen(self, node: int, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.command(node, argv), env=self.env, text=True, **kwargs)

    def pids(self, ns: str) -> list[int]:
        done = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True, timeout=60)
        return [int(p) for p in done.stdout.split()] if done.returncode == 0 else []

    def processes(self, node: int) -> list[str]:
        """The command lines of node's processes (Ray renames an actor's process `ray::ClassName...`)."""
        return [_cmdline(pid) for pid in self.pids(self.namespaces[node])]

    def listening(self, node: int) -> list[tuple[str, int, str]]:
        """(address, port, owner's command line) of every TCP socket listening in the node's namespace."""
        done = subprocess.run(
            self.command(node, ["ss", "-ltnpH"]), capture_output=True, text=True, timeout=60
        )
        if done.returncode != 0:
            raise RuntimeError(f"ss -ltnpH on node {node + 1}: {done.stderr.strip()}")
        rows = []
        # LISTEN 0 128 10.231.0.1:6379 0.0.0.0:* users:(("gcs_server",pid=77,fd=44))
        for line in done.stdout.splitlines():
            fields = line.split()
            address, port = fields[3].rsplit(":", 1)
            pid = re.search(r"pid=(\d+)", line)
            rows.append((address.strip("[]"), int(port), _cmdline(int(pid.group(1))) if pid else "?"))
        return rows

    def revive(self, node: int, timeout_s: float = 120.0) -> None:
        """Start Ray again on a node that kill_node emptied (a new Ray node at the same address)."""
        others = sum(1 for ns in self.namespaces if self.pids(ns))
        self.wait_for_nodes(others, timeout_s, without=self.ips[node])  # else Ray may still place work there
        self._ray_start(node)
        self.wait_for_nodes(others + 1, timeout_s)

    def restart(self, timeout_s: float = 180.0) -> None:
        """Kill what is left of every node and start Ray on all of them again: the cluster brought back after
        its head was lost (the other nodes' raylets cannot outlive their GCS)."""
        for node in range(len(self.namespaces)):
            self.kill_node(node)
        for node in range(len(self.namespaces)):
            self._ray_start(node)
        self.wait_for_nodes(len(self.namespaces), timeout_s)

    def kill_node(self, node: int) -> int:
        """SIGKILL every process of the node, as if it lost power; returns how many there were."""
        pids = self.pids(self.namespaces[node])
        for pid in pids:
            _kill(pid)
        return len(pids)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
