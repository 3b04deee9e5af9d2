"""The policy server's boundary: JSON values <-> numpy, with every request field validated.

A bad request raises RequestError(status, message); the HTTP layer answers it as a 4xx with the
message, so a client learns what was wrong and the server carries on. JSON only: nothing a client
sends is ever unpickled or evaluated.

Numbers are checked against what the model reads before numpy sees them: observations and rewards
become float32, so anything beyond float32's range is refused here, by field name, rather than turning
into Inf in the update. JSON's non-standard `NaN` / `Infinity` tokens, floats that overflow (`1e400`)
and integers too long for any float are parsed into `Unrepresentable` markers, which every field
validator refuses (a 5,000-digit integer would otherwise hit Python's int-to-str digit limit).
"""

from __future__ import annotations

import json
import math
import reprlib
from typing import Any

import gymnasium as gym
import numpy as np

from relayrl.envs.text import TextCodec
from relayrl.models.networks import ModelSpec, preprocess_obs

MAX_ID_LEN = 128
F32_MAX = float(np.finfo(np.float32).max)  # observations and rewards are float32 in the model
MAX_SEQ = 2**53  # a request number JSON carries exactly in every client's floats
MAX_INT_DIGITS = 40  # float32's max has 39 digits: longer integers are out of range whatever they are


class RequestError(Exception):
    """A request the server refuses: HTTP status + a sentence saying what is wrong and what is allowed."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


class Unrepresentable:
    """A JSON number no float can hold (NaN, Infinity, 1e400, an integer of 40+ digits), kept as its text."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text if len(self.text) <= 24 else f"{self.text[:12]}...({len(self.text)} characters)"


def _parse_int(text: str) -> int | Unrepresentable:
    return int(text) if len(text) <= MAX_INT_DIGITS else Unrepresentable(text)


def _parse_float(text: str) -> float | Unrepresentable:
    value = float(text)
    return value if math.isfinite(value) else Unrepresentable(text)


