"""SavedModel export: observation -> deterministic action (`serving_default`) and -> value (`value`).

The exported module carries the preprocessing (one-hot for Discrete observations; images are scaled inside
the network) and the action post-processing (argmax; means clipped or tanh-rescaled to the Box bounds), so
`tf.saved_model.load(dir).signatures["serving_default"](observation=obs)["action"]` needs nothing else:
no relayrl, no gymnasium. The input signature rejects observations of the wrong shape or dtype.

The export also records its env and spaces (relayrl/persistence/policy_metadata.py), so it can be evaluated
without naming the env, and an env that does not fit is refused in one line before the graph runs.
"""

from __future__ import annotations

import os

import gymnasium as gym
import numpy as np

from relayrl.models.networks import ModelSpec
from relayrl.models.tf_import import tf
from relayrl.persistence.policy_metadata import PolicyMetadata, brief, describe_space, write_metadata


def _obs_signature(obs_space: gym.Space) -> tf.TensorSpec:
    if isinstance(obs_space, gym.spaces.Discrete):
        return tf.TensorSpec([None], tf.int64, name="observation")
    return tf.TensorSpec([None, *obs_space.shape], tf.as_dtype(obs_space.dtype), name="observation")


class ExportedPolicy(tf.Module):
    def __init__(self, model, spec: ModelSpec, obs_space: gym.Space, action_space: gym.Space):
        super().__init__(name="relayrl_policy")
        self.model = model
        self.spec = spec
        self.n_obs = int(obs_space.n) if isinstance(obs_space, gym.spaces.Discrete) else None
        bounds = isinstance(action_space, gym.spaces.Box)
        self.low = tf.constant(action_space.low, tf.float32) if bounds else None
        self.high = tf.constant(action_space.high, tf.float32) if bounds else None
        sig = [_obs_signature(obs_space)]
        # not named `serve`: TFLiteConverter.from_saved_model takes a module with a `serve` attribute for a
        # Keras `model.export` artifact and then converts only one signature
        self.action_fn = tf.function(self._action, input_signature=sig)
        self.value_fn = tf.function(self._value, input_signature=sig)

    def _inputs(self, observation):
        if self.n_obs is not None:
            return tf.one_hot(observation, self.n_obs, dtype=tf.float32)
        if self.spec.obs_kind == "image":
            return observation
        return tf.reshape(tf.cast(observation, tf.float32), (tf.shape(observation)[0], -1))

    def _action(self, observation):
        dist = self.model.head(self._inputs(observation))
        kind = self.spec.action_kind
        if kind == "categorical":
            action = tf.argmax(dist, axis=-1)
        elif kind == "multi_categorical":
            parts = tf.split(dist, list(self.spec.action_nvec), axis=-1)
            action = tf.stack([tf.argmax(p, axis=-1) for p in parts], axis=-1)
        elif kind == "gaussian":
            action = tf.clip_by_value(dist, self.low, self.high)
        else:  # tanh heads: squashed gaussian mean or deterministic output, rescaled to the bounds
            mean = dist[:, : self.spec.action_nvec[0]]
            action = self.low + (tf.tanh(mean) + 1.0) * 0.5 * (self.high - self.low)
        return {"action": action}

    def _value(self, observation):
        return {"value": self.model.value(self._inputs(observation))}


def export_saved_model(
    model, spec: ModelSpec, obs_space: gym.Space, action_space: gym.Space, export_dir: str, config=None
) -> str:
    """Write the SavedModel, and its env and spaces (from `config`, the algorithm's) as assets/ metadata."""
    module = ExportedPolicy(model, spec, obs_space, action_space)
    export_dir = os.path.abspath(export_dir)
    tf.saved_model.save(
        module, export_dir, signatures={"serving_default": module.action_fn, "value": module.value_fn}
    )
    write_metadata(export_dir, config, obs_space, action_space)
    return export_dir


