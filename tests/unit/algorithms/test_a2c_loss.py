"""The policy-gradient loss shared by A2C, REINFORCE, A3C and IMPALA, on a hand-set network; and the
batch preparation that tells REINFORCE with and without a baseline apart."""

import math

import gymnasium as gym
import numpy as np
import pytest

from relayrl.algorithms.a2c import a2c_loss, prepare_batch
from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.models.keras_models import ActorCritic
from relayrl.models.tf_import import tf


def test_a2c_loss_by_hand():
    # No hidden layers: logits = x * [0, ln 3] and V = x for a 1-D observation x.
    spec = networks.spec_from_spaces(
        gym.spaces.Box(-5, 5, (1,)), gym.spaces.Discrete(2), dict(DEFAULT_MODEL, fcnet_hiddens=[])
    )
    model = ActorCritic(spec)
    model.set_weights(
        [
            np.array([[0.0, math.log(3.0)]], np.float32),
            np.zeros(2, np.float32),
            np.array([[1.0]], np.float32),
            np.zeros(1, np.float32),
        ]
    )
    # x = 1: p = [1/4, 3/4]; x = 2: p = [1/10, 9/10]. Actions [1, 0] -> log pi = [ln .75, ln .1]
    mb = {
        "obs": tf.constant([[1.0], [2.0]]),
        "actions": tf.constant([1, 0]),
        "advantages": tf.constant([2.0, -1.0]),
        "value_targets": tf.constant([3.0, 2.0]),
    }
    hp = {"entropy_coeff": tf.constant(0.1), "vf_loss_coeff": tf.constant(0.5)}
    loss, m = a2c_loss(model, mb, hp)
    # policy: -(ln .75 * 2 + ln .1 * -1) / 2 = -(-0.575364 + 2.302585) / 2 = -0.863611
    assert float(m["policy_loss"]) == pytest.approx(-0.863611, abs=1e-5)
    # V = [1, 2], targets [3, 2]: squared errors [4, 0] -> 2
    assert float(m["vf_loss"]) == pytest.approx(2.0, abs=1e-6)
    # entropies 0.562335 and 0.325083 -> mean 0.443709
    assert float(m["entropy"]) == pytest.approx(0.443709, abs=1e-5)
    # total = -0.863611 + 0.5 * 2 - 0.1 * 0.443709 = 0.092018
    assert float(loss) == pytest.approx(0.092018, abs=1e-5)


def test_reinforce_batch_uses_returns_without_baseline():
    batch = {
        "advantages": np.array([1.0, -1.0], np.float32),
        "value_targets": np.array([5.0, 3.0], np.float32),
    }
    np.testing.assert_array_equal(prepare_batch(batch, normalize=False)["advantages"], [1.0, -1.0])
    np.testing.assert_array_equal(
        prepare_batch(batch, normalize=False, use_baseline=False)["advantages"], [5.0, 3.0]
    )
    # standardised: (5 - 4) / 1, (3 - 4) / 1
    np.testing.assert_allclose(
        prepare_batch(batch, normalize=True, use_baseline=False)["advantages"], [1.0, -1.0], atol=1e-6
    )