def parse_body(raw: bytes) -> dict:
    """A request body -> its JSON object (numbers out of every float's range become Unrepresentable)."""
    try:
        body = json.loads(raw, parse_int=_parse_int, parse_float=_parse_float, parse_constant=Unrepresentable)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        raise RequestError(400, f"request body is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(body, dict):
        raise RequestError(400, f"request body must be a JSON object, got {type(body).__name__}")
    return body


def field(body: dict, name: str, required: bool = True, default: Any = None) -> Any:
    if name not in body:
        if required:
            raise RequestError(400, f"missing field {name!r}")
        return default
    return body[name]


def episode_id(body: dict) -> str:
    value = field(body, "episode_id")
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LEN:
        raise RequestError(
            400,
            f"episode_id must be a non-empty string of at most {MAX_ID_LEN} characters, got {_short(value)}",
        )
    return value


def sequence(body: dict) -> int | None:
    """The optional `seq`: the client's number for this request within its episode (retries repeat it)."""
    value = body.get("seq")
    if value is None:
        return None
    if type(value) is not int or not 0 <= value <= MAX_SEQ:
        raise RequestError(400, f"seq must be an integer from 0 to {MAX_SEQ}, got {_short(value)}")
    return value


def is_number(value: Any) -> bool:
    """A JSON number (int or float; not bool, not an Unrepresentable)."""
    return type(value) is int or type(value) is float


def reward(value: Any, name: str = "reward") -> float:
    if not is_number(value) or abs(value) > F32_MAX:
        raise RequestError(
            400, f"{name} must be a number within float32's range (|x| <= {F32_MAX:.4g}), got {_short(value)}"
        )
    return float(value)


def _not_a_number(where: str, value: Any) -> str:
    if isinstance(value, Unrepresentable):
        return f"{where} = {value!r} is not a finite number within float32's range (|x| <= {F32_MAX:.4g})"
    return f"{where} must be a number, got {_short(value)}"


def flag(body: dict, name: str) -> bool:
    value = field(body, name, required=False, default=False)
    if not isinstance(value, bool):
        raise RequestError(400, f"{name} must be true or false, got {_short(value)}")
    return value


class SpaceCodec:
    """Observations from JSON to the network's input row; actions from the policy to JSON."""

    def __init__(
        self, obs_space: gym.Space, action_space: gym.Space, spec: ModelSpec, text: TextCodec | None = None
    ):
        self.obs_space, self.action_space, self.spec, self.text = obs_space, action_space, spec, text
        # the space the network reads (after a Text codec, if any)
        self.net_obs_space = text.observation_space if isinstance(obs_space, gym.spaces.Text) else obs_space

    def observation(self, value: Any) -> np.ndarray:
        """A JSON observation -> the preprocessed network input row (float32 vector, one-hot, or uint8
        image)."""
        space = self.obs_space
        if isinstance(space, gym.spaces.Text):
            if not isinstance(value, str) or not space.contains(value):
                raise RequestError(
                    400,
                    f"observation must be a string in {space} (length "
                    f"{space.min_length}..{space.max_length}), got {_short(value)}",
                )
            return self._encoded(np.asarray(self.text.encode_observation(value)))
        if isinstance(space, gym.spaces.Discrete):
            last = int(space.start) + int(space.n) - 1
            if type(value) is not int or not int(space.start) <= value <= last:
                raise RequestError(
                    400,
                    f"observation must be an integer in [{space.start}, {last}] for "
                    f"{space}, got {_short(value)}",
                )
            return preprocess_obs(self.spec, np.asarray([value - int(space.start)]))[0]
        return preprocess_obs(self.spec, box_array(value, space, "observation")[None])[0]

    def _encoded(self, array: np.ndarray) -> np.ndarray:
        """The codec's encoding of a text observation: the server's own code, so a bad one is a 500."""
        space = self.net_obs_space
        if isinstance(space, gym.spaces.Discrete):
            if array.shape != () or not space.contains(int(array)):
                raise RequestError(
                    500, f"the codec encoded an observation as {_short(array)}, outside {space}"
                )
            return preprocess_obs(self.spec, np.asarray([int(array) - int(space.start)]))[0]
        if array.shape != space.shape or not np.isfinite(array.astype(np.float32, copy=False)).all():
            raise RequestError(
                500,
                f"the codec encoded an observation as shape {array.shape} (expected "
                f"{space.shape}) or with values beyond float32",
            )
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


def box_array(value: Any, space: gym.spaces.Box, what: str) -> np.ndarray:
    """A JSON nested list of numbers of exactly space.shape -> an array of space.dtype, every entry checked
    in Python first (bools, strings and out-of-range numbers never reach numpy's lenient conversions)."""
    leaves = _leaves(value, space, what)
    for i, x in enumerate(leaves):
        if not is_number(x):
            raise RequestError(400, _not_a_number(what + _index(i, space.shape), x))
    if np.issubdtype(space.dtype, np.integer):
        low, high = space.low.reshape(-1).tolist(), space.high.reshape(-1).tolist()
        for i, x in enumerate(leaves):
            if not low[i] <= x <= high[i] or (type(x) is float and not x.is_integer()):
                raise RequestError(
                    400,
                    f"{what}{_index(i, space.shape)} must be an integer in "
                    f"[{low[i]}, {high[i]}] for {space}, got {_short(x)}",
                )
        return np.asarray([int(x) for x in leaves], space.dtype).reshape(space.shape)
    for i, x in enumerate(leaves):
        if abs(x) > F32_MAX:
            raise RequestError(
                400,
                f"{what}{_index(i, space.shape)} = {_short(x)} is beyond float32's range "
                f"(|x| <= {F32_MAX:.4g}), which the model reads",
            )
    return np.asarray(leaves, np.float32).reshape(space.shape)  # in range: no entry becomes Inf


def _leaves(value: Any, space: gym.spaces.Box, what: str) -> list:
    """The entries of a nested list of exactly space.shape, row-major; the first misfit is refused by
    position."""
    shape = space.shape
    if shape and type(value) is not list:
        raise RequestError(
            400, f"{what} must be a nested list of numbers of shape {shape} for {space}, got {_short(value)}"
        )
    apparent, probe = [], value
    while type(probe) is list and len(apparent) <= len(shape):  # along the first entries, one level past
        apparent.append(len(probe))
        probe = probe[0] if probe else None
    if tuple(apparent) != shape:
        raise RequestError(400, f"{what} has shape {tuple(apparent)}, expected {shape} for {space}")
    level = [value]
    for depth, n in enumerate(shape):
        deeper: list = []
        for i, item in enumerate(level):
            if type(item) is not list or len(item) != n:
                got = f"{len(item)} entries" if type(item) is list else _short(item)
                raise RequestError(
                    400,
                    f"{what}{_index(i, shape[:depth])} must be a list of {n} entries "
                    f"({what} shape {shape}), got {got}",
                )
            deeper.extend(item)
        level = deeper
    return level


def _index(flat: int, shape: tuple) -> str:
    return "".join(f"[{k}]" for k in np.unravel_index(flat, shape)) if shape else ""


_REPR = reprlib.Repr()  # (keyword arguments only from Python 3.12)
_REPR.maxlevel, _REPR.maxlist, _REPR.maxdict, _REPR.maxstring, _REPR.maxother = 3, 6, 4, 40, 40


def _short(value: Any) -> str:
    """A bounded repr of client data: a megabyte list or a 1,000-deep nesting costs no more than a short
    one."""
    return _REPR.repr(value)
