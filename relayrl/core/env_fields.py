"""The environment group of every config (Config's first fields): which env, its arguments, its wrappers
and the ALE preprocessing options."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from relayrl.core import checks as C
from relayrl.core.knobs import ATARI_CHECKS, DEFAULT_ATARI, knob


@dataclass
class EnvironmentFields:
    env: Any = knob(
        None, "environment", C.env_spec(), "gymnasium id, or a callable f(env_config) -> gymnasium.Env"
    )
    env_config: dict = knob(
        {},
        "environment",
        C.mapping(),
        "keyword arguments for the env (gym.make kwargs or the callable's argument)",
    )
    env_wrappers: list = knob(
        [],
        "environment",
        C.wrapper_list(),
        "gymnasium wrappers applied to each env, innermost first: [{'wrapper': NAME, 'kwargs': {...}}], "
        "NAME a gymnasium.wrappers class (e.g. 'ClipReward') or 'package.module:Class' of your own",
    )
    atari: dict = knob(
        DEFAULT_ATARI,
        "environment",
        C.model(ATARI_CHECKS, "atari"),
        "ALE ids only: DeepMind preprocessing options: " + ", ".join(DEFAULT_ATARI),
    )
