"""Run in a fresh process (logical devices must be set before TensorFlow starts): TD3 updates (one Adam per
variable group, the actor delayed) with a MirroredStrategy over 2 logical CPU devices against the same updates
on 1 replica. Target smoothing noise is off so both see the same maths. Prints the largest differences as
JSON."""

import json

import gymnasium as gym
import numpy as np

from relayrl.models.tf_import import tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

# relayrl imported after the logical devices are set: TensorFlow fixes them when it first uses a device
from relayrl.algorithms.td3 import TD3, TD3Config  # noqa: E402
from relayrl.models import networks  # noqa: E402
from tests.helpers import transitions  # noqa: E402


def main() -> None:
    config = (
        TD3Config()
        .training(
            model={"fcnet_hiddens": [16], "fcnet_activation": "relu"},
            critic_hiddens=[16],
            train_batch_size=32,
            target_noise=0.0,
            policy_delay=2,
        )
        .debugging(seed=0)
    )
    env = gym.make("Pendulum-v1")
    spec = networks.spec_from_spaces(
        env.observation_space, env.action_space, config.model, head="deterministic"
    )
    weights = networks.init_weights(spec, np.random.default_rng(0))
    batch = transitions.batch(seed=1, rows=128, act_dim=1)
    idx = np.random.default_rng(2).permutation(128).reshape(4, 32)
    results = {}
    for name, strategy in (("one", None), ("mirrored", tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]))):
        learner = TD3.build_learner(spec, config, strategy=strategy)
        learner.set_weights(weights)
        metrics = learner.update(batch, idx)
        critics = [v.numpy() for v in learner.model.target_critics.ordered_variables]
        results[name] = (
            learner.get_weights() + critics,
            metrics,
            learner.strategy.num_replicas_in_sync,
            int(learner.optimizers["actor"].step.numpy()),
        )
    (w1, m1, r1, a1), (w2, m2, r2, a2) = results["one"], results["mirrored"]
    print(
        json.dumps(
            {
                "replicas": [r1, r2],
                "actor_steps": [a1, a2],
                "max_weight_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2)),
                "max_weight_change": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, weights)),
                "max_metric_diff": max(abs(m1[k] - m2[k]) for k in m1),
            }
        )
    )


if __name__ == "__main__":
    main()
