"""RolloutWorker: vector envs + Policy -> version-stamped fragments with advantages computed here.

The same class runs in the driver (num_rollout_workers=0, no Ray) and inside a Ray actor
(runtime/ray_workers.py wraps it). It imports neither Ray nor TensorFlow for MLP policies.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from relayrl import ops
from relayrl.envs import env_name, env_seed, make_vector_env
from relayrl.networks import ModelSpec, preprocess_obs
from relayrl.policy import Policy
from relayrl.types import Fragment


@dataclass
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


class EnvError(RuntimeError):
    """An environment produced something unusable (NaN observation or reward, bad shapes)."""


class RolloutWorker:
    """Loop that uses it:  worker.set_weights(w, version); fragment = worker.sample()."""

    def __init__(self, settings: SamplerSettings, worker_index: int = 0):
        self.s = settings
        self.worker_index = worker_index
        self.env = make_vector_env(settings.env, settings.env_config, settings.num_envs)
        seed = env_seed(settings.seed, worker_index)
        self.policy = Policy(settings.spec, self.env.single_action_space,
                             seed=None if seed is None else seed + 7919)  # action noise stream != env stream
        raw_obs, _ = self.env.reset(seed=seed)
        self.obs = preprocess_obs(settings.spec, raw_obs)
        n = settings.num_envs
        self.prev_done = np.zeros(n, dtype=bool)  # NEXT_STEP autoreset: the next step is a reset step
        self.ep_return = np.zeros(n, dtype=np.float64)
        self.ep_length = np.zeros(n, dtype=np.int64)

    def set_weights(self, weights: list[np.ndarray], version: int) -> None:
        self.policy.set_weights(weights, version)

    def sample(self) -> Fragment:
        """Step all envs fragment_length times with one batched policy call per step."""
        start = time.perf_counter()
        T, N = self.s.fragment_length, self.s.num_envs
        obs_buf = np.empty((T + 1, N) + self.obs.shape[1:], dtype=self.obs.dtype)
        act_buf: np.ndarray | None = None
        rewards = np.empty((T, N), np.float32)
        terminated = np.empty((T, N), bool)
        truncated = np.empty((T, N), bool)
        valid = np.empty((T, N), bool)
        done_returns, done_lengths = [], []
        policy, env, spec = self.policy, self.env, self.s.spec
        obs, prev_done = self.obs, self.prev_done
        for t in range(T):
            obs_buf[t] = obs
            valid[t] = ~prev_done
            actions = policy.compute_actions(obs)
            if act_buf is None:
                act_buf = np.empty((T,) + actions.shape, dtype=actions.dtype)
            act_buf[t] = actions
            raw_obs, rew, term, trunc, _ = env.step(policy.env_actions(actions))
            obs = preprocess_obs(spec, raw_obs)
            rewards[t], terminated[t], truncated[t] = rew, term, trunc
            self.ep_return += rew
            self.ep_length += ~prev_done
            prev_done = term | trunc
            if prev_done.any():
                done_returns.append(self.ep_return[prev_done].copy())
                done_lengths.append(self.ep_length[prev_done].copy())
                self.ep_return[prev_done] = 0.0
                self.ep_length[prev_done] = 0
        obs_buf[T] = obs
        self.obs, self.prev_done = obs, prev_done
        data = self._postprocess(obs_buf, act_buf, rewards, terminated, truncated, valid)
        return Fragment(
            data=data,
            version=policy.version,
            worker_index=self.worker_index,
            env_steps=int(valid.sum()),
            episode_returns=np.concatenate(done_returns).astype(np.float32) if done_returns else np.zeros(0, np.float32),
            episode_lengths=np.concatenate(done_lengths) if done_lengths else np.zeros(0, np.int64),
            sample_time_s=time.perf_counter() - start,
        )

    def _postprocess(self, obs_buf, act_buf, rewards, terminated, truncated, valid) -> dict[str, np.ndarray]:
        """Behaviour log-probs, values and GAE for the whole fragment in batched passes; drop reset steps."""
        T, N = rewards.shape
        self._check_finite(obs_buf, "observation")
        self._check_finite(rewards, "reward")
        flat_obs = obs_buf.reshape((T + 1) * N, *obs_buf.shape[2:])
        flat_act = act_buf.reshape(T * N, *act_buf.shape[2:])
        logp, values = self.policy.logp_and_values(flat_obs, np.concatenate([flat_act, flat_act[:N]]))
        values = values.reshape(T + 1, N)
        adv = ops.gae(rewards, values[:-1], values[1:], terminated, terminated | truncated, self.s.gamma, self.s.lambda_)
        keep = valid.reshape(-1)
        return {
            "obs": flat_obs[: T * N][keep],
            "actions": flat_act[keep],
            "logp": logp[: T * N][keep],
            "vf_preds": values[:-1].reshape(-1)[keep],
            "advantages": adv.reshape(-1)[keep],
            "value_targets": (adv + values[:-1]).reshape(-1)[keep],
        }

    def _check_finite(self, array: np.ndarray, what: str) -> None:
        if np.issubdtype(array.dtype, np.floating) and not np.isfinite(array).all():
            raise EnvError(f"environment {env_name(self.s.env)!r} on worker {self.worker_index} returned a non-finite "
                           f"{what} (NaN or Inf); check the env or wrap it to sanitise its output")

    def stop(self) -> None:
        self.env.close()
