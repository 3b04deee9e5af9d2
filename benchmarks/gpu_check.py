"""One prepared check for a machine with a GPU (run once, give the machine back):

    python benchmarks/gpu_check.py

1. learner placement: PPO with .resources(num_gpus=1) puts the learner in a Ray actor holding the GPU
   (its variables on /GPU:0) while the rollout workers stay CPU-only; trains a few iterations.
2. MirroredStrategy: one physical GPU split into 2 logical GPUs; one PPO update on 2 replicas equals the
   same update on 1 replica (max weight difference printed).
3. Atari IMPALA throughput: ALE/Breakout-v5 (DeepMind preprocessing, Nature CNN), the learner in a Ray actor
   on the GPU, every other CPU core a rollout worker; env frames/s, learner updates/s and where the time goes,
   over a fixed wall time.
Prints one JSON line per check. Not run in CI (CI has no GPU).

    python benchmarks/gpu_check.py --atari-only --cpu   # check 3 with the learner actor on CPU, ~1 minute:
                                                        # rehearse it here before spending device time
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


def atari_impala_check(num_gpus: int, workers: int, seconds: float) -> dict:
    """IMPALA on Breakout with the learner in a Ray actor (on the GPU when num_gpus = 1): env frames/s."""
    from relayrl import IMPALAConfig

    algo = (
        IMPALAConfig()
        .environment("ALE/Breakout-v5")
        .rollouts(num_rollout_workers=workers, num_envs_per_worker=8, rollout_fragment_length=32)
        .resources(num_gpus=num_gpus, learner_placement="actor")
        .training(train_batch_size=512, lr=6e-4, entropy_coeff=0.01)
        .debugging(seed=0)
        .build()
    )
    start, results = time.time(), []
    while time.time() - start < seconds:
        results.append(algo.train())
    steady = results[len(results) // 2 :] or results  # skip the start-up half (tracing, actors starting)
    steps = sum(r["env_steps_this_iter"] for r in steady)
    wall = sum(r["time_this_iter_s"] for r in steady)
    frame_skip = algo.config.atari["frame_skip"]
    out = {
        "check": "atari_impala_throughput",
        "learner": algo.learner.placement,
        "rollout_workers": workers,
        "iterations": len(results),
        "env_frames_per_s": round(steps * frame_skip / wall, 1),
        "agent_steps_per_s": round(steps / wall, 1),
        "learner_updates_per_s": round(len(steady) / wall, 2),
        "timers": {k: round(v, 3) for k, v in steady[-1].items() if k.startswith("timers/")},
        "episode_reward_mean": steady[-1]["episode_reward_mean"],
        "wall_s": round(time.time() - start, 1),
    }
    algo.stop()
    return out


def main() -> None:
    cpu = "--cpu" in sys.argv
    workers = max(1, (os.cpu_count() or 2) - 2)  # one core each for the driver and the learner actor
    if "--atari-only" not in sys.argv:
        run_placement_and_mirrored()
    atari = atari_impala_check(0 if cpu else 1, 1 if cpu else workers, 45 if cpu else 180)
    print(json.dumps(atari, default=str), flush=True)


def run_placement_and_mirrored() -> None:
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
