"""Weight broadcast across nodes against within a node, on a real 3-node Ray cluster made of network
namespaces on this machine (tests/helpers/netns_cluster.py: needs root and iproute2).

    sudo python benchmarks/cluster_broadcast.py [--rounds 20] [--receivers 2]

One broadcast is relayrl's: one ray.put of the weights (a list of numpy arrays) on the driver (head
node), then every receiver gets the ObjectRef, ray.get's the arrays and touches each one (as a rollout
worker's set_weights does); it ends when every receiver has answered. Receivers are pinned (node affinity)
to the head node ("same node") or spread over the two other nodes ("other nodes"). Each row is the median of
--rounds broadcasts, after one warm-up; MB/s = model bytes x receivers / time. "empty call" is the same
round trip with no weights: the part of a broadcast that is not data.

The nodes are namespaces joined by a veth bridge on one machine, so "other nodes" measures Ray's object
transfer path between nodes (the raylets' object managers over TCP), not a physical network: on real machines
add the wire's time (6.7 MB is ~5 ms at 10 Gb/s, ~54 ms at 1 Gb/s).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def nature_cnn(actions: int = 6) -> list[np.ndarray]:
    """The Nature DQN CNN's variables (84x84x4 input, conv 32/64/64, dense 512, policy and value heads)."""
    shapes = [(8, 8, 4, 32), (32,), (4, 4, 32, 64), (64,), (3, 3, 64, 64), (64,), (3136, 512), (512,)]
    shapes += [(512, actions), (actions,), (512, 1), (1,)]
    return [np.random.default_rng(i).standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)]


def mlp(obs: int = 4, hidden: int = 64, actions: int = 2) -> list[np.ndarray]:
    """relayrl's default MLP on CartPole: two hidden layers of 64, policy and value heads."""
    shapes = [(obs, hidden), (hidden,), (hidden, hidden), (hidden,), (hidden, actions), (actions,)]
    shapes += [(hidden, 1), (1,)]
    return [np.random.default_rng(i).standard_normal(s).astype(np.float32) for i, s in enumerate(shapes)]


def measure(address: str, ips: list[str], rounds: int, receivers: int) -> list[dict]:
    """Runs inside the head node's namespace: one row per (model, placement)."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    ray.init(address=address, logging_level="ERROR", log_to_driver=False)

    @ray.remote(num_cpus=0)
    class Receiver:
        def ping(self) -> str:
            return ray.util.get_node_ip_address()

        def take(self, box: list) -> float:
            weights = ray.get(box[0])  # what RayRolloutWorker.sample_with does with a new version
            return float(sum(float(w.reshape(-1)[-1]) for w in weights))

    node_of = {n["NodeManagerAddress"]: n["NodeID"] for n in ray.nodes() if n["Alive"]}

    def pinned(ip: str):
        return Receiver.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_of[ip], soft=False))

    groups = {
        "same node": [pinned(ips[0]).remote() for _ in range(receivers)],
        "other nodes": [pinned(ips[1 + k % (len(ips) - 1)]).remote() for k in range(receivers)],
    }
    for name, actors in groups.items():
        where = ray.get([a.ping.remote() for a in actors])
        assert (set(where) == {ips[0]}) == (name == "same node"), (name, where)
    rows = []
    for model, weights in (("MLP 64x64 (CartPole)", mlp()), ("Nature CNN (Atari)", nature_cnn())):
        size = sum(w.nbytes for w in weights)
        for name, actors in groups.items():
            empty, full = [], []
            for _ in range(rounds + 1):
                start = time.perf_counter()
                ray.get([a.ping.remote() for a in actors])
                empty.append(time.perf_counter() - start)
                start = time.perf_counter()
                ref = ray.put(weights)  # a new version: a new object, nothing cached on the nodes
                ray.get([a.take.remote([ref]) for a in actors])
                full.append(time.perf_counter() - start)
                del ref
            ms = float(np.median(full[1:])) * 1e3
            rows.append(
                {
                    "model": model,
                    "params": int(sum(w.size for w in weights)),
                    "mb": round(size / 1e6, 3),
                    "receivers": name,
                    "ms": round(ms, 2),
                    "empty_call_ms": round(float(np.median(empty[1:])) * 1e3, 2),
                    "mb_per_s": round(size * len(actors) / 1e6 / (ms / 1e3), 1),
                }
            )
    ray.shutdown()
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--receivers", type=int, default=2, help="receivers per placement")
    p.add_argument("--inner", nargs=2, metavar=("ADDRESS", "IPS"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.inner:  # inside the head's namespace
        rows = measure(args.inner[0], args.inner[1].split(","), args.rounds, args.receivers)
        print(json.dumps(rows))
        return
    from tests.helpers.netns_cluster import NamespaceCluster

    with NamespaceCluster(nodes=3, env={"PYTHONPATH": ROOT}) as cluster:
        argv = [sys.executable, os.path.abspath(__file__), "--rounds", str(args.rounds)]
        argv += ["--receivers", str(args.receivers), "--inner", cluster.address, ",".join(cluster.ips)]
        done = cluster.run(0, argv, timeout=900)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-3000:])
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"| model | params | MB | receivers ({args.receivers}) | ms per broadcast | empty call ms | MB/s |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    for r in rows:
        print(
            f"| {r['model']} | {r['params']:,} | {r['mb']} | {r['receivers']} | {r['ms']} | "
            f"{r['empty_call_ms']} | {r['mb_per_s']} |"
        )
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
