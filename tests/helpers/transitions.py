"""A replay minibatch of random transitions for SAC/TD3 learner tests: 3-d observations (Pendulum's shape),
actions in [-1, 1], the columns the replay actor-critic learners read."""

import gymnasium as gym
import numpy as np

OBS, ACT = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32)
ROWS = 32


def batch(seed: int = 0, rows: int = ROWS, act_dim: int = 2) -> dict:
    rng = np.random.default_rng(seed)
    return {
        "obs": rng.standard_normal((rows, 3)).astype(np.float32),
        "actions": rng.uniform(-1, 1, (rows, act_dim)).astype(np.float32),
        "rewards": rng.standard_normal(rows).astype(np.float32),
        "next_obs": rng.standard_normal((rows, 3)).astype(np.float32),
        "discounts": np.full(rows, 0.99, np.float32),
        "weights": np.ones(rows, np.float32),
    }