def load_policy(export_dir: str):
    """(predict_action, predict_value) callables over numpy batches, from a SavedModel."""
    loaded = tf.saved_model.load(export_dir)
    serve, value = loaded.signatures["serving_default"], loaded.signatures["value"]
    return (
        lambda obs: serve(observation=tf.constant(obs))["action"].numpy(),
        lambda obs: value(observation=tf.constant(obs))["value"].numpy(),
    )


def _action_signature(action_space: gym.Space) -> tuple[list, tf.DType]:
    """(shape, dtype) of `serving_default`'s action output for a policy of this action space."""
    if isinstance(action_space, gym.spaces.Discrete):
        return [None], tf.int64
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        return [None, len(action_space.nvec)], tf.int64
    return [None, *(action_space.shape or ())], tf.float32


def _without_bounds(description: dict) -> dict:
    return {k: v for k, v in description.items() if k not in ("low", "high")}


def check_policy_fits(
    export_dir: str, metadata: PolicyMetadata | None, obs_space: gym.Space, action_space: gym.Space, env
) -> None:
    """ValueError (one line) unless env `env`'s spaces are the policy's: the recorded ones when the export
    has metadata (observation bounds aside: the policy does not use them), and its serving signature."""
    problem = None
    if metadata is not None:
        obs, act = describe_space(obs_space), describe_space(action_space)
        if _without_bounds(obs) != _without_bounds(metadata.observation_space):
            problem = f"observation space {brief(obs)}; the policy takes {brief(metadata.observation_space)}"
        elif act != metadata.action_space:
            problem = f"action space {brief(act)}; the policy acts in {brief(metadata.action_space)}"
    if problem is None:
        serve = tf.saved_model.load(export_dir).signatures["serving_default"]
        obs_in = serve.structured_input_signature[1]["observation"]
        act_out = serve.structured_outputs["action"]
        want_obs = _obs_signature(obs_space)
        want_shape, want_dtype = _action_signature(action_space)
        if obs_in.shape.as_list() != want_obs.shape.as_list() or obs_in.dtype != want_obs.dtype:
            problem = f"observation space {obs_space}; the policy takes {obs_in.dtype.name} {obs_in.shape}"
        elif act_out.shape.as_list() != want_shape or act_out.dtype != want_dtype:
            problem = f"action space {action_space}; the policy returns {act_out.dtype.name} {act_out.shape}"
    if problem is not None:
        raise ValueError(f"env {env!r} does not fit the policy in {export_dir}: it has {problem}")


def evaluate_saved_model(
    export_dir: str,
    env_id: str,
    num_episodes: int,
    seed: int | None = None,
    num_envs: int = 16,
    env_config: dict | None = None,
    wrappers: list | tuple = (),
    metadata: PolicyMetadata | None = None,
    atari: dict | None = None,
) -> dict[str, float]:
    """Score a SavedModel on a gymnasium env: exactly num_episodes episodes, each env a fixed quota. The env
    (with `env_config`, `wrappers` and an ALE id's `atari` options) is checked against the policy first
    (check_policy_fits)."""
    from relayrl.envs.make import env_spaces, make_vector_env

    env_config = env_config or {}
    check_policy_fits(export_dir, metadata, *env_spaces(env_id, env_config, wrappers, atari), env_id)
    act, _ = load_policy(export_dir)
    num_envs = max(1, min(num_envs, num_episodes))
    quota = np.full(num_envs, num_episodes // num_envs)
    quota[: num_episodes % num_envs] += 1
    vec = make_vector_env(env_id, env_config, num_envs, wrappers=wrappers, atari=atari)
    try:
        obs, _ = vec.reset(seed=seed)
        done_count = np.zeros(num_envs, np.int64)
        ep_return, prev_done, returns = np.zeros(num_envs), np.zeros(num_envs, bool), []
        while (done_count < quota).any():
            obs, reward, terminated, truncated, _ = vec.step(act(obs))
            ep_return += reward
            prev_done = terminated | truncated
            for i in np.nonzero(prev_done & (done_count < quota))[0]:
                returns.append(ep_return[i])
                done_count[i] += 1
            ep_return[prev_done] = 0.0
    finally:
        vec.close()
    return {"episode_reward_mean": float(np.mean(returns)), "episodes": len(returns)}
