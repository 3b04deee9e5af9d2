"""relayrl: distributed deep reinforcement learning with TensorFlow/Keras and Ray.

    from relayrl import PPOConfig
    algo = PPOConfig().environment("CartPole-v1").rollouts(num_rollout_workers=2).build()
    result = algo.train()          # {"episode_reward_mean": ..., "timesteps_total": ..., ...}

Attributes load lazily so `import relayrl` stays cheap (TensorFlow is imported by the algorithms).
"""

from __future__ import annotations

__version__ = "0.1.0"

_LAZY = {
    "PPOConfig": ("relayrl.algorithms.ppo", "PPOConfig"),
    "PPO": ("relayrl.algorithms.ppo", "PPO"),
    "DQNConfig": ("relayrl.algorithms.dqn", "DQNConfig"),
    "DQN": ("relayrl.algorithms.dqn", "DQN"),
    "QLearningConfig": ("relayrl.algorithms.qlearning", "QLearningConfig"),
    "ApeXConfig": ("relayrl.algorithms.apex", "ApeXConfig"),
    "A2CConfig": ("relayrl.algorithms.a2c", "A2CConfig"),
    "REINFORCEConfig": ("relayrl.algorithms.reinforce", "REINFORCEConfig"),
    "IMPALAConfig": ("relayrl.algorithms.impala", "IMPALAConfig"),
    "A3CConfig": ("relayrl.algorithms.a3c", "A3CConfig"),
    "SACConfig": ("relayrl.algorithms.sac", "SACConfig"),
    "SAC": ("relayrl.algorithms.sac", "SAC"),
    "TD3Config": ("relayrl.algorithms.td3", "TD3Config"),
    "TD3": ("relayrl.algorithms.td3", "TD3"),
    "Algorithm": ("relayrl.algorithms.base", "Algorithm"),
    "Config": ("relayrl.core.config", "Config"),
}

__all__ = list(_LAZY) + ["__version__"]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'relayrl' has no attribute {name!r}")
