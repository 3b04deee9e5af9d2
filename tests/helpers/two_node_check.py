"""Run in a fresh process: a 2-node Ray cluster simulated on this machine (ray.cluster_utils.Cluster, one
CPU per node), PPO joining it by address with 2 rollout workers. Prints as JSON where the workers ran
and how far training got."""

import json

import ray
from ray.cluster_utils import Cluster

from relayrl import PPOConfig


def main() -> None:
    cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False})
    cluster.add_node(num_cpus=1)
    cluster.wait_for_nodes()
    try:
        config = (
            PPOConfig()
            .environment("CartPole-v1")
            .rollouts(num_rollout_workers=2, num_envs_per_worker=4)
            .resources(address=cluster.address)
            .training(train_batch_size=256, sgd_minibatch_size=64, num_sgd_iter=2)
            .debugging(seed=0)
        )
        algo = config.build()
        results = [algo.train() for _ in range(3)]
        nodes = ray.get(
            [
                a.__ray_call__.remote(lambda self: ray.get_runtime_context().get_node_id())
                for a in algo.workers.actors
            ]
        )
        alive = len([n for n in ray.nodes() if n["Alive"]])
        algo.stop()  # disconnects: relayrl connected this driver, so it lets go of it
        print(
            json.dumps(
                {
                    "cluster_nodes": alive,
                    "worker_nodes": len(set(nodes)),
                    "iterations": results[-1]["training_iteration"],
                    "timesteps_total": results[-1]["timesteps_total"],
                    "healthy": results[-1]["workers/healthy"],
                }
            )
        )
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    main()
