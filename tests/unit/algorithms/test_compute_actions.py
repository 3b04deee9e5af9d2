"""algo.compute_single_action / compute_actions: env actions from the current weights for DQN, PPO with a
continuous (bounded) action space and tabular Q-learning; hostile observations refused in one line."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from relayrl.algorithms.dqn import DQNConfig
from relayrl.algorithms.ppo import PPOConfig
from relayrl.algorithms.qlearning import QLearningConfig


@pytest.fixture(scope="module")
def dqn():
    config = DQNConfig().environment("CartPole-v1").rollouts(num_rollout_workers=0).debugging(seed=0)
    with config.training(learning_starts=64, train_batch_size=32).build() as algo:
        algo.train()
        yield algo


def test_dqn_single_action_is_the_greedy_q_action(dqn):
    obs = np.array([0.01, -0.02, 0.03, 0.04], np.float32)
    action = dqn.compute_single_action(obs)
    assert isinstance(action, int) and action in (0, 1)
    q = dqn.export_model().head(obs[None]).numpy()[0]  # the learner's own network
    assert action == int(np.argmax(q))


def test_dqn_batch_matches_single_actions(dqn):
    obs = np.random.default_rng(0).normal(size=(8, 4)).astype(np.float32)
    batch = dqn.compute_actions(obs)
    assert batch.shape == (8,)
    assert [dqn.compute_single_action(o) for o in obs] == batch.tolist()
    explored = dqn.compute_actions(np.repeat(obs[:1], 200, axis=0), explore=True)
    assert set(explored.tolist()) <= {0, 1}


def test_dqn_actions_follow_new_weights(dqn):
    obs = np.random.default_rng(1).normal(size=(64, 4)).astype(np.float32)
    before = dqn.compute_actions(obs)
    weights = dqn.learner.get_weights()
    flipped = [w.copy() for w in weights]
    head = len(dqn.spec.torso) + len(dqn.spec.pi) - 1  # the Q head's layer: kernel, bias at 2 * head
    flipped[2 * head], flipped[2 * head + 1] = -flipped[2 * head], -flipped[2 * head + 1]  # argmax flips
    dqn.learner.set_weights(flipped)
    dqn.weights_version += 1  # what publish_weights does
    after = dqn.compute_actions(obs)
    dqn.learner.set_weights(weights)
    dqn.weights_version += 1
    assert (before != after).any()


def test_ppo_continuous_actions_are_within_the_env_bounds():
    config = PPOConfig().environment("Pendulum-v1").rollouts(num_rollout_workers=0).debugging(seed=0)
    with config.training(train_batch_size=128, sgd_minibatch_size=64, num_sgd_iter=1).build() as algo:
        space = gym.make("Pendulum-v1").action_space
        obs = np.array([1.0, 0.0, 0.5], np.float32)
        action = algo.compute_single_action(obs)
        assert action.shape == (1,) and space.contains(action.astype(np.float32))
        batch = algo.compute_actions(np.repeat(obs[None], 3, axis=0))
        np.testing.assert_allclose(batch, np.repeat(action[None], 3, axis=0), atol=1e-6)
        weights = algo.learner.get_weights()
        log_std = 2 * (len(algo.spec.torso) + len(algo.spec.pi))  # after the mean head's kernel and bias
        assert weights[log_std].shape == (1,)
        weights[log_std] = np.full(1, 3.0, np.float32)  # std e^3 = 20, ten times the bounds
        algo.learner.set_weights(weights)
        algo.weights_version += 1
        sampled = algo.compute_actions(np.repeat(obs[None], 500, axis=0), explore=True)
        assert sampled.shape == (500, 1)
        assert (sampled >= -2.0).all() and (sampled <= 2.0).all()  # clipped as the env would get them
        assert (sampled == 2.0).any() and (sampled == -2.0).any() and len(np.unique(sampled)) > 3


def test_q_learning_acts_greedily_on_its_table():
    config = QLearningConfig().environment("FrozenLake-v1").rollouts(num_rollout_workers=0).debugging(seed=0)
    with config.build() as algo:
        q = np.zeros((16, 4), np.float64)
        q[np.arange(16), np.arange(16) % 4] = 1.0  # state s: action s % 4
        algo.learner.q = q
        algo.weights_version += 1
        assert algo.compute_actions(np.arange(16)).tolist() == [s % 4 for s in range(16)]
        assert algo.compute_single_action(6) == 2


def test_ragged_observations_are_refused(dqn):
    with pytest.raises(ValueError, match=r"allowed: a batch of finite arrays of shape \(4,\)"):
        dqn.compute_actions([[0.0, 1.0, 2.0, 3.0], [0.0]])


@pytest.mark.parametrize(
    "obs",
    [
        np.zeros(3, np.float32),  # wrong shape
        np.array([np.nan, 0, 0, 0], np.float32),
        np.array(["a", "b", "c", "d"]),
        np.zeros((0, 4), np.float32),  # empty batch (compute_actions)
    ],
)
def test_hostile_observations_are_refused_in_one_line(dqn, obs):
    call = dqn.compute_actions if obs.ndim == 2 else dqn.compute_single_action
    with pytest.raises(ValueError, match=r"allowed: .*shape \(4,\)") as info:
        call(obs)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("state", [16, -1, 2.5, "3"])
def test_q_learning_refuses_states_outside_the_table(state):
    config = QLearningConfig().environment("FrozenLake-v1").rollouts(num_rollout_workers=0)
    with (
        config.build() as algo,
        pytest.raises(ValueError, match=r"allowed: a 1-D batch of integers in \[0, 16\)"),
    ):
        algo.compute_single_action(state)


class TinyImageEnv(gym.Env):
    """16x16 RGB observations, two actions: enough for a conv policy (TensorFlow forward pass)."""

    observation_space = gym.spaces.Box(0, 255, (16, 16, 3), np.uint8)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        return self.np_random.integers(0, 256, (16, 16, 3), dtype=np.uint8), {}

    def step(self, action):
        self.t += 1
        obs = self.np_random.integers(0, 256, (16, 16, 3), dtype=np.uint8)
        return obs, float(action), self.t >= 8, False, {}


def test_image_observations_through_a_conv_policy():
    config = (
        PPOConfig()
        .environment(lambda _cfg: TinyImageEnv())
        .rollouts(num_rollout_workers=0)
        .training(
            train_batch_size=32,
            sgd_minibatch_size=32,
            num_sgd_iter=1,
            model={"conv_filters": [[4, 4, 2], [4, 3, 2]], "fcnet_hiddens": [16]},
        )
        .evaluation(evaluation_interval=1, evaluation_episodes=2)
        .debugging(seed=0)
    )
    with config.build() as algo:
        assert algo.train()["evaluation/episode_len_mean"] == 8
        obs = np.random.default_rng(0).integers(0, 256, (5, 16, 16, 3), dtype=np.uint8)
        actions = algo.compute_actions(obs)
        assert actions.shape == (5,) and set(actions.tolist()) <= {0, 1}
        assert algo.compute_single_action(obs[0]) == actions[0]
        with pytest.raises(ValueError, match=r"allowed: one observation of the env, shape \(16, 16, 3\)"):
            algo.compute_single_action(obs[0, :8])
