"""When a training run ends: the stop rules of `relayrl train` (--stop-reward / --stop-timesteps /
--stop-iters / --stop-time) and of train_until(stop=...), checked against each iteration's result.

Rules are a dict {"reward": r, "timesteps": n, "iters": n, "time": seconds}; any one that holds stops the
run. None given: the env's own "solved" threshold (gymnasium's reward_threshold), within a million steps.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

STOP_KEYS = ("reward", "timesteps", "iters", "time")
DEFAULT_TIMESTEPS = 1_000_000
MAX_COUNT = 2**53  # as the CLI's integer flags: past this a count is a typo, not a plan


def _checked(key: str, value: Any) -> float:
    """One rule's value, or ValueError naming the rule and what it allows."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if key == "reward":
        if number and math.isfinite(value):
            return float(value)
        raise ValueError(f"stop rule reward = {value!r} is invalid: allowed: a finite number")
    if key == "time":
        if number and math.isfinite(value) and value > 0:
            return float(value)
        raise ValueError(f"stop rule time = {value!r} is invalid: allowed: a number of seconds > 0")
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_COUNT:
        return value
    raise ValueError(f"stop rule {key} = {value!r} is invalid: allowed: an integer in [1, 2**53]")


def stop_rules(stop: Mapping[str, Any] | None, env: Any = None) -> dict[str, float]:
    """The checked rules of `stop` (None values dropped); none at all: env's default rules."""
    if stop is not None and not isinstance(stop, Mapping):
        raise ValueError(f"stop = {type(stop).__name__} is invalid: allowed: a dict with keys {STOP_KEYS}")
    rules = {}
    for key, value in (stop or {}).items():
        if key not in STOP_KEYS:
            raise ValueError(f"stop rule {key!r} is unknown; allowed: {', '.join(STOP_KEYS)}")
        if value is not None:
            rules[key] = _checked(key, value)
    return rules or default_rules(env)


def default_rules(env: Any) -> dict[str, float]:
    """A million env steps, or fewer when the env (a registered gymnasium id) has a reward_threshold."""
    rules: dict[str, float] = {"timesteps": DEFAULT_TIMESTEPS}
    from relayrl.envs.make import reward_threshold

    threshold = reward_threshold(env)  # None for an id gymnasium does not know: no threshold to aim for
    if threshold is not None:
        rules["reward"] = float(threshold)
    return rules


def should_stop(rules: Mapping[str, float], result: Mapping[str, Any]) -> bool:
    """True once any rule holds for this result (a NaN reward mean, no episode yet, never meets one)."""
    return (
        reward_reached(rules, result)
        or ("timesteps" in rules and result["timesteps_total"] >= rules["timesteps"])
        or ("iters" in rules and result["training_iteration"] >= rules["iters"])
        or ("time" in rules and result["time_total_s"] >= rules["time"])
    )


def reward_reached(rules: Mapping[str, float], result: Mapping[str, Any]) -> bool:
    """The reward rule holds (the run counts as solved)."""
    reward = result["episode_reward_mean"]
    return "reward" in rules and not math.isnan(reward) and reward >= rules["reward"]
