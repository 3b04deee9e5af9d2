"""ThreadedVectorEnv: many slow environments in flight at once, stepped on a thread pool.

For environments whose `step` waits on I/O (a remote simulator, a web API, an LLM tool call), more
cores do not help but more requests in flight do: while one env waits for its answer the others wait
for theirs. Threads release the GIL while they block in sockets / sleeps, so a single worker with 32
envs of 50 ms steps makes ~32x the steps/s of one env stepped in a loop, on any number of cores.
The env needs no change: a plain blocking gymnasium env.

Semantics are exactly gymnasium's SyncVectorEnv with NEXT_STEP autoreset (the step after a done
resets that env, reward 0, action ignored), so RolloutWorker runs unchanged on it. A vector step waits
for all its envs (lock-step), so throughput follows the slowest env of each step.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from copy import deepcopy
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode, SyncVectorEnv
from gymnasium.vector.utils import concatenate, iterate


class ThreadedVectorEnv(SyncVectorEnv):
    """SyncVectorEnv whose sub-env `step`/`reset` calls run concurrently on `num_threads` threads."""

    def __init__(self, env_fns: Sequence[Callable[[], gym.Env]], num_threads: int):
        if num_threads < 1:
            raise ValueError(f"ThreadedVectorEnv: num_threads = {num_threads}; allowed: an integer >= 1")
        super().__init__(env_fns, autoreset_mode=AutoresetMode.NEXT_STEP)
        self.num_threads = num_threads
        self._pool = ThreadPoolExecutor(num_threads, thread_name_prefix="relayrl-env")

    def _step_one(self, i: int, action: Any) -> tuple:
        if self._autoreset_envs[i]:  # NEXT_STEP autoreset: this step only resets env i
            obs, info = self.envs[i].reset()
            return obs, 0.0, False, False, info
        return self.envs[i].step(action)

    def step(self, actions: Any):
        results = list(
            self._pool.map(self._step_one, range(self.num_envs), iterate(self.action_space, actions))
        )
        infos: dict = {}
        for i, (obs, reward, terminated, truncated, info) in enumerate(results):
            self._env_obs[i] = obs
            self._rewards[i], self._terminations[i], self._truncations[i] = reward, terminated, truncated
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset_envs = np.logical_or(self._terminations, self._truncations)
        return (
            deepcopy(self._observations) if self.copy else self._observations,
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def reset(self, *, seed: int | list[int | None] | None = None, options: dict | None = None):
        if options is not None and "reset_mask" in options:
            return super().reset(seed=seed, options=options)  # partial resets: rare, keep gymnasium's path
        seeds = (
            [None] * self.num_envs
            if seed is None
            else [seed + i for i in range(self.num_envs)]
            if isinstance(seed, int)
            else list(seed)
        )
        if len(seeds) != self.num_envs:
            raise ValueError(f"reset(seed=...) got {len(seeds)} seeds for {self.num_envs} envs")
        results = list(self._pool.map(lambda e, s: e.reset(seed=s, options=options), self.envs, seeds))
        self._terminations = np.zeros(self.num_envs, np.bool_)
        self._truncations = np.zeros(self.num_envs, np.bool_)
        self._autoreset_envs = np.zeros(self.num_envs, np.bool_)
        infos: dict = {}
        for i, (obs, info) in enumerate(results):
            self._env_obs[i] = obs
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return deepcopy(self._observations) if self.copy else self._observations, infos

    def close_extras(self, **kwargs: Any) -> None:
        self._pool.shutdown(wait=True)
        super().close_extras(**kwargs)
