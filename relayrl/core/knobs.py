"""Config fields: how one is declared (`knob`: default, builder group, check, doc), the shared model options
and the one-line refusal of a key no config has.

Config (relayrl/core/config.py) and every algorithm's config declare their fields with `knob`.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Iterable
from typing import Any

from relayrl.core import checks as C

# Fields never shown or written: check messages say ***; config.json, run records, --print-config drop them.
SECRET_FIELDS = ("redis_password",)
GROUPS = (
    "environment",
    "rollouts",
    "resources",
    "training",
    "evaluation",
    "debugging",
    "reporting",
    "fault_tolerance",
)


def knob(default: Any, group: str, check: C.Check, doc: str) -> Any:
    """Declare a config field: its builder group, its value check and its documentation."""
    if group not in GROUPS:  # a typo in a knob declaration: fail at import, also under python -O
        raise ValueError(f"config group {group!r} is not one of {GROUPS}")
    meta = {"group": group, "check": check, "doc": doc}
    if isinstance(default, (dict, list)):
        return dataclasses.field(default_factory=lambda: json.loads(json.dumps(default)), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


DEFAULT_MODEL = {
    "fcnet_hiddens": [64, 64],
    "fcnet_activation": "tanh",
    # images: [[filters, kernel, stride], ...] then fcnet_hiddens; "auto" = the Nature CNN (conv 32 8x8/4,
    # 64 4x4/2, 64 3x3/1, dense 512, relu) for images >= 36x36, else [[16, 8, 4], [32, 4, 2]] + fcnet_hiddens
    "conv_filters": "auto",
    "vf_share_layers": False,
    # running mean/std observation normalisation inside the network (its statistics travel with the weights)
    "normalize_obs": False,
    # initial log std of PPO's state-independent Gaussian (SB3's zoo uses -2 on MuJoCo: less initial noise)
    "log_std_init": 0.0,
    # the built-in networks' initial weights: "orthogonal" (per-layer gains, zero biases: CleanRL, SB3's
    # default) or "uniform_fan_in" (kernels and biases U(+-1/sqrt(fan_in)): PyTorch's nn.Linear default,
    # what the zoo's MuJoCo PPO entries train with, `ortho_init=False`). "auto": uniform_fan_in for TD3's
    # deterministic actor (as SB3, CleanRL and the TD3 paper's code start it; above the orthogonal start on
    # all three W11-Hopper seeds, docs/benchmarks.md), orthogonal for every other network. SAC/TD3 critics
    # are always uniform_fan_in (actor_critic_models.TwinQ), as in SB3 and CleanRL
    "weight_init": "auto",
    # the arithmetic of the built-in torso (conv and hidden dense layers): "bfloat16" computes it in bfloat16
    # on float32 weights, with float32 heads and losses (Keras' mixed_bfloat16); ~1.5x cheaper Nature CNN
    # updates on the CI machine's AVX512-BF16 CPU (docs/atari.md). Exports compute in float32.
    "compute_dtype": "float32",
    # your own tf.keras.Model (docs/custom_model.md): a class, or 'package.module:Class' in YAML / --set
    "custom_model": None,
    "custom_model_kwargs": {},
    # SAC / TD3: the class of one critic(obs, actions) -> Q; relayrl builds the twin critics and targets
    "custom_critic": None,
    "custom_critic_kwargs": {},
}
CUSTOM_CLASS_KEYS = ("custom_model", "custom_critic")
# Classes given as objects, by their 'module:QualName': the model dict keeps the path (plain JSON, so
# config.json, Config.copy() and Ray Tune's search spaces carry it) and the class is found here again, also
# for a class defined in a script's __main__, which no import can reach.
_CLASSES: dict[str, type] = {}
_CLASS_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def class_path(cls: type) -> str:
    """'module:QualName' of a class given as an object, remembered for `known_class`."""
    path = f"{cls.__module__}:{cls.__qualname__}"
    _CLASSES[path] = cls
    return path


def known_class(path: str) -> type | None:
    """The class that `class_path` remembered under `path` (in this process), or None."""
    return _CLASSES.get(path)


def _class_ref(v: Any) -> str | None:
    if v is None or isinstance(v, type) or (isinstance(v, str) and (_CLASS_PATH.match(v) or v in _CLASSES)):
        return None
    return "allowed: None, a tf.keras.Model subclass, or its import path 'package.module:Class'"


def _json_kwargs(v: Any) -> str | None:
    try:
        ok = isinstance(v, dict) and all(isinstance(k, str) for k in v) and json.loads(json.dumps(v)) == v
    except (TypeError, ValueError):
        ok = False
    return None if ok else "allowed: a mapping of str keyword: JSON value (numbers, strings, lists, mappings)"


# ALE ids ('ALE/Breakout-v5'): the DeepMind preprocessing (Mnih et al. 2015; Machado et al. 2018 for sticky
# actions), each part an option. episodic_life and clip_rewards change only what the learner sees: reported
# returns are always the real game score. Ignored for envs that are not ALE ids.
DEFAULT_ATARI = {
    "preprocess": True,  # False: the bare ALE env (frameskip, obs type as ALE v5 makes them)
    "noop_max": 30,  # up to N no-op actions after each reset
    "frame_skip": 4,  # agent steps repeat the action N frames; the last two frames are max-pooled
    "screen_size": 84,  # observations resized to N x N
    "grayscale": True,
    "frame_stack": 4,  # the last N frames, stacked on the last axis: (84, 84, 4) uint8
    "repeat_action_probability": 0.25,  # sticky actions, ALE v5's default
    "full_action_space": False,
    "max_episode_frames": 108_000,  # 30 minutes of play at 60 frames/s (ALE v5's default)
    "episodic_life": True,  # a lost life ends the episode for the learner (not for the env or the score)
    "clip_rewards": True,  # the learner sees sign(reward)
}


ATARI_CHECKS = {
    "preprocess": C.boolean(),
    "noop_max": C.integer(0, 1000),
    "frame_skip": C.integer(1, 100),
    "screen_size": C.integer(8, 1024),
    "grayscale": C.boolean(),
    "frame_stack": C.integer(1, 64),
    "repeat_action_probability": C.number(0, 1),
    "full_action_space": C.boolean(),
    "max_episode_frames": C.integer(1, 10**9),
    "episodic_life": C.boolean(),
    "clip_rewards": C.boolean(),
}


def merge_atari(value: dict, defaults: dict) -> dict:
    """`defaults` (the config's own atari field default) with the options of `value` (a copy)."""
    return {**defaults, **value}


MODEL_CHECKS = {
    "fcnet_hiddens": C.int_list(min_len=0),
    "fcnet_activation": C.one_of("tanh", "relu", "elu", "swish"),
    "conv_filters": C.auto_or(C.conv_filters()),
    "vf_share_layers": C.boolean(),
    "normalize_obs": C.boolean(),
    "log_std_init": C.number(-20, 5),
    "weight_init": C.one_of("auto", "orthogonal", "uniform_fan_in"),
    "compute_dtype": C.one_of("float32", "bfloat16"),
    "custom_model": _class_ref,
    "custom_model_kwargs": _json_kwargs,
    "custom_critic": _class_ref,
    "custom_critic_kwargs": _json_kwargs,
}


def merge_model(value: dict, defaults: dict = DEFAULT_MODEL) -> dict:
    """`defaults` (a config's own default model: SAC/TD3's relu 256x256, Q-learning's table) with the
    options of `value` (a copy: the defaults are never mutated)."""
    merged = json.loads(json.dumps(defaults))
    merged.update(value)
    for key in CUSTOM_CLASS_KEYS:
        if isinstance(merged[key], type):
            merged[key] = class_path(merged[key])
    return merged


def unknown_key(where: str, key: str, allowed: Iterable[str]) -> ValueError:
    """The refusal of `key` by `where` (a config class or builder): the closest allowed key, then all."""
    names = list(allowed)
    close = difflib.get_close_matches(key, names, n=1)
    did_you_mean = f" (did you mean {close[0]!r}?)" if close else ""
    return ValueError(f"{where}: unknown key {key!r}{did_you_mean}; allowed: {', '.join(names)}")
