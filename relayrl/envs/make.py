"""Vector environments from a gymnasium id or a user callable, with per-worker / per-env seeds.

All vector envs use gymnasium's default NEXT_STEP autoreset: the step that ends an episode returns
that episode's final observation, and the following step resets the env (its action is ignored,
reward 0). The sampler marks those reset steps invalid instead of learning from them.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from typing import Any

import gymnasium as gym

EnvSpec = Any  # str id or callable(env_config) -> gym.Env


class SlowCartPole(gym.Wrapper):
    """CartPole whose step blocks for `delay_s` seconds: a stand-in for a slow simulator or a remote API,
    where throughput comes from having many envs in flight, not from cores."""

    def __init__(self, delay_s: float = 0.01, render_mode: str | None = None):
        from gymnasium.envs.classic_control.cartpole import CartPoleEnv

        super().__init__(CartPoleEnv(render_mode=render_mode))
        self.delay_s = delay_s

    def step(self, action):
        time.sleep(self.delay_s)
        return self.env.step(action)


gym.register(
    id="relayrl/SlowCartPole-v1", entry_point=SlowCartPole, max_episode_steps=500, reward_threshold=475.0
)


def check_env_id(env_id: str) -> None:
    """Raise ValueError for an id gymnasium does not know, with the closest registered ids."""
    try:
        gym.spec(env_id)
    except gym.error.Error as exc:
        close = difflib.get_close_matches(env_id, list(gym.registry), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise ValueError(f"unknown environment id {env_id!r} ({exc}){hint}") from None


def make_single_env(env: EnvSpec, env_config: dict) -> gym.Env:
    if isinstance(env, str):
        check_env_id(env)
        try:
            return gym.make(env, **env_config)
        except TypeError as exc:  # gymnasium re-raises the env constructor's TypeError for unknown kwargs
            raise ValueError(
                f"env_config {env_config!r} is not accepted by {env!r}: "
                f"{str(exc).split(' was raised from the environment creator')[0]}"
            ) from None
    made = env(env_config)
    if not isinstance(made, gym.Env):
        raise ValueError(f"env callable {env!r} returned {type(made).__name__}, not a gymnasium.Env")
    return made


def env_spaces(env: EnvSpec, env_config: dict) -> tuple[gym.Space, gym.Space]:
    """(observation_space, action_space) of one env, made and closed."""
    single = make_single_env(env, env_config)
    try:
        return single.observation_space, single.action_space
    finally:
        single.close()


def make_vector_env(
    env: EnvSpec, env_config: dict, num_envs: int, num_threads: int = 0
) -> gym.vector.VectorEnv:
    """num_envs copies stepped together: the env's own `vector_entry_point` when it has one
    (CartPole: ~460k steps/s x16 here, against ~139k for a sync loop), else a SyncVectorEnv;
    with num_threads > 0 a ThreadedVectorEnv, for envs whose step blocks on I/O."""
    if num_threads > 0:
        from relayrl.envs.threaded import ThreadedVectorEnv

        return ThreadedVectorEnv([lambda: make_single_env(env, env_config)] * num_envs, num_threads)
    if isinstance(env, str):
        check_env_id(env)
        return gym.make_vec(env, num_envs=num_envs, **env_config)
    fns: list[Callable[[], gym.Env]] = [lambda: make_single_env(env, env_config)] * num_envs
    return gym.vector.SyncVectorEnv(fns)


def env_seed(base_seed: int | None, worker_index: int) -> int | None:
    """Vector envs seed env i with seed + i, so env i of worker w gets base + 1000 * w + i."""
    return None if base_seed is None else base_seed + 1000 * worker_index


def env_name(env: EnvSpec) -> str:
    return env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
