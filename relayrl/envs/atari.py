"""ALE ids ('ALE/Breakout-v5', 'ale_py:ALE/Pong-v5'): the DeepMind preprocessing (Mnih et al. 2015), each part
an option of the config's `atari` dict (relayrl/core/knobs.py DEFAULT_ATARI).

One env is: ALE v5 (sticky actions with `repeat_action_probability`, `full_action_space`, truncated after
`max_episode_frames` frames) -> gymnasium's AtariPreprocessing (up to `noop_max` no-ops after each reset,
`frame_skip` with the last two frames max-pooled, `screen_size` x `screen_size`, `grayscale`) ->
FrameStackObservation(`frame_stack`) -> channel-last: (84, 84, 4) uint8 (RGB: (84, 84, 3 * k), frame-major).
Episodic life and reward clipping are not here: they are training signals the worker derives
(relayrl/sampling/rollout.py), so every return the env reports is the real game score.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

# env_config keys the atari options set themselves: naming them in env_config too would be ambiguous
ATARI_OWNED_KWARGS = {
    "frameskip": "frame_skip",
    "repeat_action_probability": "repeat_action_probability",
    "full_action_space": "full_action_space",
    "max_num_frames_per_episode": "max_episode_frames",
}


def is_ale_id(env: Any) -> bool:
    """True for an id of ale_py's registry: 'ALE/Name-v5', also written 'ale_py:ALE/Name-v5'."""
    return isinstance(env, str) and env.rpartition(":")[2].startswith("ALE/")


# What an ALE id gets when no options are given (the envs layer is below core, so it cannot read the config's
# DEFAULT_ATARI): the same values, which tests/unit/envs/test_atari.py holds equal to DEFAULT_ATARI.
ALE_STANDARD = {
    "preprocess": True,
    "noop_max": 30,
    "frame_skip": 4,
    "screen_size": 84,
    "grayscale": True,
    "frame_stack": 4,
    "repeat_action_probability": 0.25,
    "full_action_space": False,
    "max_episode_frames": 108_000,
    "episodic_life": True,
    "clip_rewards": True,
}


def atari_options(atari: Mapping[str, Any] | None) -> dict[str, Any]:
    """The config's atari dict over ALE_STANDARD (None: the standard options)."""
    return {**ALE_STANDARD, **(atari or {})}


def register_ale(env_id: str) -> None:
    """Register ale_py's ids with gymnasium (gymnasium 1.x no longer does it by itself); MissingExtraError
    naming `env_id` and the 'atari' extra when ale_py is not installed."""
    from relayrl.extras import require

    ale_py = require("ale_py", f"env {env_id!r}")
    gym.register_envs(ale_py)


def ale_kwargs(env_config: Mapping[str, Any], options: Mapping[str, Any]) -> dict[str, Any]:
    """gym.make's keyword arguments for the bare ALE env: env_config (mode, difficulty, ...) and the options'
    sticky actions, action set, frame limit and frame skip (1 when AtariPreprocessing skips frames)."""
    for key, option in ATARI_OWNED_KWARGS.items():
        if key in env_config:
            raise ValueError(
                f"env_config[{key!r}] is set by the atari options for ALE ids: use atari.{option} instead"
            )
    return {
        **env_config,
        "frameskip": 1 if options["preprocess"] else options["frame_skip"],
        "repeat_action_probability": float(options["repeat_action_probability"]),
        "full_action_space": bool(options["full_action_space"]),
        "max_num_frames_per_episode": int(options["max_episode_frames"]),
    }


class ChannelLast(gym.ObservationWrapper):
    """FrameStackObservation's (k, H, W) -> (H, W, k); RGB (k, H, W, 3) -> (H, W, 3k): the stack on the last
    axis, where TF's CPU Conv2D (NHWC only) wants the channels."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        k, height, width, *rgb = env.observation_space.shape
        shape = (height, width, k * (rgb[0] if rgb else 1))
        self.observation_space = gym.spaces.Box(0, 255, shape, np.uint8)

    def observation(self, observation: np.ndarray) -> np.ndarray:
        moved = np.moveaxis(np.asarray(observation), 0, 2)  # (H, W, k) or (H, W, k, 3)
        return moved.reshape(self.observation_space.shape)


def preprocessed(env: gym.Env, options: Mapping[str, Any]) -> gym.Env:
    """`env` (a bare ALE env made with ale_kwargs) inside the preprocessing chain the options ask for."""
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    if not options["preprocess"]:
        return env
    env = AtariPreprocessing(
        env,
        noop_max=int(options["noop_max"]),
        frame_skip=int(options["frame_skip"]),
        screen_size=int(options["screen_size"]),
        terminal_on_life_loss=False,  # a lost life ends the episode for the learner only (rollout.py)
        grayscale_obs=bool(options["grayscale"]),
        scale_obs=False,  # uint8 all the way: the network scales inside its graph
    )
    return ChannelLast(FrameStackObservation(env, int(options["frame_stack"])))


def frame_stack(env: Any, atari: Mapping[str, Any] | None) -> int:
    """The frames stacked on the last axis of env's observations (k > 1), else 0: what replay needs to store
    each frame once."""
    if not is_ale_id(env):
        return 0
    options = atari_options(atari)
    stack = int(options["frame_stack"]) if options["preprocess"] else 0
    return stack if stack > 1 and options["grayscale"] else 0
