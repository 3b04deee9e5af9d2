"""Your own tf.keras.Model behind relayrl's network interface (relayrl/models/custom_models.py): what each
head kind gets and returns, the weights exchanged between learner and worker, and the one-line refusals of
models whose outputs do not fit."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.core.knobs import merge_model
from relayrl.models import networks
from relayrl.models.custom_models import CustomActorCritic, CustomTwinQ
from relayrl.models.keras_models import TFForward, actor_critic
from relayrl.models.policy import Policy
from relayrl.models.tf_import import tf
from tests.helpers import custom_models as M
from tests.helpers.fakes import ImageEnv

CARTPOLE = gym.make("CartPole-v1")
PENDULUM = gym.make("Pendulum-v1")


def spec_for(env, model: dict, head=None, outputs=None) -> networks.ModelSpec:
    full = merge_model(model)  # as a config holds it: classes by their 'module:QualName'
    spec = networks.spec_from_spaces(env.observation_space, env.action_space, full, head)
    if outputs is not None:  # what DQN's check_env sets
        import dataclasses

        spec = dataclasses.replace(spec, custom=dataclasses.replace(spec.custom, outputs=outputs))
    return spec


def test_q_head_gives_q_values_and_max_q_as_value():
    spec = spec_for(CARTPOLE, {"custom_model": M.QNetwork}, outputs="q")
    model = actor_critic(spec)
    assert isinstance(model, CustomActorCritic) and not spec.numpy_forward_ok
    obs = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    q = model.head(obs).numpy()
    assert q.shape == (5, 2) and q.dtype == np.float32
    np.testing.assert_allclose(model.value(obs).numpy(), q.max(axis=1), rtol=1e-5, atol=1e-6)


def test_policy_value_head_and_gaussian_log_std():
    spec = spec_for(PENDULUM, {"custom_model": M.PolicyValueNet, "custom_model_kwargs": {"hidden": 8}})
    model = actor_critic(spec)
    dist, value = model(np.zeros((3, 3), np.float32))
    assert dist.shape == (3, 1) and value.shape == (3,)
    assert any(v is model.log_std for v in model.ordered_variables)  # relayrl's, trained
    assert model.net.torso.units == 8  # custom_model_kwargs reached the constructor


def test_sac_actor_gets_twice_the_action_width():
    spec = spec_for(PENDULUM, {"custom_model": M.ActorNet}, head="squashed_gaussian")
    model = actor_critic(spec)
    assert model.head(np.zeros((2, 3), np.float32)).shape == (2, 2)  # mean and log_std
    assert model.log_std is None


def test_image_model_sees_floats_in_unit_range():
    env = ImageEnv()
    spec = spec_for(env, {"custom_model": M.ConvPolicyValueNet})
    model = actor_critic(spec)
    x = model.features(np.full((2, 24, 24, 3), 255, np.uint8))
    assert x.dtype == tf.float32 and float(tf.reduce_max(x)) == 1.0
    dist, value = model(np.full((2, 24, 24, 3), 255, np.uint8))
    assert dist.shape == (2, 3) and value.shape == (2,)


def test_learner_weights_reach_a_worker_policy():
    """The flat weights list of the learner's model sets a worker's TFForward: same outputs."""
    spec = spec_for(CARTPOLE, {"custom_model": M.PolicyValueNet})
    learner_model, worker = actor_critic(spec), Policy(spec, CARTPOLE.action_space, seed=0)
    assert isinstance(worker.net, TFForward)
    weights = [w + 0.1 for w in learner_model.get_weights()]
    learner_model.set_weights(weights)
    worker.set_weights(learner_model.get_weights(), version=1)
    obs = np.random.default_rng(1).standard_normal((4, 4)).astype(np.float32)
    np.testing.assert_allclose(
        worker.net.dist_inputs(obs), learner_model.head(obs).numpy(), rtol=1e-5, atol=1e-6
    )
    actions, extras = worker.act(obs, explore=False)
    assert actions.shape == (4,) and extras["vf_preds"].shape == (4,)


def test_initial_weights_repeat_for_a_seed():
    spec = spec_for(CARTPOLE, {"custom_model": M.QNetwork}, outputs="q")
    a = networks.init_weights(spec, np.random.default_rng(3))
    b = networks.init_weights(spec, np.random.default_rng(3))
    c = networks.init_weights(spec, np.random.default_rng(4))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c))


def test_custom_twin_critics():
    spec = spec_for(
        PENDULUM, {"custom_critic": M.CriticNet, "custom_critic_kwargs": {"hidden": 8}}, "deterministic"
    )
    critics = CustomTwinQ(spec)
    q1, q2 = critics(np.zeros((4, 3), np.float32), np.zeros((4, 1), np.float32))
    assert q1.shape == (4,) and q2.shape == (4,)
    assert len(critics.ordered_variables) == 8  # two critics of two Dense layers
    assert not np.allclose(critics.get_weights()[0], critics.get_weights()[4])  # two separate critics


@pytest.mark.parametrize(
    "model, outputs, expected",
    [
        (
            M.WrongWidthNet,
            "q",
            "call() returned a float32 tensor [2, 3]; expected call(obs) -> Q-values [B, 2]",
        ),
        (M.Float64Net, "q", "call() returned a float64 tensor [2, 2]"),
        (M.QNetwork, None, "expected call(obs) -> (dist_inputs [B, 2], value [B] or [B, 1]) (PPO"),
        (M.QNetwork, "dueling", "expected call(obs) -> (advantages [B, 2], value [B] or [B, 1])"),
        (M.DuelingNet, "q", "call() returned a tuple of 2"),
        (M.NotAModel, "q", "is not a tf.keras.Model subclass"),
    ],
    ids=["shape", "dtype", "missing-value", "dueling-needs-value", "pair-for-q", "not-keras"],
)
def test_wrong_outputs_are_refused_in_one_line(model, outputs, expected):
    spec = spec_for(CARTPOLE, {"custom_model": model}, outputs=outputs)
    with pytest.raises(ValueError) as err:
        actor_critic(spec)
    message = str(err.value)
    assert message.startswith(f"model.custom_model = tests.helpers.custom_models:{model.__name__}: ")
    assert expected in message and "\n" not in message


def test_constructor_errors_and_bad_kwargs_are_one_line():
    spec = spec_for(CARTPOLE, {"custom_model": M.QNetwork, "custom_model_kwargs": {"widht": 3}}, outputs="q")
    with pytest.raises(ValueError, match=r"^model.custom_model = .*QNetwork\(2, widht=3\) failed: TypeError"):
        actor_critic(spec)


def test_critic_with_wrong_output_is_refused():
    spec = spec_for(PENDULUM, {"custom_critic": M.ActorNet}, "deterministic")
    with pytest.raises(ValueError) as err:
        CustomTwinQ(spec)
    assert str(err.value).startswith("model.custom_critic = tests.helpers.custom_models:ActorNet: ")
    assert "\n" not in str(err.value)


def test_import_path_that_does_not_import_is_refused():
    with pytest.raises(
        ValueError, match=r"^model.custom_model 'tests.helpers.nowhere:Net' cannot be imported"
    ):
        spec_for(CARTPOLE, {"custom_model": "tests.helpers.nowhere:Net"})


def test_custom_critic_outside_sac_td3_is_refused():
    with pytest.raises(ValueError, match="model.custom_critic is used by SAC and TD3 only"):
        spec_for(CARTPOLE, {"custom_critic": M.CriticNet})


def test_normalize_obs_applies_before_your_model_with_the_driver_statistics():
    spec = spec_for(CARTPOLE, {"custom_model": M.PolicyValueNet, "normalize_obs": True})
    model = actor_critic(spec)
    weights = model.get_weights()
    weights[-2:] = [np.full(4, 1.0, np.float32), np.full(4, 2.0, np.float32)]  # what publish_weights writes
    model.set_weights(weights)
    x = model.features(np.full((1, 4), 5.0, np.float32)).numpy()
    np.testing.assert_allclose(x, np.full((1, 4), 2.0))  # (5 - 1) / 2
