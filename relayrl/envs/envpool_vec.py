"""vector_backend = "envpool": ALE ids stepped in envpool's C++ thread pool, with the gymnasium semantics.

What the worker sees is what make_vector_env's SyncVectorEnv of preprocessed ALE envs gives it:
- NEXT_STEP autoreset (envpool's own: the step after a done returns the new episode's first observation,
  reward 0, its action ignored); `terminated` for a game over, `truncated` at the frame limit;
- channel-last uint8 observations (84, 84, k) (RGB: (84, 84, 3k), frame-major), info["lives"];
- the atari options mapped to envpool's keywords, its own Atari defaults overridden where they differ from
  ALE v5's (it clips rewards, ends episodes on a lost life and presses FIRE after resets unless told not to;
  it has no sticky actions by default). Episodic life and reward clipping stay the worker's training signals.
Seeds: envpool fixes them when the pool is made (reset(seed=...) is ignored there), so reset(seed=s) makes a
new pool with env i seeded s + i (env_seed), the gymnasium path's rule; reset() keeps the pool running.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode

from relayrl.envs.atari import atari_options, is_ale_id
from relayrl.extras import require

# envpool's keywords that env_config may set (ALE's mode and difficulty); everything else is the options'
ENV_CONFIG_KEYS = ("mode", "difficulty")


def envpool_kwargs(options: Mapping[str, Any], env_config: Mapping[str, Any]) -> dict[str, Any]:
    """envpool.make's keywords for the atari options (and env_config's mode / difficulty)."""
    unknown = sorted(set(env_config) - set(ENV_CONFIG_KEYS))
    if unknown:
        raise ValueError(
            f"env_config[{unknown[0]!r}] is not an envpool Atari argument with vector_backend = 'envpool'; "
            f"allowed: {', '.join(ENV_CONFIG_KEYS)} (the atari options set the rest)"
        )
    if not options["preprocess"]:
        raise ValueError(
            "atari.preprocess = False is invalid with vector_backend = 'envpool' (envpool always "
            "preprocesses); allowed: True, or vector_backend = 'gymnasium'"
        )
    if options["noop_max"] < 1:  # envpool draws 1..noop_max no-ops; 0 crashes its C++ (undefined draw)
        raise ValueError(
            f"atari.noop_max = {options['noop_max']} is invalid with vector_backend = 'envpool'; allowed: "
            f">= 1, or vector_backend = 'gymnasium'"
        )
    return {
        **env_config,
        "noop_max": int(options["noop_max"]),
        "frame_skip": int(options["frame_skip"]),
        "img_height": int(options["screen_size"]),
        "img_width": int(options["screen_size"]),
        "gray_scale": bool(options["grayscale"]),
        "stack_num": int(options["frame_stack"]),
        "repeat_action_probability": float(options["repeat_action_probability"]),
        "full_action_space": bool(options["full_action_space"]),
        "max_episode_steps": math.ceil(int(options["max_episode_frames"]) / int(options["frame_skip"])),
        "episodic_life": False,  # the worker's training signal (rollout.py), not the env's
        "reward_clip": False,
        "use_fire_reset": False,  # ALE and gymnasium's AtariPreprocessing press nothing after a reset
        "zero_discount_on_life_loss": False,
    }


def make_envpool(
    env: Any,
    env_config: Mapping[str, Any],
    num_envs: int,
    atari: Mapping[str, Any] | None,
    num_threads: int = 0,
    wrappers: Any = (),
) -> EnvpoolVectorEnv:
    """The envpool vector env of an ALE id; ValueError naming the field for what envpool cannot do."""
    if not is_ale_id(env):
        raise ValueError(
            f"vector_backend = 'envpool' is for ALE ids ('ALE/Breakout-v5'); env {env!r} is not one: "
            f"allowed: 'gymnasium'"
        )
    if wrappers:
        raise ValueError(
            "env_wrappers are not applied by vector_backend = 'envpool' (it steps its own C++ envs); "
            "allowed: [] with envpool, or vector_backend = 'gymnasium'"
        )
    envpool = require("envpool", "vector_backend = 'envpool'")
    task = env.rpartition(":")[2].removeprefix("ALE/")
    if task not in envpool.list_all_envs():
        raise ValueError(f"env {env!r}: envpool has no {task!r} (vector_backend = 'envpool')")
    kwargs = envpool_kwargs(atari_options(atari), env_config)
    threads = num_threads or min(num_envs, len(os.sched_getaffinity(0)))
    return EnvpoolVectorEnv(envpool, task, num_envs, threads, kwargs)


class EnvpoolVectorEnv(gym.vector.VectorEnv):
    """A gymnasium VectorEnv over one envpool pool (see the module doc for the semantics)."""

    metadata = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(self, envpool: Any, task: str, num_envs: int, num_threads: int, kwargs: dict[str, Any]):
        self._envpool, self._task, self._kwargs = envpool, task, kwargs
        self.num_envs, self._threads = num_envs, num_threads
        self._pool = self._make_pool(None)
        stack, height, width = self._pool.single_observation_space.shape
        self.single_observation_space = gym.spaces.Box(0, 255, (height, width, stack), np.uint8)
        self.single_action_space = self._pool.single_action_space
        self.observation_space = gym.vector.utils.batch_space(self.single_observation_space, num_envs)
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, num_envs)

    def _make_pool(self, seeds: list[int] | None) -> Any:
        if seeds is None:  # a fresh random stream, as gymnasium's reset() without a seed
            base = int(np.random.SeedSequence().generate_state(1)[0] >> 1)
            seeds = [base + i for i in range(self.num_envs)]
        return self._envpool.make(
            self._task,
            env_type="gymnasium",
            num_envs=self.num_envs,
            num_threads=self._threads,
            env_seed=seeds,
            **self._kwargs,
        )

    @staticmethod
    def _channel_last(obs: np.ndarray) -> np.ndarray:
        return np.ascontiguousarray(obs.transpose(0, 2, 3, 1))

    @staticmethod
    def _info(info: dict) -> dict:
        return {k: info[k] for k in ("lives", "elapsed_step", "env_id") if k in info}

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        if options:
            raise ValueError(f"envpool reset: options {sorted(options)} are not supported")
        seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, int) else seed
        if seeds is not None:  # envpool takes seeds when a pool is made only
            if len(seeds) != self.num_envs or not all(isinstance(s, int) for s in seeds):
                raise ValueError(f"envpool reset: seed {seed!r}; allowed: an int or {self.num_envs} ints")
            self._pool.close()
            self._pool = self._make_pool([int(s) for s in seeds])
        obs, info = self._pool.reset()
        return self._channel_last(obs), self._info(info)

    def step(self, actions: Any):
        obs, reward, terminated, truncated, info = self._pool.step(np.asarray(actions))
        return (
            self._channel_last(obs),
            np.asarray(reward, np.float64),
            np.asarray(terminated, bool),
            np.asarray(truncated, bool),
            self._info(info),
        )

    def close_extras(self, **kwargs: Any) -> None:
        self._pool.close()
