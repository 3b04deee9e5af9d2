"""The check every algorithm makes of its env before any worker starts: its spaces suit the algorithm."""

from __future__ import annotations

import gymnasium as gym

from relayrl.core.config import Config
from relayrl.envs.make import env_name, env_spaces
from relayrl.models import networks


def checked_spaces(
    config: Config,
    name: str,
    action_kinds: tuple[str, ...],
    action_space_hint: str,
    continuous_head: str | None,
    supports_obs_norm: bool,
) -> tuple[gym.Space, gym.Space, networks.ModelSpec]:
    """(obs_space, action_space, ModelSpec) of one env made from `config`; ValueError naming the env and
    what algorithm `name` allows (its action kinds; observation normalisation only where supported)."""
    obs_space, action_space = env_spaces(config.env, config.env_config, config.env_wrappers, config.atari)
    try:
        kind, _ = networks.action_layout(action_space)
    except ValueError:
        kind = None
    if kind not in action_kinds:
        allowed = {
            "categorical": "Discrete",
            "multi_categorical": "MultiDiscrete",
            "gaussian": "Box (1-D float)",
        }
        raise ValueError(
            f"{name} does not support the action space {action_space} of env "
            f"{env_name(config.env)!r}; allowed: {', '.join(allowed[k] for k in action_kinds)}"
            f"{action_space_hint}"
        )
    try:
        spec = networks.spec_from_spaces(obs_space, action_space, config.model, head=continuous_head)
    except ValueError as exc:
        if str(exc).startswith("model."):  # the user's model, not the env: its line names the field already
            raise
        raise ValueError(f"{name} cannot use env {env_name(config.env)!r}: {exc}") from None
    if spec.obs_norm and not supports_obs_norm:
        raise ValueError(
            f"model.normalize_obs = True is not supported by {name}; allowed with: ppo, a2c, "
            f"reinforce (set it to False)"
        )
    return obs_space, action_space, spec
