"""relayrl on a real 3-node Ray cluster: each node in its own network namespace with its own address
(tests/helpers/netns_cluster.py), token auth on, the job run from the head's namespace with --address.

One cluster for the module; the tests run in file order, and a test that needs every node starts again those
an earlier one killed: what the cluster listens on and that it refuses a wrong token; a node SIGKILLed (every
process of it, as if it lost power) while PPO's workers start costs one restart, not the run; Ape-X survives
losing the node of a replay shard mid-run; a Redis replay on the head's address serves workers on other nodes;
losing the head (with the driver) is recovered with --resume auto. Skipped where namespaces cannot be made
(not root, no `ip`)."""

from __future__ import annotations

import csv
import json
import os
import secrets
import shutil
import subprocess
import sys
import time

import pytest

from relayrl.persistence import checkpoint
from tests.helpers.netns_cluster import ClusterUnavailable, NamespaceCluster
from tests.helpers.paths import ROOT


@pytest.fixture(scope="module")
def cluster():
    try:
        with NamespaceCluster(nodes=3, env={"PYTHONPATH": str(ROOT)}) as c:
            yield c
    except ClusterUnavailable as exc:
        pytest.skip(str(exc))


def final_result(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def wait_until(job: subprocess.Popen, ready, timeout: float, what: str, every: float) -> None:
    """Poll ready() every `every` s while the job runs; fail with the job's stderr if it ends first, or with
    `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert job.poll() is None, job.communicate()[1][-2000:]
        assert time.monotonic() < deadline, what
        time.sleep(every)


LOOPBACK = ("127.", "::1", "::ffff:127.")


def what_it_is(port: int, cmd: str) -> str:
    """A listener's role, from its owner's command line (Ray's ports other than 6379 and 10001 are random)."""
    roles = [
        ("gcs_server", "GCS: the cluster's address; nodes and drivers join here"),
        ("raylet", "raylet: node manager and object manager (objects move between nodes here)"),
        ("ray.util.client.server", "Ray Client server (ray:// clients)"),
        ("autoscaler/_private/monitor.py", "autoscaler monitor: its metrics export"),
        ("dashboard/dashboard.py", "dashboard head without the UI (--include-dashboard false): its gRPC"),
        ("DashboardA", "dashboard agent: node metrics (gRPC, HTTP 52365, metrics export)"),
        ("RuntimeEnv", "runtime-env agent (sets up workers' environments)"),
        ("ray::", "a worker process's gRPC server (task and actor calls)"),
    ]
    return next((role for key, role in roles if key in cmd), f"other ({cmd[:300]})")


def test_cluster_listens_through_ray_processes_only_and_refuses_a_client_without_the_token(cluster):
    """Every socket the cluster's processes listen on beyond loopback belongs to a Ray process (the table is
    printed: docs/security.md lists it); a client with the wrong token is refused; relayrl's code never sets
    RAY_AUTH_MODE (token auth stays as Ray and the operator set it)."""
    table = []
    for node in range(len(cluster.namespaces)):
        for address, port, cmd in cluster.listening(node):
            if not address.startswith(LOOPBACK):
                table.append(
                    (node + 1, address, port, cmd.split(" ")[0].split("/")[-1], what_it_is(port, cmd))
                )
    print("\nnode | address | port | process | what it is")
    for row in sorted(table):
        print(" | ".join(str(v) for v in row))
    others = [row for row in table if row[4].startswith("other")]
    assert not others, others
    assert (1, "*", 6379) in {row[:3] for row in table}  # the GCS, where the token is checked
    ray_code = [p for p in (ROOT / "relayrl").rglob("*.py") if "RAY_AUTH_MODE" in p.read_text()]
    assert not ray_code, ray_code
    script = f"import ray; ray.init(address={cluster.address!r}, logging_level='ERROR')"
    # the variable wins over the token file; 2 connection attempts, not Ray's 20 (1 s apart)
    env = {**cluster.env, "RAY_AUTH_TOKEN": "0" * 64, "RAY_NUM_REDIS_GET_RETRIES": "2"}
    denied = subprocess.run(
        cluster.command(1, [sys.executable, "-c", script]),
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert denied.returncode != 0 and "InvalidAuthToken" in denied.stderr, denied.stderr[-2000:]


def test_ppo_spreads_over_nodes_and_solves_when_a_node_dies_while_workers_start(cluster):
    argv = [sys.executable, "-m", "relayrl.cli", "train", "ppo", "CartPole-v1", "--workers", "4"]
    argv += [
        "--address",
        cluster.address,
        "--json",
        "--quiet",
        "--stop-reward",
        "475",
        "--stop-timesteps",
        "400000",
    ]
    argv += ["--logdir", os.path.join(cluster.root, "run")]
    job = cluster.popen(0, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        started = lambda: any("RolloutWorker" in line for line in cluster.processes(2))
        wait_until(job, started, 120, "no worker started on node 3", every=0.05)
        killed = cluster.kill_node(2)  # while workers start: the first one of node 3 is being built
        stdout, stderr = job.communicate(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, stderr[-3000:]
    result = final_result(stdout)
    assert killed > 0
    assert result["solved"], (result["episode_reward_mean"], stderr[-3000:])
    assert "(raylet)" not in stderr and "(pid=" not in stderr, stderr[-3000:]  # Ray's lines stay out
    assert "restarting rollout worker" in stderr  # relayrl's own line for the lost worker(s)
    assert result["workers/restarts"] >= 1
    assert result["workers/lost_fragments"] == 0
    nodes = {result[f"workers/{i}/node_ip"] for i in range(1, 5)}
    assert len(nodes) >= 2 and cluster.ips[2] not in nodes, nodes


def all_nodes_up(cluster) -> None:
    """Start Ray again on the nodes an earlier test killed (and wait until Ray has declared the old ones
    dead: until then it may still place actors there)."""
    for node in range(1, len(cluster.namespaces)):
        if not cluster.pids(cluster.namespaces[node]):
            cluster.revive(node)


def learning_iterations(progress_csv: str) -> int:
    """Rows of progress.csv in which the learner updated (learner/loss filled in)."""
    try:
        with open(progress_csv, newline="") as fh:
            return sum(1 for row in csv.DictReader(fh) if row.get("learner/loss"))
    except OSError:
        return 0


def test_apex_solves_when_a_node_holding_a_replay_shard_dies_mid_run(cluster):
    """Ape-X (the tuned CartPole config: 2 workers, 2 replay shards, placed on different nodes) trains; once
    the shards have been snapshotted (every 50 learner iterations), a worker node holding a shard is
    SIGKILLed: the shard is restored from its snapshot on a live node, the workers that fed it (and any worker
    lost with the node, re-created) upload to it, and the run solves."""
    all_nodes_up(cluster)  # the PPO test killed node 3
    logdir = os.path.join(cluster.root, "apex")
    argv = [sys.executable, "-m", "relayrl.cli", "train", "apex", "CartPole-v1", "--workers", "2"]
    argv += ["--address", cluster.address, "--json", "--quiet", "--logdir", logdir, "--seed", "0"]
    argv += ["--stop-reward", "475", "--stop-timesteps", "400000"]
    job = cluster.popen(0, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        progress = os.path.join(logdir, "progress.csv")
        learnt = lambda: learning_iterations(progress) >= 60  # a snapshot at the 50th
        wait_until(job, learnt, 180, "Ape-X did not start learning", every=0.5)
        holders = [n for n in (0, 1, 2) if any("ReplayShard" in p for p in cluster.processes(n))]
        assert len(holders) == 2, f"the 2 replay shards are not on 2 nodes: {holders}"
        with_shard = [n for n in holders if n != 0]
        killed_ip = cluster.ips[with_shard[0]]
        cluster.kill_node(with_shard[0])
        stdout, stderr = job.communicate(timeout=600)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, stderr[-3000:]
    result = final_result(stdout)
    facts = {k: result.get(k) for k in ("episode_reward_mean", "timesteps_total", "training_iteration")}
    assert result["solved"], (facts, stderr[-3000:])
    assert result["learner/replay_shard_restarts"] >= 1, stderr[-3000:]
    assert "restoring it from its last snapshot" in stderr
    assert killed_ip not in {result[f"workers/{i}/node_ip"] for i in (1, 2)}


def start_redis(cluster, port: int, password: str) -> subprocess.Popen:
    """redis-server in the head's namespace, bound to the head's address, with a password (read from its
    config on stdin, so it is not in any command line)."""
    config = f'bind {cluster.ips[0]}\nport {port}\nrequirepass {password}\nsave ""\nappendonly no\n'
    config += f"dir {cluster.root}\n"
    server = cluster.popen(0, ["redis-server", "-"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    server.stdin.write(config)
    server.stdin.close()
    ping = ["redis-cli", "-h", cluster.ips[0], "-p", str(port), "--no-auth-warning", "-a", password, "ping"]
    for _ in range(100):
        if cluster.run(1, ping, timeout=10).stdout.strip() == "PONG":  # from another node
            return server
        time.sleep(0.1)
    raise RuntimeError("redis-server did not start")


def test_redis_replay_on_the_head_serves_a_learner_and_workers_on_other_nodes(cluster):
    """DQN with its replay in Redis bound to the head's address (password required), its workers spread
    over the nodes (those the tests above killed are started again): the transitions sampled on other nodes
    reach Redis, the learner trains on them, and Redis answers another node with the password. A wrong
    password is one line, exit 2. The driver (and learner) runs on the head: in this harness a driver in
    another namespace attaches to the head's raylet (Ray finds raylets by process, and the namespaces share
    one process table), which on real machines it would not."""
    all_nodes_up(cluster)
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed: run `bash scripts/ensure-redis.sh`")
    password, port = secrets.token_hex(16), 6390
    server = start_redis(cluster, port, password)
    try:
        argv = [sys.executable, "-m", "relayrl.cli", "train", "dqn", "CartPole-v1", "--workers", "2"]
        argv += ["--address", cluster.address, "--json", "--quiet", "--stop-timesteps", "3000"]
        argv += ["--set", "replay_backend=redis", "--set", f"redis_address={cluster.ips[0]}:{port}"]
        argv += ["--set", "redis_key_prefix=cluster", "--set", "learning_starts=500"]
        argv += ["--logdir", os.path.join(cluster.root, "dqn-redis")]
        env = {**cluster.env, "RELAYRL_REDIS_PASSWORD": password}
        done = subprocess.run(cluster.command(0, argv), env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        result = final_result(done.stdout)
        blocks = ["redis-cli", "-h", cluster.ips[0], "-p", str(port), "--no-auth-warning", "-a", password]
        stored = cluster.run(2, [*blocks, "llen", "cluster:blocks"], timeout=10).stdout.strip()
        env["RELAYRL_REDIS_PASSWORD"] = "wrong"
        refused = subprocess.run(
            cluster.command(0, argv), env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        server.kill()
        server.wait(timeout=10)
    nodes = {result[f"workers/{i}/node_ip"] for i in (1, 2)}
    print(f"\nworkers on {sorted(nodes)}, replay_size {result['learner/replay_size']}, blocks {stored}")
    assert nodes - {cluster.ips[0]}, nodes  # at least one worker on another node than Redis's
    assert result["learner/replay_size"] > 500 and int(stored) > 0
    assert result["timesteps_total"] >= 3000 and result["learner/loss"] == result["learner/loss"]  # trained
    assert refused.returncode == 2, refused.stderr[-2000:]
    assert "refused the password" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1


def test_head_node_lost_then_resume_auto_continues_from_the_checkpoint(cluster):
    """The documented path when the driver's (here: the head's) node is lost: the run checkpoints to storage
    that outlives the node (the log dir; here a directory every namespace sees), the head is SIGKILLed with
    the driver on it, the cluster is brought back, and `--resume auto` on the same log dir continues from the
    newest complete checkpoint and solves."""
    logdir = os.path.join(cluster.root, "ppo-resume")
    checkpoints = os.path.join(logdir, "checkpoints")
    argv = [sys.executable, "-m", "relayrl.cli", "train", "ppo", "CartPole-v1", "--workers", "2"]
    argv += ["--address", cluster.address, "--json", "--logdir", logdir, "--checkpoint-every", "2"]
    argv += ["--stop-reward", "475", "--stop-timesteps", "400000"]
    job = cluster.popen(0, [*argv, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_until(job, lambda: checkpoint.latest(checkpoints), 180, "no checkpoint written", every=0.2)
        cluster.kill_node(0)  # the head, with the driver and its learner
        job.wait(timeout=60)
    finally:
        if job.poll() is None:
            job.kill()
    saved = checkpoint.latest(checkpoints)  # the newest complete one (a .tmp-PID one is being written)
    cluster.restart()
    done = cluster.run(0, [*argv, "--resume", "auto"], timeout=400)
    assert done.returncode == 0, done.stderr[-3000:]
    result = final_result(done.stdout)
    assert f"resuming from {saved}" in done.stderr, done.stderr[-2000:]
    saved_iteration = int(os.path.basename(saved).split("-")[1])
    assert result["training_iteration"] > saved_iteration, (saved, result["training_iteration"])
    assert result["solved"], result["episode_reward_mean"]
