"""model.conv_filters = "auto" (relayrl/models/image_torso.py): the Nature CNN with a dense 512 for images of
at least 36 x 36 pixels, the small stack with fcnet_hiddens below that; a list is used as given."""

import gymnasium as gym
import numpy as np
import pytest

from relayrl.core.knobs import DEFAULT_MODEL
from relayrl.models import networks


def torso(side: int, channels: int = 4, **model) -> list[tuple]:
    obs = gym.spaces.Box(0, 255, (side, side, channels), np.uint8)
    spec = networks.spec_from_spaces(obs, gym.spaces.Discrete(4), {**DEFAULT_MODEL, **model})
    return [(layer.kind, layer.shape, layer.stride, layer.activation) for layer in spec.torso]


@pytest.mark.parametrize("side, flat", [(84, 7 * 7 * 64), (36, 64)])
def test_auto_is_the_nature_cnn_for_images_big_enough(side, flat):
    assert torso(side) == [
        ("conv", (8, 8, 4, 32), 4, "relu"),
        ("conv", (4, 4, 32, 64), 2, "relu"),
        ("conv", (3, 3, 64, 64), 1, "relu"),
        ("dense", (flat, 512), 1, "relu"),  # fcnet_hiddens and fcnet_activation are not used
    ]


def test_auto_keeps_small_images_on_the_small_stack_and_fcnet_hiddens():
    assert torso(24, 3, fcnet_hiddens=[32]) == [
        ("conv", (8, 8, 3, 16), 4, "relu"),
        ("conv", (4, 4, 16, 32), 2, "relu"),
        ("dense", (32, 32), 1, "tanh"),
    ]


def test_a_list_of_filters_is_used_as_given_with_fcnet_hiddens():
    assert torso(84, conv_filters=[[8, 8, 4]], fcnet_hiddens=[16]) == [
        ("conv", (8, 8, 4, 8), 4, "relu"),
        ("dense", (20 * 20 * 8, 16), 1, "tanh"),
    ]
