"""A synthetic image env for frame-stacking tests: each frame encodes (env seed, episode, step), so a stack
rebuilt from the wrong frames is visible; stacked k frames on the LAST axis like Atari's (84, 84, 4)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class EpisodeFrames(gym.Env):
    """Frames (height, width) uint8; episodes of random length in [min_len, max_len] that end terminated or
    truncated at random; reward = step + action. A frame is constant but for its first 4 bytes: seed, episode,
    step and a random byte (so neighbouring frames are sometimes equal: a static screen)."""

    def __init__(self, config: dict):
        self.height, self.width = config.get("height", 6), config.get("width", 5)
        self.min_len, self.max_len = config.get("min_len", 1), config.get("max_len", 6)
        self.static = config.get("static", 0.2)  # chance that a step repeats the previous frame
        self.observation_space = gym.spaces.Box(0, 255, (self.height, self.width), np.uint8)
        self.action_space = gym.spaces.Discrete(2)
        self.episode, self.seed_byte, self.rng = -1, 0, np.random.default_rng(0)

    def _frame(self) -> np.ndarray:
        if self.step_no and self.rng.random() < self.static:
            return self.last.copy()
        frame = np.full((self.height, self.width), 7, np.uint8)
        frame.flat[:4] = (self.seed_byte, self.episode % 256, self.step_no % 256, self.rng.integers(256))
        self.last = frame
        return frame

    def reset(self, *, seed=None, options=None):
        if seed is not None:
            self.rng, self.seed_byte = np.random.default_rng(seed), seed % 256
        self.episode += 1
        self.step_no, self.length = 0, int(self.rng.integers(self.min_len, self.max_len + 1))
        return self._frame(), {}

    def step(self, action):
        self.step_no += 1
        done = self.step_no >= self.length
        terminated = done and bool(self.rng.random() < 0.5)
        return self._frame(), float(self.step_no + int(action)), terminated, done and not terminated, {}


def stacked(config: dict) -> gym.Env:
    """EpisodeFrames in a FrameStackObservation of config['k'] frames (padding: the reset frame), stack axis
    moved last: (height, width, k)."""
    k = config.get("k", 4)
    env = gym.wrappers.FrameStackObservation(EpisodeFrames(config), k)
    space = env.observation_space
    last = gym.spaces.Box(0, 255, (*space.shape[1:], k), np.uint8)
    return gym.wrappers.TransformObservation(
        env, lambda obs: np.ascontiguousarray(np.moveaxis(obs, 0, -1)), last
    )
