"""One prepared check for a machine with a GPU (run once, give the machine back):

    python benchmarks/gpu_check.py

1. learner placement: PPO with .resources(num_gpus=1) puts the learner in a Ray actor holding the GPU
   (its variables on /GPU:0) while the rollout workers stay CPU-only; trains a few iterations.
2. MirroredStrategy: one physical GPU split into 2 logical GPUs; one PPO update on 2 replicas equals the
   same update on 1 replica (max weight difference printed).
Prints one JSON line per check. Not run in CI (CI has no GPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

MIRRORED = r"""
import json, numpy as np, gymnasium as gym
from relayrl.models.tf_import import tf
gpu = tf.config.list_physical_devices("GPU")[0]
tf.config.set_logical_device_configuration(gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=2048)] * 2)
from relayrl.models import networks
from relayrl.algorithms.ppo import PPO, PPOConfig
config = PPOConfig().environment("CartPole-v1").training(sgd_minibatch_size=256, num_sgd_iter=4, lr=1e-3)
env = gym.make("CartPole-v1")
spec = networks.spec_from_spaces(env.observation_space, env.action_space, config.model)
weights = networks.init_weights(spec, np.random.default_rng(0))
rng = np.random.default_rng(1); B = 1024
batch = {
    "obs": rng.standard_normal((B, 4)).astype(np.float32),
    "actions": rng.integers(0, 2, B),
    "logp": np.log(rng.uniform(0.3, 0.7, B)).astype(np.float32),
    "vf_preds": rng.standard_normal(B).astype(np.float32),
    "advantages": rng.standard_normal(B).astype(np.float32),
    "value_targets": rng.standard_normal(B).astype(np.float32),
}
idx = np.concatenate([rng.permutation(B).reshape(4, 256) for _ in range(4)])
out = {}
for name, strategy in (("one", None), ("mirrored", tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"]))):
    learner = PPO.build_learner(spec, config, strategy=strategy)
    learner.set_weights(weights)
    learner.update(batch, idx)
    out[name] = (learner.get_weights(), learner.strategy.num_replicas_in_sync,
                 sorted({getattr(v, "value", v).device for v in learner.model.ordered_variables}))
diff = max(float(np.max(np.abs(a - b))) for a, b in zip(out["one"][0], out["mirrored"][0]))
print(json.dumps({"check": "mirrored_strategy", "replicas": out["mirrored"][1], "devices": out["mirrored"][2],
                  "max_weight_diff_vs_one_replica": diff}))
"""


def placement_check() -> dict:
    from relayrl import PPOConfig

    start = time.time()
    algo = (
        PPOConfig.from_tuned("CartPole-v1")
        .rollouts(num_rollout_workers=2)
        .resources(num_gpus=1)
        .debugging(seed=0)
        .build()
    )
    results = [algo.train() for _ in range(20)]
    out = {
        "check": "learner_placement",
        "learner": algo.learner.placement,
        "iterations": len(results),
        "reward_mean": results[-1]["episode_reward_mean"],
        "learn_s_per_iter": results[-1]["timers/learn_s"],
        "wall_s": round(time.time() - start, 1),
    }
    import ray

    out["worker_gpu_ids"] = ray.get(
        [a.__ray_call__.remote(lambda self: ray.get_gpu_ids()) for a in algo.workers.actors]
    )
    algo.stop()
    return out


def main() -> None:
    print(json.dumps(placement_check(), default=str), flush=True)
    proc = subprocess.run(
        [sys.executable, "-c", MIRRORED],
        capture_output=True,
        text=True,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"),
    )
    print(
        proc.stdout.strip().splitlines()[-1]
        if proc.returncode == 0
        else json.dumps({"check": "mirrored_strategy", "error": proc.stderr[-1500:]})
    )


if __name__ == "__main__":
    main()
