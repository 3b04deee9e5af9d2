"""Bring your own Keras model: DQN trains the QNetwork below on CartPole-v1, then exports a SavedModel.

    python examples/custom_keras_model.py [--seed 0] [--export-dir DIR] [--max-steps 150000]

relayrl builds the model as QNetwork(num_actions) and calls it on float32 observations [B, 4]; call()
returns the Q-values [B, num_actions] (docs/custom_model.md has the interface of every head). The last line
printed is JSON: {"episode_reward_mean": mean return of the last 100 episodes, "export_dir": the SavedModel}.
"""

from __future__ import annotations

import argparse
import json
import tempfile

import tensorflow as tf

from relayrl import DQNConfig


class QNetwork(tf.keras.Model):
    def __init__(self, num_actions):
        super().__init__()
        self.dense1 = tf.keras.layers.Dense(128, activation="relu")
        self.dense2 = tf.keras.layers.Dense(64, activation="relu")
        self.q_values = tf.keras.layers.Dense(num_actions)

    def call(self, inputs):
        return self.q_values(self.dense2(self.dense1(inputs)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--export-dir", default=None, help="where the SavedModel goes (default: a temp dir)")
    parser.add_argument("--max-steps", type=int, default=150_000, help="give up after this many env steps")
    parser.add_argument("--target", type=float, default=475.0, help="stop at this last-100 mean return")
    args = parser.parse_args()

    config = (
        DQNConfig.from_tuned("CartPole-v1")  # the tuned settings, with your network in place of relayrl's
        .training(model={"custom_model": QNetwork}, dueling=False)  # call() gives Q-values, no dueling heads
        .debugging(seed=args.seed)
    )
    algo = config.build()
    try:
        while True:
            result = algo.train()
            if result["episode_reward_mean"] >= args.target or result["timesteps_total"] >= args.max_steps:
                break
        export_dir = algo.export_policy(args.export_dir or tempfile.mkdtemp(prefix="relayrl-custom-model-"))
    finally:
        algo.stop()
    print(json.dumps({"episode_reward_mean": result["episode_reward_mean"], "export_dir": export_dir}))


if __name__ == "__main__":
    main()
