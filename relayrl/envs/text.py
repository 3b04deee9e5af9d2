"""Text observation and action spaces (`gymnasium.spaces.Text`) through a user-provided codec.

Networks need numbers: the codec maps a text observation to a vector (any encoder: a bag of
characters, a hashed n-gram count, a sentence embedding model) and a discrete choice to the text
action sent back (a vocabulary of tool calls, canned replies, prompts). The policy server applies
it at its boundary, so an LLM-agent style program sends and receives plain strings.

    class MyCodec(TextCodec):
        observation_space = gym.spaces.Box(-1, 1, (384,), np.float32)   # what encode_observation returns
        action_space = gym.spaces.Discrete(3)                           # what decode_action receives
        def encode_observation(self, text): return embed(text)
        def decode_action(self, action): return ["search", "answer", "ask"][int(action)]
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


class TextCodec:
    """Base class of user codecs. Set `observation_space` (the encoded space) and implement
    `encode_observation` when observations are Text; set `action_space` (the space the policy acts
    in, e.g. Discrete(len(vocabulary))) and implement `decode_action` when actions are Text."""

    observation_space: gym.Space | None = None
    action_space: gym.Space | None = None

    def encode_observation(self, text: str) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} has no encode_observation for Text observations")

    def decode_action(self, action: np.ndarray | int) -> str:
        raise NotImplementedError(f"{type(self).__name__} has no decode_action for Text actions")


def encoded_spaces(
    obs_space: gym.Space, action_space: gym.Space, codec: TextCodec | None
) -> tuple[gym.Space, gym.Space]:
    """The spaces the network sees: a Text space is replaced by the codec's encoded space.
    Raises ValueError when a Text space has no codec (or the codec does not declare its space)."""
    out = []
    for role, space, encoded in (
        ("observation", obs_space, getattr(codec, "observation_space", None)),
        ("action", action_space, getattr(codec, "action_space", None)),
    ):
        if not isinstance(space, gym.spaces.Text):
            out.append(space)
            continue
        if codec is None:
            raise ValueError(
                f"the {role} space {space} is Text: pass a codec (--codec module:Class, a TextCodec "
                f"subclass) that maps it to numbers"
            )
        if not isinstance(encoded, gym.Space):
            raise ValueError(
                f"codec {type(codec).__name__} must set {role}_space (a gymnasium space) for the Text {role}s"
            )
        out.append(encoded)
    return out[0], out[1]
