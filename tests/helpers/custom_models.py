"""Your-own-model classes for the custom-model tests, importable by path ('tests.helpers.custom_models:X')
as a config names them, and by Ray workers and learner actors."""

from __future__ import annotations

import tensorflow as tf


class QNetwork(tf.keras.Model):
    """The Q head of docs/custom_model.md: call(obs) -> Q-values [B, num_actions]."""

    def __init__(self, num_outputs: int, hidden: int = 32):
        super().__init__()
        self.dense1 = tf.keras.layers.Dense(hidden, activation="relu")
        self.q_values = tf.keras.layers.Dense(num_outputs)

    def call(self, inputs):
        return self.q_values(self.dense1(inputs))


class DuelingNet(tf.keras.Model):
    """call(obs) -> (advantages [B, A], value [B, 1]): DQN with dueling=True."""

    def __init__(self, num_outputs: int):
        super().__init__()
        self.torso = tf.keras.layers.Dense(32, activation="relu")
        self.adv = tf.keras.layers.Dense(num_outputs)
        self.v = tf.keras.layers.Dense(1)

    def call(self, inputs):
        h = self.torso(inputs)
        return self.adv(h), self.v(h)


class PolicyValueNet(tf.keras.Model):
    """call(obs) -> (logits or means [B, D], value [B]): PPO, A2C, A3C, IMPALA, REINFORCE."""

    def __init__(self, num_outputs: int, hidden: int = 32):
        super().__init__()
        self.torso = tf.keras.layers.Dense(hidden, activation="tanh")
        self.pi = tf.keras.layers.Dense(num_outputs)
        self.v = tf.keras.layers.Dense(1)

    def call(self, inputs):
        h = self.torso(inputs)
        return self.pi(h), tf.squeeze(self.v(h), axis=-1)


class ConvPolicyValueNet(tf.keras.Model):
    """An image model: [B, H, W, C] float32 in [0, 1] -> (logits [B, A], value [B, 1])."""

    def __init__(self, num_outputs: int):
        super().__init__()
        self.conv = tf.keras.layers.Conv2D(8, 4, strides=2, activation="relu")
        self.flat = tf.keras.layers.Flatten()
        self.pi = tf.keras.layers.Dense(num_outputs)
        self.v = tf.keras.layers.Dense(1)

    def call(self, inputs):
        h = self.flat(self.conv(inputs))
        return self.pi(h), self.v(h)


class ActorNet(tf.keras.Model):
    """SAC: call(obs) -> [B, 2A] (mean, log_std); TD3: [B, A] (the action before tanh)."""

    def __init__(self, num_outputs: int):
        super().__init__()
        self.torso = tf.keras.layers.Dense(32, activation="relu")
        self.out = tf.keras.layers.Dense(num_outputs)

    def call(self, inputs):
        return self.out(self.torso(inputs))


class CriticNet(tf.keras.Model):
    """One critic: call(obs, actions) -> Q [B, 1]."""

    def __init__(self, hidden: int = 32):
        super().__init__()
        self.h = tf.keras.layers.Dense(hidden, activation="relu")
        self.q = tf.keras.layers.Dense(1)

    def call(self, obs, actions):
        return self.q(self.h(tf.concat([obs, actions], axis=-1)))


class WrongWidthNet(tf.keras.Model):
    def __init__(self, num_outputs: int):
        super().__init__()
        self.out = tf.keras.layers.Dense(num_outputs + 1)

    def call(self, inputs):
        return self.out(inputs)


class Float64Net(tf.keras.Model):
    def __init__(self, num_outputs: int):
        super().__init__()
        self.out = tf.keras.layers.Dense(num_outputs)

    def call(self, inputs):
        return tf.cast(self.out(inputs), tf.float64)


class NotAModel:
    def __init__(self, num_outputs: int):
        self.num_outputs = num_outputs
