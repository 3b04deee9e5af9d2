"""relayrl: distributed deep reinforcement learning with TensorFlow/Keras and Ray.

    from relayrl import PPOConfig
    algo = PPOConfig().environment("CartPole-v1").rollouts(num_rollout_workers=2).build()
    result = algo.train()          # {"episode_reward_mean": ..., "timesteps_total": ..., ...}

Attributes load lazily so `import relayrl` stays cheap (TensorFlow is imported by the algorithms).
"""
from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "PPOConfig": ("relayrl.algos.ppo", "PPOConfig"),
    "PPO": ("relayrl.algos.ppo", "PPO"),
    "DQNConfig": ("relayrl.algos.dqn", "DQNConfig"),
    "DQN": ("relayrl.algos.dqn", "DQN"),
    "QLearningConfig": ("relayrl.algos.qlearning", "QLearningConfig"),
    "ApeXConfig": ("relayrl.algos.apex", "ApeXConfig"),
    "A2CConfig": ("relayrl.algos.a2c", "A2CConfig"),
    "REINFORCEConfig": ("relayrl.algos.reinforce", "REINFORCEConfig"),
    "IMPALAConfig": ("relayrl.algos.impala", "IMPALAConfig"),
    "A3CConfig": ("relayrl.algos.a3c", "A3CConfig"),
    "SACConfig": ("relayrl.algos.sac", "SACConfig"),
    "SAC": ("relayrl.algos.sac", "SAC"),
    "TD3Config": ("relayrl.algos.td3", "TD3Config"),
    "TD3": ("relayrl.algos.td3", "TD3"),
    "Algorithm": ("relayrl.algorithm", "Algorithm"),
    "Config": ("relayrl.config", "Config"),
}

__all__ = list(_LAZY) + ["__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'relayrl' has no attribute {name!r}")
