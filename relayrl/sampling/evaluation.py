"""Greedy evaluation of a policy on fresh environments in this process."""

from __future__ import annotations

import numpy as np

from relayrl.envs.make import make_vector_env
from relayrl.models.networks import ModelSpec, preprocess_obs
from relayrl.models.policy import Policy


def evaluate(
    env,
    env_config: dict,
    spec: ModelSpec,
    weights: list[np.ndarray],
    num_episodes: int,
    seed: int | None = None,
    num_envs: int = 16,
    explore: bool = False,
    exploration: dict | None = None,
    wrappers: list | tuple = (),
    atari: dict | None = None,
) -> dict[str, float]:
    """Run exactly num_episodes episodes (deterministic actions unless explore) and summarise their returns.
    `exploration` is Policy.set_explore's argument for explore=True (epsilon-greedy, Gaussian noise): how
    the training workers explore now; without it a categorical head samples its softmax. An ALE id is
    preprocessed with its `atari` options (the config's); returns are the real game score (no episodic life,
    no reward clipping: those are training signals only).

    Each env runs a fixed quota of episodes, so short episodes are not over-counted (taking the first N
    episodes to finish from parallel envs would bias the mean towards early failures)."""
    num_envs = max(1, min(num_envs, num_episodes))
    quota = np.full(num_envs, num_episodes // num_envs)
    quota[: num_episodes % num_envs] += 1
    vec = make_vector_env(env, env_config, num_envs, wrappers=wrappers, atari=atari)
    try:
        policy = Policy(spec, vec.single_action_space, seed=seed, explore=exploration if explore else None)
        policy.set_weights(weights, 0)
        obs, _ = vec.reset(seed=seed)
        done_count = np.zeros(num_envs, np.int64)
        ep_return, ep_length = np.zeros(num_envs), np.zeros(num_envs, np.int64)
        prev_done = np.zeros(num_envs, bool)
        returns, lengths = [], []
        while (done_count < quota).any():
            actions = policy.compute_actions(preprocess_obs(spec, obs), explore=explore)
            obs, reward, terminated, truncated, _ = vec.step(policy.env_actions(actions))
            ep_return += reward
            ep_length += ~prev_done  # the NEXT_STEP autoreset step is not part of any episode
            prev_done = terminated | truncated
            for i in np.nonzero(prev_done & (done_count < quota))[0]:
                returns.append(ep_return[i])
                lengths.append(ep_length[i])
                done_count[i] += 1
            ep_return[prev_done], ep_length[prev_done] = 0.0, 0
    finally:
        vec.close()
    r = np.asarray(returns)
    return {
        "episode_reward_mean": float(r.mean()),
        "episode_reward_min": float(r.min()),
        "episode_reward_max": float(r.max()),
        "episode_reward_std": float(r.std()),
        "episode_len_mean": float(np.mean(lengths)),
        "episodes": len(r),
    }
