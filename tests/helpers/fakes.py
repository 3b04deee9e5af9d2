"""Tiny real gymnasium environments with known dynamics, for tests that need exact expectations."""

from __future__ import annotations

import os
import signal
import time

import gymnasium as gym
import numpy as np


class CountdownEnv(gym.Env):
    """Observation = [steps taken]; reward 1 per step; terminates after `terminate_at` steps unless
    `truncate_at` comes first (then it is truncated). Deterministic, so returns are known exactly."""

    def __init__(self, env_config: dict | None = None):
        cfg = env_config or {}
        self.terminate_at = cfg.get("terminate_at", 3)
        self.truncate_at = cfg.get("truncate_at", 100)
        self.observation_space = gym.spaces.Box(0.0, 1000.0, (1,), np.float32)
        self.action_space = gym.spaces.Discrete(2)
        self.t = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return np.array([0.0], np.float32), {}

    def step(self, action):
        self.t += 1
        terminated = self.t >= self.terminate_at
        truncated = (not terminated) and self.t >= self.truncate_at
        return np.array([float(self.t)], np.float32), 1.0, terminated, truncated, {}


class NaNRewardEnv(CountdownEnv):
    """Returns a NaN reward on its second step."""

    def step(self, action):
        obs, _, term, trunc, info = super().step(action)
        return obs, float("nan") if self.t == 2 else 1.0, term, trunc, info


class ImageEnv(gym.Env):
    """24x24x3 uint8 images; reward 1 when the action matches the brightest channel. Exercises the conv
    torso."""

    def __init__(self, env_config: dict | None = None):
        self.observation_space = gym.spaces.Box(0, 255, (24, 24, 3), np.uint8)
        self.action_space = gym.spaces.Discrete(3)
        self._obs = None

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._obs = self.np_random.integers(0, 255, (24, 24, 3), dtype=np.uint8)
        return self._obs, {}

    def step(self, action):
        reward = float(int(action) == int(self._obs.mean(axis=(0, 1)).argmax()))
        self._obs = self.np_random.integers(0, 255, (24, 24, 3), dtype=np.uint8)
        return self._obs, reward, False, False, {}


class FaultyCartPole(gym.Wrapper):
    """CartPole that injects one fault, once across all its copies and restarts (a marker file records it):
    "raise" (env.step raises), "kill" (the worker process dies by SIGKILL) or "hang" (step blocks for 10 min),
    at the `at_step`-th step of an env copy; or "kill_at_start": a worker process (any but `driver_pid`) dies
    by SIGKILL while building its envs, as when its node is lost while workers start; "raise_at_start": every
    worker's env constructor raises."""

    def __init__(self, env_config: dict | None = None):
        from gymnasium.envs.classic_control.cartpole import CartPoleEnv
        from gymnasium.wrappers import TimeLimit

        super().__init__(TimeLimit(CartPoleEnv(), max_episode_steps=500))
        cfg = env_config or {}
        self.fault, self.at_step, self.marker = cfg.get("fault"), cfg.get("at_step", 100), cfg.get("marker")
        self.steps = 0
        in_worker = os.getpid() != cfg.get("driver_pid")
        if self.fault == "kill_at_start" and in_worker and self._claim():
            os.kill(os.getpid(), signal.SIGKILL)
        if self.fault == "raise_at_start" and in_worker:
            raise RuntimeError("injected constructor failure")

    def _claim(self) -> bool:
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return True
        except FileExistsError:
            return False

    def step(self, action):
        self.steps += 1
        if self.fault and self.steps == self.at_step and self._claim():
            if self.fault == "raise":
                raise RuntimeError("injected env failure")
            if self.fault == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.fault == "hang":
                time.sleep(600)
        return self.env.step(action)
