"""Vector environments from a gymnasium id or a user callable, with per-worker / per-env seeds.

All vector envs use gymnasium's default NEXT_STEP autoreset: the step that ends an episode returns
that episode's final observation, and the following step resets the env (its action is ignored,
reward 0). The sampler marks those reset steps invalid instead of learning from them.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym

from relayrl.envs.atari import ale_kwargs, atari_options, is_ale_id, preprocessed, register_ale
from relayrl.envs.user_code import import_user_module
from relayrl.envs.wrappers import WrapperList, wrap
from relayrl.extras import MissingExtraError, extra_for, install_hint

# a str id ('CartPole-v1', or 'module:EnvId': module imported first) or a callable(env_config) -> gym.Env
EnvSpec = Any
AtariOptions = Mapping[str, Any] | None  # the config's `atari` dict (ALE ids only)


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


def registry_id(env_id: str) -> str:
    """The id to look up in gymnasium's registry: 'module:EnvId' (gymnasium's convention: importing module
    registers EnvId) -> 'EnvId' once module is imported. Trusted input only (your code, config files and
    command lines): a checkpoint's or a SavedModel's env id never reaches here with a module in it."""
    module, sep, name = env_id.partition(":")
    if sep:
        import_user_module(module, f"env {env_id!r}")
    return name if sep else env_id


def check_env_id(env_id: str) -> None:
    """Raise ValueError for an id gymnasium does not know, with the closest registered ids. 'module:EnvId'
    imports module first (see registry_id)."""
    name = registry_id(env_id)
    if is_ale_id(name) and name not in gym.registry:  # gymnasium 1.x registers ALE ids only via ale_py
        register_ale(env_id)
    try:
        gym.spec(name)
    except gym.error.Error as exc:
        close = difflib.get_close_matches(name, list(gym.registry), n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        imported = f" (module {env_id.partition(':')[0]!r} did not register it)" if name != env_id else ""
        raise ValueError(f"unknown environment id {name!r}{imported} ({exc}){hint}") from None


def reward_threshold(env: EnvSpec) -> float | None:
    """The env's reward_threshold when it is an id gymnasium has registered ('module:EnvId' once its module
    is imported), else None. Imports nothing, so it is safe on an id read from a file."""
    if not isinstance(env, str):
        return None
    try:
        return gym.spec(env.rpartition(":")[2]).reward_threshold
    except gym.error.Error:
        return None


def make_single_env(
    env: EnvSpec, env_config: dict, wrappers: WrapperList = (), atari: AtariOptions = None
) -> gym.Env:
    """One env, inside `wrappers` (the config's env_wrappers, first innermost); an ALE id first inside the
    preprocessing its `atari` options ask for (envs/atari.py; None: the standard DeepMind options)."""
    if not is_ale_id(env):
        return wrap(_make_bare_env(env, env_config), wrappers)
    options = atari_options(atari)
    made = _make_bare_env(env, ale_kwargs(env_config, options))
    try:
        return wrap(preprocessed(made, options), wrappers)
    except gym.error.DependencyNotInstalled as exc:  # AtariPreprocessing needs opencv (the atari extra)
        made.close()
        raise MissingExtraError(f"env {env!r} {install_hint('atari')} ({exc})") from None


def _make_bare_env(env: EnvSpec, env_config: dict) -> gym.Env:
    if isinstance(env, str):
        check_env_id(env)
        try:
            return gym.make(env, **env_config)
        except (gym.error.DependencyNotInstalled, ImportError) as exc:  # e.g. Box2D, mujoco: optional extras
            raise MissingExtraError(f"env {env!r} {_missing_extra(env, exc)}") from None
        except TypeError as exc:  # gymnasium re-raises the env constructor's TypeError for unknown kwargs
            raise ValueError(
                f"env_config {env_config!r} is not accepted by {env!r}: "
                f"{str(exc).split(' was raised from the environment creator')[0]}"
            ) from None
    made = env(env_config)
    if not isinstance(made, gym.Env):
        raise ValueError(f"env callable {env!r} returned {type(made).__name__}, not a gymnasium.Env")
    return made


def env_spaces(
    env: EnvSpec, env_config: dict, wrappers: WrapperList = (), atari: AtariOptions = None
) -> tuple[gym.Space, gym.Space]:
    """(observation_space, action_space) of one env with its wrappers (and ALE preprocessing), made and
    closed."""
    single = make_single_env(env, env_config, wrappers, atari)
    try:
        return single.observation_space, single.action_space
    finally:
        single.close()


def make_vector_env(
    env: EnvSpec,
    env_config: dict,
    num_envs: int,
    num_threads: int = 0,
    wrappers: WrapperList = (),
    atari: AtariOptions = None,
    backend: str = "gymnasium",
) -> gym.vector.VectorEnv:
    """num_envs copies stepped together: the env's own `vector_entry_point` when it has one and there are no
    wrappers (CartPole: ~460k steps/s x16 here, against ~139k for a sync loop), else a SyncVectorEnv of
    wrapped envs; with num_threads > 0 a ThreadedVectorEnv, for envs whose step blocks on I/O. ALE ids are
    preprocessed (atari options); backend "envpool" steps them in envpool's C++ pool (envs/envpool_vec.py)."""
    if backend == "envpool":
        from relayrl.envs.envpool_vec import make_envpool

        return make_envpool(env, env_config, num_envs, atari, num_threads, wrappers)
    fns: list[Callable[[], gym.Env]] = [lambda: make_single_env(env, env_config, wrappers, atari)] * num_envs
    if num_threads > 0:
        from relayrl.envs.threaded import ThreadedVectorEnv

        return ThreadedVectorEnv(fns, num_threads)
    if isinstance(env, str) and not wrappers and not is_ale_id(env):
        check_env_id(env)
        return gym.make_vec(env, num_envs=num_envs, **env_config)
    return gym.vector.SyncVectorEnv(fns)


def _missing_extra(env_id: str, exc: BaseException) -> str:
    """'needs the 'box2d' extra: pip install ...' for an env whose optional package is missing."""
    entry = str(gym.spec(registry_id(env_id)).entry_point)
    module = getattr(exc, "name", None) or entry.partition(":")[0]
    extra = extra_for(module) or next((e for e in ("box2d", "mujoco") if f".{e}." in entry), None)
    return install_hint(extra) if extra else f"cannot be made: {' '.join(str(exc).split())}"


def env_seed(base_seed: int | None, worker_index: int) -> int | None:
    """Vector envs seed env i with seed + i, so env i of worker w gets base + 1000 * w + i."""
    return None if base_seed is None else base_seed + 1000 * worker_index


def env_name(env: EnvSpec) -> str:
    return env if isinstance(env, str) else getattr(env, "__name__", type(env).__name__)
