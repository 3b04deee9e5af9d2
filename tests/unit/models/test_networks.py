"""The numpy forward pass used by workers equals the Keras model the learner trains."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import distributions, networks, numpy_forward
from relayrl.models.keras_models import ActorCritic
from relayrl.models.tf_distributions import entropy, log_prob
from relayrl.models.tf_import import tf

SPACES = {
    "discrete": (gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(3)),
    "multidiscrete": (gym.spaces.Box(-1, 1, (5,)), gym.spaces.MultiDiscrete([2, 3])),
    "box": (gym.spaces.Box(-1, 1, (3,)), gym.spaces.Box(-2, 2, (2,))),
    "discrete_obs": (gym.spaces.Discrete(6), gym.spaces.Discrete(2)),
}


@pytest.mark.parametrize("activation", ["tanh", "relu", "elu", "swish"])
@pytest.mark.parametrize("kind", list(SPACES))
def test_numpy_forward_equals_keras(kind, activation):
    obs_space, act_space = SPACES[kind]
    model_cfg = dict(DEFAULT_MODEL, fcnet_activation=activation, fcnet_hiddens=[16, 8])
    spec = networks.spec_from_spaces(obs_space, act_space, model_cfg)
    rng = np.random.default_rng(0)
    weights = [
        w + 0.1 * rng.standard_normal(w.shape).astype(np.float32) for w in networks.init_weights(spec, rng)
    ]
    keras_model = ActorCritic(spec)
    keras_model.set_weights(weights)
    np_model = numpy_forward.NumpyActorCritic(spec)
    np_model.set_weights(weights)
    obs = networks.preprocess_obs(spec, np.stack([obs_space.sample() for _ in range(32)]))
    dist_tf, v_tf = keras_model(tf.constant(obs))
    np.testing.assert_allclose(np_model.dist_inputs(obs), dist_tf.numpy(), atol=1e-5)
    np.testing.assert_allclose(np_model.value(obs), v_tf.numpy(), atol=1e-5)
    # log-probs agree between the worker's numpy distribution and the learner's TF one
    log_std = np_model.log_std() if spec.action_kind == "gaussian" else None
    noise = distributions.draw_noise(spec.action_kind, (len(obs), spec.dist_dim), rng)
    actions = distributions.sample(
        spec.action_kind, spec.action_nvec, np_model.dist_inputs(obs), log_std, noise
    )
    lp_np = distributions.log_prob(
        spec.action_kind, spec.action_nvec, np_model.dist_inputs(obs), log_std, actions
    )
    lp_tf = log_prob(spec, dist_tf, keras_model.log_std, tf.constant(actions))
    np.testing.assert_allclose(lp_np, lp_tf.numpy(), atol=1e-4)
    assert np.all(np.isfinite(entropy(spec, dist_tf, keras_model.log_std).numpy()))


def test_keras_weights_round_trip_in_layout_order():
    spec = networks.spec_from_spaces(*SPACES["box"], DEFAULT_MODEL)
    weights = networks.init_weights(spec, np.random.default_rng(3))
    model = ActorCritic(spec)
    model.set_weights(weights)
    for a, b in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="expected shape"):
        model.set_weights([np.zeros((1, 1), np.float32)] + weights[1:])


def test_image_observations_get_a_conv_torso_and_tf_forward():
    from tests.helpers.fakes import ImageEnv

    env = ImageEnv()
    spec = networks.spec_from_spaces(env.observation_space, env.action_space, DEFAULT_MODEL)
    assert not spec.numpy_forward_ok and spec.torso[0].kind == "conv"
    from relayrl.models.policy import Policy

    policy = Policy(spec, env.action_space, seed=0)
    policy.set_weights(networks.init_weights(spec, np.random.default_rng(0)), 0)
    obs = np.stack([env.observation_space.sample() for _ in range(5)])
    actions, extras = policy.act(obs)
    assert actions.shape == (5,) and extras["vf_preds"].shape == (5,)


def test_orthogonal_init_gains():
    spec = networks.spec_from_spaces(*SPACES["discrete"], DEFAULT_MODEL)
    w = networks.init_weights(spec, np.random.default_rng(0))
    hidden = w[2]  # 64x64 hidden kernel of the policy: orthogonal * sqrt(2)
    np.testing.assert_allclose(hidden.T @ hidden, 2.0 * np.eye(64), atol=1e-4)


def test_uniform_fan_in_init_draws_kernels_and_biases_within_one_over_sqrt_fan_in():
    """model.weight_init="uniform_fan_in" (the zoo's MuJoCo PPO, ortho_init=False): every kernel and bias
    U(+-1/sqrt(fan_in)), biases not zero, the log std still log_std_init."""
    model = dict(DEFAULT_MODEL, weight_init="uniform_fan_in", fcnet_hiddens=[256, 256], log_std_init=-2.0)
    spec = networks.spec_from_spaces(*SPACES["box"], model)
    w = networks.init_weights(spec, np.random.default_rng(0))
    layers = networks.all_layers(spec)
    kernels = [i for i, a in enumerate(w) if a.ndim == 2]  # each kernel is followed by its bias
    assert len(kernels) == len(layers)
    for layer, i in zip(layers, kernels):
        kernel, bias = w[i], w[i + 1]
        bound = 1.0 / np.sqrt(layer.shape[0])
        assert np.abs(kernel).max() <= bound and np.abs(bias).max() <= bound and np.any(bias != 0)
        # uniform on [-b, b]: std b/sqrt(3) (the 256x256 kernels have 65k draws: within 2%)
        if kernel.size > 10_000:
            assert abs(kernel.std() / (bound / np.sqrt(3)) - 1) < 0.02
    log_std = w[2 * (len(spec.torso) + len(spec.pi))]  # after the policy head's kernel and bias
    np.testing.assert_array_equal(log_std, [-2.0, -2.0])


def test_weight_init_is_refused_with_a_custom_model_and_checked_by_the_config():
    from relayrl import PPOConfig

    with pytest.raises(ValueError, match="model.weight_init is for relayrl's own networks"):
        networks.spec_from_spaces(
            *SPACES["box"], dict(DEFAULT_MODEL, weight_init="uniform_fan_in", custom_model="m:M")
        )
    with pytest.raises(
        ValueError,
        match=r"model\['weight_init'\] = 'xavier': allowed: one of 'auto', 'orthogonal', 'uniform_fan_in'",
    ):
        PPOConfig().training(model={"weight_init": "xavier"})
    # a custom model's config saved before "auto" holds the old default, "orthogonal": still loads
    saved = dict(DEFAULT_MODEL, weight_init="orthogonal", custom_model="tests.helpers.custom_models:ActorNet")
    assert networks.spec_from_spaces(*SPACES["box"], saved, head="deterministic").custom is not None


def test_auto_weight_init_starts_td3s_actor_as_sb3_and_every_other_network_orthogonal():
    """weight_init "auto" (the default): TD3's deterministic actor starts U(+-1/sqrt(fan_in)), torch's
    nn.Linear default that SB3, CleanRL and the TD3 paper's code start it with (W11-Hopper measured it
    above relayrl's orthogonal start on all three seeds); SAC, PPO and the rest stay orthogonal, and an
    explicit choice wins."""
    from relayrl import PPOConfig, SACConfig, TD3Config
    from relayrl.algorithms.sac import SAC
    from relayrl.algorithms.td3 import TD3

    def spec(model, head=None, space="box"):
        return networks.spec_from_spaces(*SPACES[space], model, head=head)

    td3 = spec(TD3Config().model, TD3.continuous_head)
    assert TD3Config().model["weight_init"] == "auto" and td3.weight_init == "uniform_fan_in"
    weights = networks.init_weights(td3, np.random.default_rng(0))
    for layer, i in zip(networks.all_layers(td3), [i for i, a in enumerate(weights) if a.ndim == 2]):
        bound = 1.0 / np.sqrt(layer.shape[0])
        assert np.abs(weights[i]).max() <= bound and np.any(weights[i + 1] != 0)  # not the 0.01 gain
    assert spec(SACConfig().model, SAC.continuous_head).weight_init == "orthogonal"
    assert spec(PPOConfig().model).weight_init == "orthogonal"
    assert spec(PPOConfig().model, space="discrete").weight_init == "orthogonal"
    explicit = TD3Config().training(model={"weight_init": "orthogonal"}).model
    assert spec(explicit, TD3.continuous_head).weight_init == "orthogonal"
