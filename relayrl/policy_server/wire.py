"""The policy server's boundary: JSON values <-> numpy, with every request field validated.

A bad request raises RequestError(status, message); the HTTP layer answers it as a 4xx with the
message, so a client learns what was wrong and the server carries on. JSON only: nothing a client
sends is ever unpickled or evaluated.
"""
from __future__ import annotations

import math
import numbers
from typing import Any

import gymnasium as gym
import numpy as np

from relayrl.networks import ModelSpec, preprocess_obs
from relayrl.text_spaces import TextCodec

MAX_ID_LEN = 128


class RequestError(Exception):
    """A request the server refuses: HTTP status + a sentence saying what is wrong and what is allowed."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def field(body: dict, name: str, required: bool = True, default: Any = None) -> Any:
    if name not in body:
        if required:
            raise RequestError(400, f"missing field {name!r}")
        return default
    return body[name]


def episode_id(body: dict) -> str:
    value = field(body, "episode_id")
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LEN:
        raise RequestError(400, f"episode_id must be a non-empty string of at most {MAX_ID_LEN} characters, got {_short(value)}")
    return value


def reward(value: Any, name: str = "reward") -> float:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or not math.isfinite(value):
        raise RequestError(400, f"{name} must be a finite number, got {_short(value)}")
    return float(value)


def flag(body: dict, name: str) -> bool:
    value = field(body, name, required=False, default=False)
    if not isinstance(value, bool):
        raise RequestError(400, f"{name} must be true or false, got {_short(value)}")
    return value


class SpaceCodec:
    """Observations from JSON to the network's input row; actions from the policy to JSON."""

    def __init__(self, obs_space: gym.Space, action_space: gym.Space, spec: ModelSpec, text: TextCodec | None = None):
        self.obs_space, self.action_space, self.spec, self.text = obs_space, action_space, spec, text
        # the space the network reads (after a Text codec, if any)
        self.net_obs_space = text.observation_space if isinstance(obs_space, gym.spaces.Text) else obs_space

    def observation(self, value: Any) -> np.ndarray:
        """A JSON observation -> the preprocessed network input row (float32 vector, one-hot, or uint8 image)."""
        if isinstance(self.obs_space, gym.spaces.Text):
            if not isinstance(value, str) or not self.obs_space.contains(value):
                raise RequestError(400, f"observation must be a string in {self.obs_space} "
                                        f"(length {self.obs_space.min_length}..{self.obs_space.max_length}), got {_short(value)}")
            value = np.asarray(self.text.encode_observation(value))
            return self._numeric(value, self.net_obs_space, "encoded observation", status=500)
        return self._numeric(value, self.obs_space, "observation", status=400)

    def _numeric(self, value: Any, space: gym.Space, what: str, status: int) -> np.ndarray:
        if isinstance(space, gym.spaces.Discrete):
            if not isinstance(value, numbers.Integral) or isinstance(value, bool) or not space.contains(int(value)):
                raise RequestError(status, f"{what} must be an integer in [{space.start}, {space.start + space.n - 1}] "
                                           f"for {space}, got {_short(value)}")
            return preprocess_obs(self.spec, np.asarray([int(value) - int(space.start)]))[0]
        try:
            array = np.asarray(value, dtype=np.float64)
        except (TypeError, ValueError):
            raise RequestError(status, f"{what} must be a number or nested list of numbers of shape {space.shape}, "
                                       f"got {_short(value)}") from None
        if array.shape != space.shape:
            raise RequestError(status, f"{what} has shape {array.shape}, expected {space.shape} for {space}")
        if not np.isfinite(array).all() or not np.isfinite(array.astype(space.dtype, copy=False)).all():
            raise RequestError(status, f"{what} contains NaN or Inf (or a value too large for {space.dtype})")
        if np.issubdtype(space.dtype, np.integer):
            if not ((array >= space.low).all() and (array <= space.high).all() and (array == np.round(array)).all()):
                raise RequestError(status, f"{what} must hold integers in [{space.low.min()}, {space.high.max()}] for {space}")
        return preprocess_obs(self.spec, array.astype(space.dtype)[None])[0]

    def action(self, action: np.ndarray) -> Any:
        """A policy action (network space, already clipped for Box) -> its JSON value."""
        if isinstance(self.action_space, gym.spaces.Text):
            return self.text.decode_action(action)
        if isinstance(self.action_space, gym.spaces.Discrete):
            return int(action) + int(self.action_space.start)
        if isinstance(self.action_space, gym.spaces.MultiDiscrete):
            return [int(a) for a in np.asarray(action).reshape(-1)]
        return np.asarray(action, np.float64).reshape(self.action_space.shape).tolist()


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
