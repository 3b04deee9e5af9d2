"""Issue 17, defect 1: with the default seed=None, SAC's and TD3's target critics must start as copies of the
critics, as in CleanRL and Stable-Baselines3 (TD3's target actor gets the actor's weights with the algorithm's
initial set_weights). Before, each twin critic drew its own random weights and the targets began up to ~0.99
away, which takes ~1,000-2,000 critic steps to wash out."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.algorithms.sac import SACConfig
from relayrl.algorithms.td3 import TD3Config
from relayrl.models import networks
from relayrl.models.actor_critic_models import SACModel, TD3Model

OBS, ACT = gym.spaces.Box(-1, 1, (3,), np.float32), gym.spaces.Box(-2, 2, (1,), np.float32)


@pytest.mark.parametrize(
    "config_class, model_class, head",
    [
        (SACConfig, SACModel, "squashed_gaussian"),
        (TD3Config, TD3Model, "deterministic"),
    ],
)
def test_targets_start_equal_to_their_networks_without_a_seed(config_class, model_class, head):
    config = config_class()  # seed=None: the case that differed
    spec = networks.spec_from_spaces(OBS, ACT, config.model, head=head)
    model = model_class(spec, config)
    critics, targets = model.critics.get_weights(), model.target_critics.get_weights()
    assert len(critics) == len(targets) > 0
    for c, t in zip(critics, targets):
        np.testing.assert_array_equal(c, t)
    assert any(np.abs(c).max() > 0 for c in critics)  # real random weights, copied, not zeros
