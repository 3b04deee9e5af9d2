"""PPO loss on a hand-set network, arithmetic in the comments (TF-Agents' testLoss style)."""

import math

import gymnasium as gym
import numpy as np
import pytest

from relayrl.algorithms.ppo import ppo_loss
from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks
from relayrl.models.keras_models import ActorCritic
from relayrl.models.tf_import import tf


def test_ppo_loss_by_hand():
    # No hidden layers: logits = x * [0, ln 3] and V = x * 1 for a 1-D observation x.
    model_cfg = dict(DEFAULT_MODEL, fcnet_hiddens=[])
    spec = networks.spec_from_spaces(gym.spaces.Box(-5, 5, (1,)), gym.spaces.Discrete(2), model_cfg)
    model = ActorCritic(spec)
    ln3 = math.log(3.0)
    model.set_weights(
        [
            np.array([[0.0, ln3]], np.float32),
            np.zeros(2, np.float32),  # policy kernel, bias
            np.array([[1.0]], np.float32),
            np.zeros(1, np.float32),
        ]
    )  # value kernel, bias
    # x = 1: logits [0, ln3] -> p = [1/4, 3/4];  x = 2: logits [0, ln9] -> p = [1/10, 9/10]
    # actions [1, 0] -> log pi = [ln 3/4, ln 1/10]; behaviour log-probs chosen so ratios are [1.5, 0.5]
    mb = {
        "obs": tf.constant([[1.0], [2.0]]),
        "actions": tf.constant([1, 0]),
        "logp": tf.constant([math.log(0.75 / 1.5), math.log(0.1 / 0.5)], tf.float32),
        "advantages": tf.constant([1.0, -1.0]),  # normalised: mean 0, std 1 -> unchanged
        "value_targets": tf.constant([2.0, 2.0]),
    }
    hp = {
        "clip_param": tf.constant(0.2),
        "entropy_coeff": tf.constant(0.01),
        "vf_loss_coeff": tf.constant(0.5),
    }
    loss, m = ppo_loss(model, mb, hp)
    # surrogate: min(1.5*1, 1.2*1) = 1.2;  min(0.5*-1, 0.8*-1) = -0.8;  mean 0.2 -> policy_loss -0.2
    assert float(m["policy_loss"]) == pytest.approx(-0.2, abs=1e-6)
    # V = [1, 2], targets [2, 2]: squared errors [1, 0] -> vf_loss 0.5
    assert float(m["vf_loss"]) == pytest.approx(0.5, abs=1e-6)
    # entropies: -(.25 ln .25 + .75 ln .75) = 0.562335;  -(.1 ln .1 + .9 ln .9) = 0.325083;  mean 0.443709
    assert float(m["entropy"]) == pytest.approx(0.443709, abs=1e-5)
    # total = -0.2 + 0.5 * 0.5 - 0.01 * 0.443709 = 0.045563
    assert float(loss) == pytest.approx(0.045563, abs=1e-5)
    # both ratios are outside [0.8, 1.2]
    assert float(m["clip_frac"]) == 1.0
    # k3 KL: ((1.5 - 1) - ln 1.5 + (0.5 - 1) - ln 0.5) / 2 = (0.094535 + 0.193147) / 2 = 0.143841
    assert float(m["kl"]) == pytest.approx(0.143841, abs=1e-5)


def test_vf_clip_param_caps_squared_error():
    spec = networks.spec_from_spaces(
        gym.spaces.Box(-5, 5, (1,)), gym.spaces.Discrete(2), dict(DEFAULT_MODEL, fcnet_hiddens=[])
    )
    model = ActorCritic(spec)
    model.set_weights(
        [
            np.zeros((1, 2), np.float32),
            np.zeros(2, np.float32),
            np.zeros((1, 1), np.float32),
            np.zeros(1, np.float32),
        ]
    )
    mb = {
        "obs": tf.constant([[1.0]]),
        "actions": tf.constant([0]),
        "logp": tf.constant([math.log(0.5)]),
        "advantages": tf.constant([0.0]),
        "value_targets": tf.constant([10.0]),
    }
    hp = {
        "clip_param": tf.constant(0.2),
        "entropy_coeff": tf.constant(0.0),
        "vf_loss_coeff": tf.constant(1.0),
        "vf_clip_param": tf.constant(4.0),
    }
    _, m = ppo_loss(model, mb, hp)
    assert float(m["vf_loss"]) == pytest.approx(4.0)  # (0 - 10)^2 = 100, capped at 4
