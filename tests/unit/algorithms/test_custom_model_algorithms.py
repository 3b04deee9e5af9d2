"""Your own tf.keras.Model trained by each algorithm family in this process (no Ray): gradient steps change
its weights, the worker acts with them; its SavedModel and TFLite exports act like the policy; a checkpoint
of a custom-model run restores with the class supplied and is refused without it. ~40 s on 2 cores."""

import numpy as np
import pytest

from relayrl.algorithms import config_class
from relayrl.core.saved_state import CheckpointError
from relayrl.models.networks import preprocess_obs
from relayrl.models.policy import Policy
from relayrl.models.tf_import import tf
from relayrl.persistence.tflite_export import load_tflite
from tests.helpers import custom_models as M
from tests.helpers.fakes import ImageEnv

OFF = dict(learning_starts=16, train_batch_size=16)
ON = dict(train_batch_size=64)
PPO = dict(ON, sgd_minibatch_size=32, num_sgd_iter=1)
REPLAY = dict(num_envs_per_worker=1, rollout_fragment_length=32)
PV = {"custom_model": M.PolicyValueNet}
ACTOR_CRITIC = {"custom_model": M.ActorNet, "custom_critic": M.CriticNet}
TRANSITIONS = {"rollout_fragment_length": 32}
CASES = {
    "dqn": ("dqn", "CartPole-v1", REPLAY, dict(OFF, dueling=False, model={"custom_model": M.QNetwork})),
    "dqn-dueling": ("dqn", "CartPole-v1", REPLAY, dict(OFF, model={"custom_model": M.DuelingNet})),
    "ppo": ("ppo", "CartPole-v1", {}, dict(PPO, model=PV)),
    "ppo-gaussian": ("ppo", "Pendulum-v1", {}, dict(PPO, model=PV)),
    "ppo-image": ("ppo", ImageEnv, {}, dict(PPO, model={"custom_model": M.ConvPolicyValueNet})),
    "a2c": ("a2c", "CartPole-v1", {}, dict(ON, model=PV)),
    "reinforce": ("reinforce", "CartPole-v1", {}, dict(ON, model=PV)),
    "impala": ("impala", "CartPole-v1", {"rollout_fragment_length": 16}, dict(ON, model=PV)),
    "sac": ("sac", "Pendulum-v1", TRANSITIONS, dict(OFF, replay_ratio=0.25, model=ACTOR_CRITIC)),
    "td3": ("td3", "Pendulum-v1", TRANSITIONS, dict(OFF, replay_ratio=0.25, model=ACTOR_CRITIC)),
    "sac-critic-only": (
        "sac",
        "Pendulum-v1",
        TRANSITIONS,
        dict(OFF, replay_ratio=0.25, model={"custom_critic": M.CriticNet}),
    ),
}


def build(case: str):
    algo, env, rollouts, training = CASES[case]
    config = config_class(algo)().environment(env).rollouts(**{"num_rollout_workers": 0, **rollouts})
    return config.training(**training).debugging(seed=0).build()


def train_until_updated(algo) -> dict:
    for _ in range(20):
        result = algo.train()
        if "learner/grad_gnorm" in result:
            return result
    raise AssertionError(f"no gradient step in 20 iterations of {algo.name}")


def greedy_env_actions(algo, raw_obs: np.ndarray) -> np.ndarray:
    """What relayrl's own worker-side Policy does with the learner's weights, deterministically."""
    policy = Policy(algo.spec, algo.action_space, seed=0)
    policy.set_weights(algo.learner.get_weights(), 0)
    return policy.env_actions(policy.compute_actions(preprocess_obs(algo.spec, raw_obs), explore=False))


def env_observations(algo, count: int = 16) -> np.ndarray:
    space = algo.obs_space
    space.seed(0)
    return np.stack([space.sample() for _ in range(count)])


@pytest.mark.parametrize("case", list(CASES))
def test_trains_and_exports_acting_like_the_policy(case, tmp_path):
    algo = build(case)
    try:
        before = algo.learner.get_weights()
        result = train_until_updated(algo)
        after = algo.learner.get_weights()
        assert np.isfinite(result["learner/grad_gnorm"])
        assert any(not np.allclose(a, b) for a, b in zip(before, after)), "no weight moved"
        obs = env_observations(algo)
        expected = greedy_env_actions(algo, obs)
        exported = tf.saved_model.load(algo.export_policy(str(tmp_path / "sm")))
        action = exported.signatures["serving_default"](observation=tf.constant(obs))["action"].numpy()
        np.testing.assert_allclose(action, expected, rtol=1e-5, atol=1e-5)
        value = exported.signatures["value"](observation=tf.constant(obs))["value"].numpy()
        assert value.shape == (len(obs),) and np.isfinite(value).all()
        if case in ("dqn", "ppo-gaussian", "ppo-image", "sac"):  # TFLite of each head kind
            act_tflite, _ = load_tflite(algo.export_tflite(str(tmp_path / "p.tflite")))
            np.testing.assert_allclose(act_tflite(obs), expected, rtol=1e-5, atol=1e-5)
    finally:
        algo.stop()


def test_a_yaml_config_names_the_class_by_import_path():
    from relayrl import PPOConfig

    text = """
env: CartPole-v1
train_batch_size: 64
sgd_minibatch_size: 32
model:
  custom_model: tests.helpers.custom_models:PolicyValueNet
  custom_model_kwargs: {hidden: 8}
"""
    algo = PPOConfig.from_yaml(text).build()
    try:
        assert algo.learner.model.net.torso.units == 8
        assert np.isfinite(train_until_updated(algo)["learner/grad_gnorm"])
    finally:
        algo.stop()


@pytest.mark.parametrize("case", ["dqn", "sac"])
def test_checkpoint_restores_with_the_class_supplied_and_is_refused_without(case, tmp_path):
    algo = build(case)
    try:
        train_until_updated(algo)
        path = algo.save(str(tmp_path / "ckpt"))
        weights = algo.learner.get_weights()
        critics = algo.learner.part_weights("critics") if case == "sac" else None
    finally:
        algo.stop()
    cls = type(algo)
    with pytest.raises(CheckpointError) as err:
        cls.from_checkpoint(path)
    assert "model.custom_model = 'tests.helpers.custom_models:" in str(err.value)
    assert "pass the class yourself" in str(err.value) and "\n" not in str(err.value)
    classes = {"custom_model": CASES[case][3]["model"]["custom_model"]}
    if case == "sac":
        with pytest.raises(CheckpointError, match="model.custom_critic = "):
            cls.from_checkpoint(path, **classes)
        classes["custom_critic"] = "tests.helpers.custom_models:CriticNet"  # the CLI's form: your import path
    restored = cls.from_checkpoint(path, **classes)
    try:
        assert all(np.array_equal(a, b) for a, b in zip(restored.learner.get_weights(), weights))
        if critics is not None:
            got = restored.learner.part_weights("critics")
            assert all(np.array_equal(a, b) for a, b in zip(got, critics))
        restored.train()
    finally:
        restored.stop()
