"""Run in a fresh process (logical devices must be set before TensorFlow starts): one update of a custom
Keras model (PPO's policy-value net, DQN's Q-network) with a MirroredStrategy over 2 logical CPU devices
against the same update on 1 replica. Prints, per algorithm, the replicas and the largest weight change and
difference as JSON."""

import json

import numpy as np

from relayrl.models.tf_import import tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

# relayrl imported after the logical devices are set: TensorFlow fixes them when it first uses a device
from relayrl.algorithms.dqn import DQN, DQNConfig  # noqa: E402
from relayrl.algorithms.ppo import PPO, PPOConfig  # noqa: E402
from relayrl.models import networks  # noqa: E402
from tests.helpers.custom_models import PolicyValueNet, QNetwork  # noqa: E402

B = 128


def random_batch(learner, rng) -> dict:
    batch = {}
    for key, sig in zip(learner._keys, learner._batch_sig):
        shape = (B, *sig.shape[1:])
        if sig.dtype.is_integer:
            batch[key] = rng.integers(0, 2, shape).astype(sig.dtype.as_numpy_dtype)
        elif key in ("discounts", "weights", "logp"):
            batch[key] = rng.uniform(0.3, 0.9, shape).astype(np.float32)
        else:
            batch[key] = rng.standard_normal(shape).astype(np.float32)
    if "logp" in batch:
        batch["logp"] = np.log(batch["logp"])
    return batch


def check(algo_cls, config, mirrored) -> dict:
    _, _, spec = algo_cls.check_env(config.environment("CartPole-v1"))
    weights = networks.init_weights(spec, np.random.default_rng(0))
    rng = np.random.default_rng(1)
    idx = np.stack([rng.permutation(B)[:64] for _ in range(2)])
    results, batch = [], None
    for strategy in (None, mirrored):
        learner = algo_cls.build_learner(spec, config, strategy=strategy)
        learner.set_weights(weights)
        batch = batch or random_batch(learner, rng)
        learner.update(batch, idx)
        results.append((learner.get_weights(), learner.strategy.num_replicas_in_sync))
    (w1, r1), (w2, r2) = results
    return {
        "replicas": [r1, r2],
        "max_weight_diff": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, w2)),
        "max_weight_change": max(float(np.max(np.abs(a - b))) for a, b in zip(w1, weights)),
    }


def main() -> None:
    ppo = PPOConfig().training(sgd_minibatch_size=64, lr=1e-3, model={"custom_model": PolicyValueNet})
    dqn = DQNConfig().training(train_batch_size=64, dueling=False, lr=1e-3, model={"custom_model": QNetwork})
    # one strategy for both: a second MirroredStrategy in the process would reuse its collective instance keys
    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    print(json.dumps({"ppo": check(PPO, ppo, mirrored), "dqn": check(DQN, dqn, mirrored)}))


if __name__ == "__main__":
    main()
