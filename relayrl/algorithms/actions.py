"""Actions from an Algorithm's current weights, in this process (RLlib's compute_single_action).

Loop that uses it:  obs, _ = env.reset(); while ...: obs, *_ = env.step(algo.compute_single_action(obs))
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from relayrl.core.contracts import LearnerLike
from relayrl.models import networks


def checked_obs_batch(obs_batch: Any, space: gym.Space, spec: networks.ModelSpec) -> np.ndarray:
    """obs_batch as an array of observations of `space`, or ValueError naming what is allowed."""
    try:
        batch = np.asarray(obs_batch)
    except (ValueError, TypeError):  # ragged nested lists
        batch = np.empty(0, object)
    if spec.obs_kind == "discrete":
        n = spec.obs_shape[0]
        ok = batch.ndim == 1 and batch.dtype.kind in "iu" and bool(((batch >= 0) & (batch < n)).all())
        allowed = f"a 1-D batch of integers in [0, {n})"
    else:
        ok = batch.shape[1:] == space.shape and batch.dtype.kind in "iuf" and bool(np.isfinite(batch).all())
        allowed = f"a batch of finite arrays of shape {space.shape} (the env's observations)"
    if not ok or len(batch) == 0:
        raise ValueError(
            f"observations of shape {batch.shape} and dtype {batch.dtype} are invalid: allowed: {allowed}"
        )
    return batch


def _rectangular(obs: list | tuple) -> bool:
    try:
        np.asarray(obs, dtype=float)
        return True
    except (ValueError, TypeError):
        return False


class PolicyActions:
    """Mixed into Algorithm: compute_actions / compute_single_action with the current weights (a Policy on
    this process, refreshed when the weights change), the bounds applied as the env would get them."""

    learner: LearnerLike
    spec: networks.ModelSpec
    obs_space: gym.Space
    action_space: gym.Space
    weights_version: int
    iteration: int
    timesteps_total: int
    _action_policy: Any = None
    _action_policy_key: tuple = ()

    def compute_actions(self, obs_batch: Any, explore: bool = False) -> np.ndarray:
        """Env actions for a batch of observations: deterministic (greedy / the mean) unless explore, then
        exploring as the training workers do now (epsilon-greedy, action noise, the policy's distribution)."""
        from relayrl.algorithms.periodic_evaluation import exploration_now
        from relayrl.models.policy import Policy

        batch = checked_obs_batch(obs_batch, self.obs_space, self.spec)
        # the weights change with train() and restore(), which move one of these counters
        key = (self.weights_version, self.iteration, self.timesteps_total, id(self.learner))
        if self._action_policy is None or self._action_policy_key != key:
            if self._action_policy is None:
                self._action_policy = Policy(self.spec, self.action_space)
            self._action_policy.set_weights(self.learner.get_weights(), self.weights_version)
            self._action_policy.set_explore(exploration_now(self))
            self._action_policy_key = key
        policy = self._action_policy
        return policy.env_actions(policy.compute_actions(networks.preprocess_obs(self.spec, batch), explore))

    def compute_single_action(self, obs: Any, explore: bool = False) -> Any:
        """The env action for one observation: an int for Discrete actions, an array otherwise."""
        one = np.asarray(obs) if not isinstance(obs, (list, tuple)) or _rectangular(obs) else None
        if one is None or (self.spec.obs_kind != "discrete" and one.shape != self.obs_space.shape):
            raise ValueError(
                f"observation of shape {None if one is None else one.shape} is invalid: allowed: one "
                f"observation of the env, shape {self.obs_space.shape} (a batch: compute_actions)"
            )
        action = self.compute_actions(one[None], explore)[0]
        return int(action) if isinstance(self.action_space, gym.spaces.Discrete) else action
