"""Algorithm registry: CLI name -> (module, Config class, Algorithm class). Modules import lazily,
so listing names or validating a CLI call does not import TensorFlow."""

from __future__ import annotations

import importlib

REGISTRY = {
    "ppo": ("relayrl.algorithms.ppo", "PPOConfig", "PPO"),
    "dqn": ("relayrl.algorithms.dqn", "DQNConfig", "DQN"),
    "qlearning": ("relayrl.algorithms.qlearning", "QLearningConfig", "QLearning"),
    "apex": ("relayrl.algorithms.apex", "ApeXConfig", "ApeX"),
    "a2c": ("relayrl.algorithms.a2c", "A2CConfig", "A2C"),
    "reinforce": ("relayrl.algorithms.reinforce", "REINFORCEConfig", "REINFORCE"),
    "impala": ("relayrl.algorithms.impala", "IMPALAConfig", "IMPALA"),
    "a3c": ("relayrl.algorithms.a3c", "A3CConfig", "A3C"),
    "sac": ("relayrl.algorithms.sac", "SACConfig", "SAC"),
    "td3": ("relayrl.algorithms.td3", "TD3Config", "TD3"),
}


def _load(name: str, index: int):
    if name not in REGISTRY:
        raise ValueError(f"unknown algorithm {name!r}; allowed: {', '.join(sorted(REGISTRY))}")
    module = importlib.import_module(REGISTRY[name][0])
    return getattr(module, REGISTRY[name][index])


def config_class(name: str):
    return _load(name, 1)


def algorithm_class(name: str):
    return _load(name, 2)
