"""What a rollout worker is built with (SamplerSettings), the part each algorithm chooses (Sampling,
Exploration), and the columns of the fragments it sends (batch_spec).

Built once on the driver (Algorithm.sampler_settings) and shipped, frozen, to every worker's constructor:
small, picklable, typed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import gymnasium as gym
import numpy as np

from relayrl.envs import atari as ale
from relayrl.models.networks import CONTINUOUS_HEADS, ModelSpec

# "gae": flat rows with advantages (on-policy). "sequences": time-major [T, N] columns for learners that
# correct off-policy data themselves (IMPALA's V-trace). "transitions": n-step replay rows (off-policy).
Postprocess = Literal["gae", "sequences", "transitions"]


@dataclass(frozen=True)
class Exploration:
    """How workers explore (Policy.set_explore): epsilon-greedy on Q-values (`epsilon`), or Gaussian noise
    of std `sigma` on a deterministic head. With `num_workers` = N, the setting may spread over the workers
    (i = 0..N-1 for worker_index 1..N): Ape-X's eps_i = eps^(1 + epsilon_alpha * i / (N - 1)), so some act
    almost greedily while others keep exploring; TD3's sigma_i = sigma * (sigma_max / sigma)^(i / (N - 1))."""

    epsilon: float | None = None
    sigma: float | None = None
    epsilon_alpha: float | None = None
    sigma_max: float | None = None
    num_workers: int = 0
    uniform: bool | None = None  # tanh heads: uniform random actions (SAC/TD3's warm-up)

    def for_worker(self, worker_index: int) -> Exploration:
        """This worker's own settings, the spread applied (worker_index 0, the driver's: as worker 1)."""
        n, i = self.num_workers, max(worker_index - 1, 0)
        epsilon, sigma = self.epsilon, self.sigma
        if self.epsilon_alpha is not None and n and epsilon is not None:
            epsilon = epsilon ** (1 + self.epsilon_alpha * i / max(n - 1, 1))
        if self.sigma_max is not None and n > 1 and sigma:
            sigma = sigma * (self.sigma_max / sigma) ** (i / (n - 1))
        return Exploration(epsilon=epsilon, sigma=sigma, uniform=self.uniform)

    def policy_settings(self) -> dict[str, float]:
        """Policy.set_explore's argument: only the settings given (the others keep the policy's own)."""
        given = (("epsilon", self.epsilon), ("sigma", self.sigma), ("uniform", self.uniform))
        return {k: v for k, v in given if v is not None}


@dataclass(frozen=True)
class Sampling:
    """The part of the workers' settings an algorithm chooses (Algorithm.sampling): the rows they send and
    how they explore. The defaults are the on-policy ones (GAE rows with lambda 1, no exploration)."""

    postprocess: Postprocess = "gae"
    lambda_: float = 1.0  # GAE lambda ("gae" only)
    n_step: int = 1  # steps of reward before bootstrapping ("transitions" only)
    explore: Exploration = field(default_factory=Exploration)
    scale_rewards: bool = False  # divide rewards by the running std of the discounted return (learning only)


@dataclass(frozen=True)
class SamplerSettings:
    """What a worker needs to know (kept small: it is shipped to every actor's constructor)."""

    env: Any
    env_config: dict
    num_envs: int
    fragment_length: int
    spec: ModelSpec
    gamma: float = 0.99
    lambda_: float = 1.0
    seed: int | None = None
    postprocess: Postprocess = "gae"
    n_step: int = 1
    explore: Exploration = field(default_factory=Exploration)
    num_env_threads: int = 0  # > 0: a ThreadedVectorEnv keeps that many slow envs stepping at once
    recreate_failed_envs: bool = False  # rebuild the envs in place when one raises (else it propagates)
    scale_rewards: bool = False  # divide rewards by the running std of the discounted return (learning only)
    env_wrappers: list = field(default_factory=list)  # the config's env_wrappers, applied to each env
    atari: dict | None = None  # the config's atari options (ALE ids only; None = the defaults)
    vector_backend: str = "gymnasium"  # "gymnasium" | "envpool"
    # k > 1: observations are stacks of k frames on the last axis (ALE's frame_stack); "transitions" rows
    # then carry each frame once (the replay rebuilds the stacks), 0 = whole observations
    frame_stack: int = 0

    @classmethod
    def from_config(cls, c: Any, spec: ModelSpec, sampling: Sampling) -> SamplerSettings:
        """A Config's env and rollout fields, with the algorithm's choice of rows and exploration."""
        return cls(
            env=c.env,
            env_config=c.env_config,
            env_wrappers=c.env_wrappers,
            num_envs=c.num_envs_per_worker,
            fragment_length=c.resolved_fragment_length(),
            spec=spec,
            gamma=c.gamma,
            lambda_=sampling.lambda_,
            seed=c.seed,
            postprocess=sampling.postprocess,
            n_step=sampling.n_step,
            explore=sampling.explore,
            num_env_threads=c.num_env_threads,
            recreate_failed_envs=c.recreate_failed_envs,
            scale_rewards=sampling.scale_rewards,
            atari=c.atari,
            vector_backend=c.vector_backend,
            frame_stack=ale.frame_stack(c.env, c.atari),
        )

    def make_envs(self) -> gym.vector.VectorEnv:
        """This worker's vector env: num_envs envs, each inside env_wrappers (ALE ids preprocessed), stepped
        by the vector_backend."""
        from relayrl.envs.make import make_vector_env

        return make_vector_env(
            self.env,
            self.env_config,
            self.num_envs,
            self.num_env_threads,
            self.env_wrappers,
            atari=self.atari,
            backend=self.vector_backend,
        )

    def learner_signals(self) -> tuple[bool, bool]:
        """(episodic_life, clip_rewards): the training signals an ALE id's atari options ask the worker for
        (a lost life ends the learner's episode; the learner sees sign(reward)); (False, False) otherwise."""
        if not ale.is_ale_id(self.env):
            return False, False
        options = ale.atari_options(self.atari)
        return bool(options["episodic_life"]), bool(options["clip_rewards"])


def batch_spec(spec: ModelSpec, postprocess: Postprocess = "gae") -> dict[str, tuple[tuple, type]]:
    """Column name -> (per-row shape, dtype) of the fragments workers send: the learner compiles its
    update for exactly this at build time, before the first batch exists."""
    obs_dtype = np.uint8 if spec.obs_kind == "image" else np.float32
    if spec.action_kind in CONTINUOUS_HEADS:
        action = ((spec.action_nvec[0],), np.float32)
    elif spec.action_kind == "multi_categorical":
        action = ((len(spec.action_nvec),), np.int64)
    else:
        action = ((), np.int64)
    scalar = ((), np.float32)
    obs = (tuple(spec.obs_shape), obs_dtype)
    if postprocess == "transitions":
        return {"obs": obs, "actions": action, "rewards": scalar, "next_obs": obs, "discounts": scalar}
    return {
        "obs": obs,
        "actions": action,
        "logp": scalar,
        "vf_preds": scalar,
        "advantages": scalar,
        "value_targets": scalar,
    }


class EnvError(RuntimeError):
    """An environment produced something unusable (NaN observation or reward, bad shapes)."""


class WorkerFailedError(RuntimeError):
    """A rollout worker kept failing past its restart budget (raised by the Ray fleets)."""

    def __init__(self, worker_index: int, restarts: int, last_error: BaseException):
        super().__init__(
            f"rollout worker {worker_index} failed {restarts} times (max_worker_restarts reached); "
            f"last error: {type(last_error).__name__}: {last_error}"
        )
        self.worker_index, self.restarts, self.last_error = worker_index, restarts, last_error
