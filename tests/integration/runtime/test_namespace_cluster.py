"""relayrl on a real 3-node Ray cluster: each node in its own network namespace with its own address
(tests/helpers/netns_cluster.py), token auth on, the job run from the head's namespace with --address.

A node SIGKILLed (every process of it, as if it lost power) while the workers start must cost one restart,
not the run. Skipped where namespaces cannot be made (not root, no `ip`)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

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
        deadline = time.monotonic() + 120
        while not any("RolloutWorker" in line for line in cluster.processes(2)):
            assert job.poll() is None, job.communicate()[1][-2000:]
            assert time.monotonic() < deadline, "no worker started on node 3"
            time.sleep(0.05)
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
