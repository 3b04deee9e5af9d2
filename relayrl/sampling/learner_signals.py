"""What the learner sees of the env's rewards and episodes, where it differs from what the worker reports.

Episodic life and reward clipping (the config's atari.episodic_life, atari.clip_rewards) are training signals,
not env wrappers: the env plays on after a lost life and the worker reports the real game score per real
episode, while the learner's rows treat a lost life as `terminated` (no bootstrap past it, GAE and n-step
returns cut there) and carry sign(reward). scale_rewards divides the rewards by the running std of the
discounted return."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from relayrl.models.obs_stats import OBS_CLIP, RunningMoments, moments


class LearnerSignals:
    """Per worker: the lives each env had after the last step, and the two options."""

    def __init__(self, episodic_life: bool, clip_rewards: bool, num_envs: int):
        self.episodic_life, self.clip_rewards = episodic_life, clip_rewards
        self.lives = np.zeros(num_envs, np.int64)

    @property
    def tracks_lives(self) -> bool:
        return self.episodic_life

    def start(self, info: dict) -> None:
        """The lives after a reset of every env (its info)."""
        if self.episodic_life:
            self.lives = self._lives(info, "reset")

    @staticmethod
    def _lives(info: dict, where: str) -> np.ndarray:
        if "lives" not in info:
            raise ValueError(
                f"atari.episodic_life = True needs info['lives'] from the env's {where}; this env gives "
                f"none: allowed: False"
            )
        return np.asarray(info["lives"], np.int64)

    def step_lives(self, info: dict) -> np.ndarray:
        return self._lives(info, "step")

    def apply(
        self,
        rewards: np.ndarray,
        terminated: np.ndarray,
        dones: np.ndarray,
        valid: np.ndarray,
        lives: Sequence[np.ndarray],
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rewards, terminated, dones) [T, N] as the learner sees them. `lives` are the per-step lives
        (empty without episodic life); `valid` marks the steps that were not NEXT_STEP reset steps."""
        if self.episodic_life:
            now = np.asarray(lives, np.int64)  # [T, N]
            before = np.concatenate([self.lives[None], now[:-1]])
            lost = (now < before) & valid & ~dones  # a reset step raises the lives: not a loss
            self.lives = now[-1].copy()
            terminated, dones = terminated | lost, dones | lost
        if self.clip_rewards:
            rewards = np.sign(rewards).astype(np.float32)
        return rewards, terminated, dones


def scaled_rewards(
    rewards: np.ndarray,
    dones: np.ndarray,
    valid: np.ndarray,
    carry: np.ndarray,
    return_moments: RunningMoments,
    gamma: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(rewards / std(discounted return) clipped to +-10, the running discounted returns to carry on):
    gymnasium's NormalizeReward (as CleanRL and SB3's VecNormalize use for MuJoCo), with the statistics of
    this worker's envs (`return_moments`, updated here) merged per fragment (the config's scale_rewards)."""
    g = carry
    returns = np.empty_like(rewards, dtype=np.float64)
    for t in range(len(rewards)):
        g = g * gamma + rewards[t]
        returns[t] = g
        g = np.where(dones[t], 0.0, g)  # the next step starts a new episode (or is a reset step)
    return_moments.merge(*moments(returns[valid]))
    scale = float(np.sqrt(return_moments.m2 / max(return_moments.count, 1) + 1e-8))
    return np.clip(rewards / scale, -OBS_CLIP, OBS_CLIP).astype(np.float32), g
