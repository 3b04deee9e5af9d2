"""DQN pieces: the loss on hand-set Q-networks (arithmetic in comments), target updates, epsilon-greedy
acting, n-step transition rows from a real worker, and the action-space check."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.algorithms.dqn import DQNConfig
from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.models.policy import Policy
from relayrl.models.q_models import QModel, dqn_loss
from relayrl.models.tf_import import tf
from relayrl.sampling.rollout import RolloutWorker
from relayrl.sampling.settings import Exploration, SamplerSettings
from tests.helpers.fakes import CountdownEnv

SPEC = networks.spec_from_spaces(
    gym.spaces.Box(-9, 9, (1,)), gym.spaces.Discrete(2), dict(DEFAULT_MODEL, fcnet_hiddens=[])
)


def q_model(online_kernel, target_kernel, **kw):
    model = QModel(SPEC, dueling=False, target_update_freq=kw.get("freq", 1), tau=kw.get("tau"))
    zeros = [np.zeros(2, np.float32), np.zeros((1, 1), np.float32), np.zeros(1, np.float32)]
    model.set_weights([np.array([online_kernel], np.float32), *zeros])
    model.target.set_weights([np.array([target_kernel], np.float32), *zeros])
    return model


MB = {
    "obs": tf.constant([[1.0], [2.0]]),
    "actions": tf.constant([1, 0]),
    "rewards": tf.constant([1.0, 0.5]),
    "next_obs": tf.constant([[3.0], [1.0]]),
    "discounts": tf.constant([0.9, 0.0]),
    "weights": tf.constant([1.0, 0.5]),
}


def test_dqn_loss_by_hand_double_and_plain():
    # online Q(x) = [x, 2x]; target Q(x) = [x, 0.5x]
    model = q_model([1.0, 2.0], [1.0, 0.5])
    # taken: Q(1)[1] = 2, Q(2)[0] = 2
    # double: online argmax at s'=3 is action 1, target values it 0.5*3 = 1.5 -> y = 1 + 0.9*1.5 = 2.35,
    #         td = -0.35
    #         second row terminated (discount 0): y = 0.5, td = 1.5
    #         Huber(delta 1): 0.5*0.35^2 = 0.06125 ; 1.5 - 0.5 = 1.0 ;
    #         weighted mean (1*0.06125 + 0.5*1.0)/2 = 0.280625
    loss, m = dqn_loss(model, MB, {}, double_q=True, huber_delta=1.0)
    assert float(loss) == pytest.approx(0.280625, abs=1e-6)
    np.testing.assert_allclose(m["td_abs"].numpy(), [0.35, 1.5], atol=1e-6)
    # plain: max target Q at s'=3 is 3 -> y = 3.7, td = -1.7, Huber 1.7 - 0.5 = 1.2 ; (1.2 + 0.5)/2 = 0.85
    loss, _ = dqn_loss(model, MB, {}, double_q=False, huber_delta=1.0)
    assert float(loss) == pytest.approx(0.85, abs=1e-6)


def test_target_network_hard_and_soft_updates():
    model = q_model([1.0, 2.0], [0.0, 0.0], freq=3)
    for step in (1, 2):
        model.after_step(tf.constant(step, tf.int64))
        assert model.target.get_weights()[0].tolist() == [[0.0, 0.0]]
    model.after_step(tf.constant(3, tf.int64))  # every 3rd gradient step: copy
    assert model.target.get_weights()[0].tolist() == [[1.0, 2.0]]
    soft = q_model([1.0, 2.0], [0.0, 0.0], tau=0.25)
    soft.after_step(tf.constant(1, tf.int64))  # 0.25 * online + 0.75 * target
    np.testing.assert_allclose(soft.target.get_weights()[0], [[0.25, 0.5]])


def test_epsilon_greedy_acting():
    policy = Policy(SPEC, gym.spaces.Discrete(2), seed=0, explore={"epsilon": 0.0})
    policy.set_weights(
        [
            np.array([[1.0, 2.0]], np.float32),
            np.zeros(2, np.float32),
            np.zeros((1, 1), np.float32),
            np.zeros(1, np.float32),
        ],
        0,
    )
    x = np.full((4000, 1), 1.0, np.float32)  # Q = [1, 2]: greedy action 1
    assert np.all(policy.compute_actions(x) == 1)
    policy.set_explore({"epsilon": 1.0})
    share_of_zero = float(np.mean(policy.compute_actions(x) == 0))
    assert 0.45 < share_of_zero < 0.55  # uniformly random
    policy.set_explore({"epsilon": 0.2})
    assert 0.07 < float(np.mean(policy.compute_actions(x) == 0)) < 0.13  # eps/2 of the time


def test_worker_emits_n_step_transitions():
    probe = CountdownEnv({"terminate_at": 3})
    spec = networks.spec_from_spaces(probe.observation_space, probe.action_space, DEFAULT_MODEL)
    settings = SamplerSettings(
        env=CountdownEnv,
        env_config={"terminate_at": 3},
        num_envs=1,
        fragment_length=5,
        spec=spec,
        gamma=0.5,
        seed=0,
        postprocess="transitions",
        n_step=2,
        explore=Exploration(epsilon=0.5),
    )
    worker = RolloutWorker(settings)
    worker.set_weights(networks.init_weights(spec, np.random.default_rng(0)), 0)
    d = worker.sample().data
    # steps: obs 0,1,2 (terminates after 3 steps), reset step dropped, then obs 0 (cut by the fragment end)
    assert d["obs"][:, 0].tolist() == [0.0, 1.0, 2.0, 0.0]
    # 2-step returns: 1 + 0.5 = 1.5 bootstrapping from obs 2 with 0.25; 1.5 ending in termination -> 0;
    # last step of the episode: 1, terminated -> 0; new episode cut after 1 step: 1 with bootstrap 0.5 from
    # obs 1
    np.testing.assert_allclose(d["rewards"], [1.5, 1.5, 1.0, 1.0])
    np.testing.assert_allclose(d["discounts"], [0.25, 0.0, 0.0, 0.5])
    assert d["next_obs"][:, 0].tolist() == [2.0, 3.0, 3.0, 1.0]


def test_box_actions_are_refused_with_a_hint():
    from relayrl.algorithms.dqn import DQN

    with pytest.raises(ValueError, match="DQN does not support the action space Box.*use sac or td3"):
        DQN.check_env(DQNConfig().environment("Pendulum-v1"))


def test_q_table_update_by_hand():
    from relayrl.algorithms.qlearning import QTable

    table = QTable(n_states=3, n_actions=2, lr=0.5, gamma=0.9)
    table.q[2] = [1.0, 4.0]
    eye = np.eye(3, dtype=np.float32)
    batch = {
        "obs": eye[[0, 0]],
        "next_obs": eye[[2, 1]],
        "actions": np.array([1, 1]),
        "rewards": np.array([1.0, 0.0], np.float32),
        "discounts": np.array([0.9, 0.0], np.float32),
    }
    table.update(batch)
    # first: Q(0,1) += 0.5 * (1 + 0.9 * max(1, 4) - 0) = 0.5 * 4.6 = 2.3
    # second (terminal, in order): Q(0,1) += 0.5 * (0 + 0 - 2.3) = -1.15 -> 1.15
    assert table.q[0, 1] == pytest.approx(1.15)
    assert table.get_weights()[0][0, 1] == pytest.approx(1.15)


def test_apex_per_worker_epsilons():
    from relayrl.sampling.settings import Exploration

    explore = Exploration(epsilon=0.4, epsilon_alpha=7.0, num_workers=4)
    # eps_i = 0.4 ** (1 + 7 * i / 3) for i = 0..3 (worker_index = i + 1)
    got = [explore.for_worker(w).epsilon for w in (1, 2, 3, 4)]
    np.testing.assert_allclose(got, [0.4 ** (1 + 7 * i / 3) for i in range(4)])
    # plain DQN: the same epsilon everywhere
    assert Exploration(epsilon=0.3).for_worker(5).policy_settings() == {"epsilon": 0.3}
