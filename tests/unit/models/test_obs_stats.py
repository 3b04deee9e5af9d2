"""model.normalize_obs: running moments merged exactly, the same normalisation in the workers' numpy
forward pass and the learner's Keras model, and statistics that ride with the broadcast weights."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl import PPOConfig
from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks, numpy_forward
from relayrl.models.obs_stats import RunningMoments, moments


def test_merged_moments_equal_the_moments_of_all_rows():
    rng = np.random.default_rng(0)
    parts = [rng.normal(3.0, s, (n, 4)) for n, s in [(7, 1.0), (1, 2.0), (50, 0.5), (0, 1.0), (13, 9.0)]]
    running = RunningMoments((4,))
    for part in parts:
        running.merge(*moments(part))
    everything = np.concatenate(parts)
    assert running.count == len(everything)
    np.testing.assert_allclose(running.mean, everything.mean(axis=0), rtol=1e-12)
    np.testing.assert_allclose(running.std, np.sqrt(everything.var(axis=0) + 1e-8), rtol=1e-12)
    restored = RunningMoments((4,))
    restored.load(running.state())
    np.testing.assert_array_equal(restored.mean, running.mean)
    np.testing.assert_array_equal(restored.m2, running.m2)


def test_numpy_and_keras_normalise_alike():
    from relayrl.models.keras_models import ActorCritic
    from relayrl.models.tf_import import tf

    obs_space, act_space = gym.spaces.Box(-50, 50, (3,)), gym.spaces.Box(-1, 1, (2,))
    spec = networks.spec_from_spaces(obs_space, act_space, dict(DEFAULT_MODEL, normalize_obs=True))
    rng = np.random.default_rng(1)
    weights = networks.init_weights(spec, rng)
    weights[-2:] = [np.array([5.0, -3.0, 0.0], np.float32), np.array([2.0, 0.5, 10.0], np.float32)]
    keras_model = ActorCritic(spec)
    keras_model.set_weights(weights)
    np_model = numpy_forward.NumpyActorCritic(spec)
    np_model.set_weights(weights)
    obs = rng.uniform(-50, 50, (64, 3)).astype(np.float32)  # far enough out that the +-10 clip applies
    dist_tf, v_tf = keras_model(tf.constant(obs))
    np.testing.assert_allclose(np_model.dist_inputs(obs), dist_tf.numpy(), atol=1e-5)
    np.testing.assert_allclose(np_model.value(obs), v_tf.numpy(), atol=1e-5)
    assert len(keras_model.ordered_variables) == len(weights) - 2  # the statistics are never trained
    for got, want in zip(keras_model.get_weights(), weights):
        np.testing.assert_array_equal(got, want)


def test_ppo_broadcasts_the_statistics_of_the_observations_it_saw():
    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .rollouts(num_envs_per_worker=4, rollout_fragment_length=50)
        .training(train_batch_size=200, sgd_minibatch_size=100, num_sgd_iter=1, model={"normalize_obs": True})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        seen = []
        original_sample = algo.workers.sample

        def recording_sample(*args, **kwargs):
            fragments = original_sample(*args, **kwargs)
            seen.extend(f.data["obs"] for f in fragments)
            return fragments

        algo.workers.sample = recording_sample
        for _ in range(3):
            algo.train()
        everything = np.concatenate(seen)
        mean, std = algo.learner.get_weights()[-2:]
        np.testing.assert_allclose(mean, everything.mean(axis=0), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(std, np.sqrt(everything.var(axis=0) + 1e-8), rtol=1e-4)
        worker_weights, version = algo.workers.worker.get_weights()
        assert version == algo.weights_version
        np.testing.assert_array_equal(worker_weights[-1], std)
        # the exported model and evaluation see the same statistics (they read the learner's weights)
        assert np.isfinite(algo.evaluate(num_episodes=1)["episode_reward_mean"])
    finally:
        algo.stop()


def test_unsupported_algorithms_and_spaces_are_refused():
    from relayrl import DQNConfig

    with pytest.raises(ValueError, match="normalize_obs = True is not supported by DQN; allowed with: ppo"):
        DQNConfig().environment("CartPole-v1").training(model={"normalize_obs": True}).build()
    with pytest.raises(ValueError, match="normalize_obs needs a Box observation space"):
        PPOConfig().environment("FrozenLake-v1").training(model={"normalize_obs": True}).build()


def test_scaled_rewards_divide_by_the_std_of_the_discounted_return():
    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .rollouts(num_envs_per_worker=2, rollout_fragment_length=300)
        .training(train_batch_size=600, scale_rewards=True, gamma=0.9)
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        worker = algo.workers.worker
        fragment = worker.sample()
        assert len(fragment.episode_returns) == 2 and np.all(fragment.episode_returns < -100)  # env units
        # the scaling itself, against a naive per-env loop over a second fragment's worth of rewards
        rng = np.random.default_rng(0)
        rewards = rng.normal(-3.0, 2.0, (40, 2)).astype(np.float32)
        dones = np.zeros((40, 2), bool)
        dones[[9, 25], 0] = True
        dones[31, 1] = True
        valid = np.ones((40, 2), bool)
        valid[[10, 26], 0] = False  # NEXT_STEP reset steps after each done
        valid[32, 1] = False
        expected = RunningMoments(())
        expected.load(worker.return_moments.state())
        all_returns = []
        g = worker.disc_return.copy()
        for t in range(40):
            g = g * 0.9 + rewards[t]
            all_returns.append(g.copy())
            g[dones[t]] = 0.0
        expected.merge(
            *moments(np.array(all_returns)[valid])
        )  # the returns of the valid steps join the moments
        scaled = worker._scaled_rewards(rewards, dones, valid)
        assert worker.return_moments.count == expected.count
        np.testing.assert_allclose(worker.return_moments.m2, expected.m2, rtol=1e-12)
        scale = np.sqrt(expected.m2 / expected.count + 1e-8)
        np.testing.assert_allclose(scaled, np.clip(rewards / scale, -10, 10), rtol=1e-5)
        np.testing.assert_allclose(worker.disc_return, g)
        assert scale > 1.0 and np.abs(fragment.data["value_targets"]).max() < 50  # targets in scaled units
    finally:
        algo.stop()


def test_exported_models_carry_the_statistics(tmp_path):
    from relayrl.persistence.export import load_policy

    config = (
        PPOConfig()
        .environment("Pendulum-v1")
        .rollouts(num_envs_per_worker=4, rollout_fragment_length=50)
        .training(train_batch_size=200, sgd_minibatch_size=100, num_sgd_iter=1, model={"normalize_obs": True})
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        for _ in range(2):
            algo.train()
        mean, std = algo.learner.get_weights()[-2:]
        assert not np.allclose(std, 1.0)  # real statistics, not the initial identity
        net = numpy_forward.NumpyActorCritic(algo.spec)
        net.set_weights(algo.learner.get_weights())
        obs = (np.random.default_rng(0).uniform(-1, 1, (64, 3)) * [1, 1, 8]).astype(np.float32)
        action, value = load_policy(algo.export_policy(str(tmp_path / "saved")))
        np.testing.assert_allclose(value(obs), net.value(obs), rtol=1e-4, atol=1e-4)
        low, high = algo.action_space.low, algo.action_space.high
        np.testing.assert_allclose(
            action(obs), np.clip(net.dist_inputs(obs), low, high), rtol=1e-4, atol=1e-4
        )
    finally:
        algo.stop()
