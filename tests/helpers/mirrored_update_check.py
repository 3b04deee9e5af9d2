"""Run in a fresh process (logical devices must be set before TensorFlow starts): one PPO update with a
MirroredStrategy over 2 logical CPU devices against the same update on 1 replica. Prints the largest
absolute difference of any weight and of any metric as JSON."""

import json

import gymnasium as gym
import numpy as np

from relayrl.models.tf_import import tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

# relayrl imported after the logical devices are set: TensorFlow fixes them when it first uses a device
from relayrl.algorithms.ppo import PPO, PPOConfig  # noqa: E402
from relayrl.models import networks  # noqa: E402


def main() -> None:
    config = PPOConfig().environment("CartPole-v1").training(sgd_minibatch_size=64, num_sgd_iter=3, lr=1e-3)
    env = gym.make("CartPole-v1")
    spec = networks.spec_from_spaces(env.observation_space, env.action_space, config.model)
    weights = networks.init_weights(spec, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    B = 256
    batch = {
        "obs": rng.standard_normal((B, 4)).astype(np.float32),
        "actions": rng.integers(0, 2, B),
        "logp": np.log(rng.uniform(0.3, 0.7, B)).astype(np.float32),
        "vf_preds": rng.standard_normal(B).astype(np.float32),
        "advantages": rng.standard_normal(B).astype(np.float32),
        "value_targets": rng.standard_normal(B).astype(np.float32),
    }
    idx = np.concatenate([rng.permutation(B).reshape(4, 64) for _ in range(3)])
    results = {}
    for name, strategy in (("one", None), ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
        learner = PPO.build_learner(spec, config, strategy=strategy)
        learner.set_weights(weights)
        metrics = learner.update(batch, idx)
        results[name] = (learner.get_weights(), metrics, learner.strategy.num_replicas_in_sync)
    (w1, m1, r1), (w2, m2, r2) = results["one"], results["mirrored"]
    print(
        json.dumps(
            {
                "replicas": [r1, r2],
                "max_weight_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2)),
                "max_weight_change": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, weights)),
                "max_metric_diff": max(abs(m1[k] - m2[k]) for k in m1),
            }
        )
    )


if __name__ == "__main__":
    main()
