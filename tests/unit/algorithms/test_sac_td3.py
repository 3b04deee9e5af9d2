"""SAC and TD3 pieces: both losses on hand-set tiny networks (arithmetic in comments), the squashed-Gaussian
log-probability, the learner's variable groups (each optimiser follows its own loss; TD3's delayed actor and
targets), per-worker exploration noise, and the action-space check."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.algorithms.sac import SAC, SACConfig, sac_loss
from relayrl.algorithms.td3 import TD3, TD3Config, td3_loss
from relayrl.models import networks
from relayrl.models.actor_critic_models import SACModel, TD3Model
from relayrl.models.tf_import import tf
from relayrl.sampling.settings import Exploration
from tests.helpers import transitions

OBS, ACT = gym.spaces.Box(-9, 9, (1,), np.float32), gym.spaces.Box(-2, 2, (1,), np.float32)
TINY = {"fcnet_hiddens": [], "fcnet_activation": "relu"}  # actor: one dense layer obs -> head
HALF_LOG_2PI = 0.9189385  # 0.5 * ln(2 pi)

MB = {
    "obs": tf.constant([[1.0], [2.0]]),
    "actions": tf.constant([[0.5], [-0.5]]),
    "rewards": tf.constant([1.0, 0.5]),
    "next_obs": tf.constant([[3.0], [1.0]]),
    "discounts": tf.constant([0.9, 0.0]),
    "weights": tf.constant([1.0, 1.0]),
}


def set_critics(twin, c1, c2):
    """Q_j(s, a) = relu(c_j[0] * s + c_j[1] * a): one hidden unit, output weight 1, zero biases."""
    twin.set_weights(
        [
            np.array([[[c1[0]], [c1[1]]], [[c2[0]], [c2[1]]]], np.float32),
            np.zeros((2, 1, 1), np.float32),
            np.ones((2, 1, 1), np.float32),
            np.zeros((2, 1, 1), np.float32),
        ]
    )


def actor_weights(kernel, bias):
    """Actor head = obs * kernel + bias (no hidden layers); the unused value branch is zero."""
    return [
        np.array([kernel], np.float32),
        np.array(bias, np.float32),
        np.zeros((1, 1), np.float32),
        np.zeros(1, np.float32),
    ]


def sac_model():
    config = SACConfig().training(model=TINY, critic_hiddens=[1], initial_alpha=0.5).debugging(seed=0)
    spec = networks.spec_from_spaces(OBS, ACT, config.model, head="squashed_gaussian")
    model = SACModel(spec, config)
    model.set_weights(actor_weights([0.0, 0.0], [0.0, 0.0]))  # mean 0, log_std 0: u = eps, a = tanh(eps)
    set_critics(model.critics, (1.0, 1.0), (2.0, 1.0))  # Q1 = s + a, Q2 = 2s + a
    set_critics(model.target_critics, (1.0, 1.0), (0.5, 1.0))  # Q1' = s + a, Q2' = 0.5s + a
    return model


def test_sac_loss_by_hand():
    model = sac_model()
    zeros = tf.zeros((2, 1))
    losses, m = sac_loss(model, MB, {}, target_entropy=-1.0, noise=(zeros, zeros))
    # eps = 0: a' = tanh(0) = 0, log pi(a'|s') = -0.5 ln 2pi - log_std - log(1 - tanh(0)^2) = -0.9189385
    # row 1: s' = 3: Q1' = 3, Q2' = 1.5 -> min 1.5;
    #        soft value 1.5 - alpha * logp = 1.5 + 0.5 * 0.9189385 = 1.9594692
    #        y = 1 + 0.9 * 1.9594692 = 2.7635223 ; row 2 terminated: y = 0.5
    np.testing.assert_allclose(m["target_mean"].numpy(), (2.7635223 + 0.5) / 2, atol=1e-5)
    # Q(s, a): row 1 (1, 0.5): Q1 = 1.5, Q2 = 2.5 ; row 2 (2, -0.5): Q1 = 1.5, Q2 = 3.5
    # critic: 0.5 * mean[(1.5 - 2.7635)^2 + (2.5 - 2.7635)^2, (1.5 - 0.5)^2 + (3.5 - 0.5)^2]
    #       = 0.5 * mean[1.5964887 + 0.0694440, 1 + 9] = 0.5 * 5.8329664 = 2.9164832
    assert float(losses["critic"]) == pytest.approx(2.9164832, abs=1e-5)
    # actor at a = tanh(0) = 0: min(Q1, Q2)(s, 0) = min(s, 2s) = s = [1, 2]
    # mean(alpha * logp - min Q) = 0.5 * -0.9189385 - mean(1, 2) = -0.4594692 - 1.5 = -1.9594692
    assert float(losses["actor"]) == pytest.approx(-1.9594692, abs=1e-5)
    # temperature: -mean(log_alpha * (logp + target_entropy)) = -(ln 0.5 * (-0.9189385 - 1)) = -1.3301068
    # (entropy 0.92 is above the target -1, so the gradient +1.92 on log_alpha lowers alpha)
    assert float(losses["alpha"]) == pytest.approx(-1.3301068, abs=1e-5)
    assert float(m["entropy"]) == pytest.approx(HALF_LOG_2PI, abs=1e-5)


def test_squashed_gaussian_log_prob_by_hand():
    from relayrl.models import distributions
    from relayrl.models.tf_distributions import squashed_gaussian_sample

    dist_inputs = np.array([[0.5, np.log(2.0)]], np.float32)  # mean 0.5, std 2
    noise = np.array([[0.25]], np.float32)
    a, logp = squashed_gaussian_sample(tf.constant(dist_inputs), tf.constant(noise))
    # u = 0.5 + 2 * 0.25 = 1, a = tanh(1) = 0.7615942
    # log N(u) = -0.5 * 0.25^2 - 0.5 ln 2pi - ln 2 = -0.03125 - 0.9189385 - 0.6931472 = -1.6433357
    # minus log(1 - tanh(1)^2) = -ln(0.4199743) = +0.8675617 -> logp = -0.7757741
    assert float(a[0, 0]) == pytest.approx(0.7615942, abs=1e-6)
    assert float(logp[0]) == pytest.approx(-0.7757741, abs=1e-5)
    # the worker's numpy sampler draws the same action from the same noise
    np.testing.assert_allclose(
        distributions.sample("squashed_gaussian", (1,), dist_inputs, None, noise), a.numpy(), atol=1e-6
    )
    # far in the tail the stable form stays finite:
    # u = 20 -> log(1 - tanh^2) = 2 (ln 2 - 20 - softplus(-40)) = -38.6137
    _, logp = squashed_gaussian_sample(tf.constant([[20.0, 0.0]]), tf.constant([[0.0]]))
    assert float(logp[0]) == pytest.approx(-HALF_LOG_2PI + 2 * (20 - np.log(2.0)), abs=1e-3)


def td3_model(policy_delay=2):
    config = (
        TD3Config()
        .training(model=TINY, critic_hiddens=[1], policy_delay=policy_delay, tau=0.5)
        .debugging(seed=0)
    )
    spec = networks.spec_from_spaces(OBS, ACT, config.model, head="deterministic")
    model = TD3Model(spec, config)
    model.set_weights(
        actor_weights([0.0], [np.arctanh(0.5)])
    )  # online actor: tanh(atanh 0.5) = 0.5 everywhere
    model.target_actor.set_weights(actor_weights([0.0], [0.0]))  # target actor: tanh(0) = 0
    set_critics(model.critics, (1.0, 1.0), (2.0, 1.0))  # Q1 = s + a, Q2 = 2s + a
    set_critics(model.target_critics, (1.0, 1.0), (0.5, 1.0))  # Q1' = s + a, Q2' = 0.5s + a
    return model


def test_td3_loss_by_hand():
    model = td3_model()
    mb = dict(MB, weights=tf.constant([1.0, 0.5]))
    losses, m = td3_loss(model, mb, {}, target_noise=0.2, noise_clip=0.5, noise=tf.constant([[1.0], [5.0]]))
    # smoothing: 0.2 * [1, 5] = [0.2, 1.0] clipped to +-0.5 -> [0.2, 0.5];
    # a' = clip(0 + noise, -1, 1) = [0.2, 0.5]
    # row 1: s' = 3, a' = 0.2: Q1' = 3.2, Q2' = 1.7 -> y = 1 + 0.9 * 1.7 = 2.53 ; row 2 terminated: y = 0.5
    np.testing.assert_allclose(m["target_mean"].numpy(), (2.53 + 0.5) / 2, atol=1e-5)
    # critic: mean(w * [(Q1 - y)^2 + (Q2 - y)^2]) = mean(1 * [(1.5 - 2.53)^2 + (2.5 - 2.53)^2], 0.5 * [1 + 9])
    #       = mean(1.0609 + 0.0009, 5) = 3.0309
    assert float(losses["critic"]) == pytest.approx(3.0309, abs=1e-5)
    # actor: -mean Q1(s, pi(s)) = -mean(1 + 0.5, 2 + 0.5) = -2
    assert float(losses["actor"]) == pytest.approx(-2.0, abs=1e-5)


def test_td3_targets_follow_only_on_delayed_steps():
    model = td3_model(policy_delay=2)  # tau 0.5
    model.after_step(tf.constant(1, tf.int64))  # odd step: targets untouched
    assert model.target_actor.get_weights()[1][0] == pytest.approx(0.0)
    model.after_step(tf.constant(2, tf.int64))  # 0.5 * atanh(0.5) + 0.5 * 0 = 0.2746531
    assert model.target_actor.get_weights()[1][0] == pytest.approx(0.5 * np.arctanh(0.5), abs=1e-6)
    # critic 2's first kernel: 0.5 * [2, 1] + 0.5 * [0.5, 1] = [1.25, 1]
    np.testing.assert_allclose(model.target_critics.get_weights()[0][1, :, 0], [1.25, 1.0], atol=1e-6)


def pendulum_learner(algo, config):
    env = gym.make("Pendulum-v1")
    spec = networks.spec_from_spaces(
        env.observation_space, env.action_space, config.model, head=algo.continuous_head
    )
    learner = algo.build_learner(spec, config)
    learner.set_weights(networks.init_weights(spec, np.random.default_rng(0)))
    batch = transitions.batch(seed=1, rows=64, act_dim=1)
    return learner, batch, lambda k: np.arange(16 * k).reshape(k, 16) % 64


def test_td3_learner_delays_the_actor():
    config = (
        TD3Config()
        .training(
            model={"fcnet_hiddens": [8], "fcnet_activation": "relu"},
            critic_hiddens=[8],
            train_batch_size=16,
            policy_delay=2,
        )
        .debugging(seed=0)
    )
    learner, batch, idx = pendulum_learner(TD3, config)
    actor0, critic0 = learner.get_weights(), [v.numpy() for v in learner.model.critics.ordered_variables]
    learner.update(batch, idx(1))  # step 1: critics only
    assert all(np.array_equal(a, b) for a, b in zip(actor0, learner.get_weights()))
    assert not np.array_equal(critic0[0], learner.model.critics.ordered_variables[0].numpy())
    learner.update(batch, idx(3))  # steps 2, 3, 4: the actor steps on 2 and 4
    assert not np.array_equal(actor0[0], learner.get_weights()[0])
    assert (
        int(learner.optimizers["critic"].step.numpy()) == 4
        and int(learner.optimizers["actor"].step.numpy()) == 2
    )


def test_sac_learner_groups_follow_their_own_loss():
    # critic lr 0: the actor's loss runs through the critics but must not move them
    config = (
        SACConfig()
        .training(
            model={"fcnet_hiddens": [8], "fcnet_activation": "relu"},
            critic_hiddens=[8],
            train_batch_size=16,
            lr=1e-12,
            actor_lr=1e-2,
            alpha_lr=1e-2,
        )
        .debugging(seed=0)
    )
    learner, batch, idx = pendulum_learner(SAC, config)
    learner.set_lr(0.0)  # all groups to 0, then the actor and alpha back on
    learner.optimizers["actor"].lr.assign(1e-2)
    learner.optimizers["alpha"].lr.assign(1e-2)
    critic0, actor0 = [v.numpy() for v in learner.model.critics.ordered_variables], learner.get_weights()
    metrics = learner.update(batch, idx(4))
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(critic0, learner.model.critics.ordered_variables))
    assert not np.array_equal(actor0[0], learner.get_weights()[0])
    assert metrics["alpha"] < 1.0  # the initial entropy is above the target -1: alpha goes down
    assert set(metrics) >= {"critic_loss", "actor_loss", "alpha_loss", "entropy", "q_mean", "grad_gnorm"}


def test_td3_noise_spread_across_workers():
    explore = Exploration(sigma=0.1, sigma_max=0.4, num_workers=3)
    sigmas = [explore.for_worker(i).sigma for i in (1, 2, 3)]  # 0.1 * 4^(i / 2) for i = 0, 1, 2
    np.testing.assert_allclose(sigmas, [0.1, 0.2, 0.4])
    assert Exploration(sigma=0.1).for_worker(2).policy_settings() == {"sigma": 0.1}
    assert (
        TD3Config().rollouts(num_rollout_workers=3).training(exploration_noise_max=0.4).exploration_noise
        == 0.1
    )


@pytest.mark.parametrize("algo, config", [(SAC, SACConfig), (TD3, TD3Config)])
def test_discrete_actions_are_refused_with_a_hint(algo, config):
    with pytest.raises(
        ValueError, match=f"{algo.name} does not support the action space Discrete.*use dqn or ppo"
    ):
        algo.check_env(config().environment("CartPole-v1"))


def test_config_errors_name_the_field():
    with pytest.raises(ValueError, match="TD3Config.policy_delay = 0 is invalid"):
        TD3Config().training(policy_delay=0)
    with pytest.raises(ValueError, match="SACConfig.lr_schedule"):
        SACConfig().environment("Pendulum-v1").training(lr_schedule=[[0, 1e-3], [100, 1e-4]]).validate()


def test_configs_import_without_tensorflow():
    import subprocess
    import sys

    code = (
        "import sys; from relayrl import SACConfig, TD3Config; "
        "[c().environment('Pendulum-v1').validate() for c in (SACConfig, TD3Config)]; "
        "print('tensorflow' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


@pytest.mark.parametrize("config_cls", [SACConfig, TD3Config], ids=["sac", "td3"])
def test_exported_value_is_the_critics_minimum_at_the_served_action(config_cls, tmp_path):
    from relayrl.persistence.export import load_policy

    algo = (
        config_cls()
        .environment("Pendulum-v1")
        .training(model=TINY, critic_hiddens=[1])
        .debugging(seed=0)
        .build()
    )
    try:
        width = 2 if config_cls is SACConfig else 1  # SAC's head: [mean, log_std]; TD3's: the action
        kernel, bias = np.zeros((3, width), np.float32), np.zeros(width, np.float32)
        kernel[0, 0], bias[0] = 0.5, 0.1  # mean = 0.5 * obs[0] + 0.1
        algo.learner.set_weights([kernel, bias, np.zeros((3, 1), np.float32), np.zeros(1, np.float32)])
        # Q1 = relu(obs[0] + 2 a), Q2 = relu(2 obs[0] + a): one hidden unit, output weight 1, zero biases
        first = np.zeros((2, 4, 1), np.float32)
        first[0, 0, 0], first[0, 3, 0], first[1, 0, 0], first[1, 3, 0] = 1.0, 2.0, 2.0, 1.0
        algo.learner.model.critics.set_weights(
            [
                first,
                np.zeros((2, 1, 1), np.float32),
                np.ones((2, 1, 1), np.float32),
                np.zeros((2, 1, 1), np.float32),
            ]
        )
        act, value = load_policy(algo.export_policy(str(tmp_path / "policy")))
    finally:
        algo.stop()
    obs = np.array([[1.0, 0.0, 2.0], [0.5, 0.5, -1.0]], np.float32)
    a = np.tanh(0.5 * obs[:, 0] + 0.1)  # the served action in the critics' [-1, 1] scale
    np.testing.assert_allclose(act(obs)[:, 0], 2.0 * a, rtol=1e-5)  # Pendulum's bounds are [-2, 2]
    np.testing.assert_allclose(value(obs), np.minimum(obs[:, 0] + 2 * a, 2 * obs[:, 0] + a), rtol=1e-5)
