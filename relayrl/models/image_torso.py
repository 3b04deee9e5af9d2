"""The torso of a network over images (observations of shape (H, W, C), uint8, scaled inside the network)."""

from __future__ import annotations

from collections.abc import Sequence

# model.conv_filters = "auto": the Nature CNN (Mnih et al. 2015: 32 8x8/4, 64 4x4/2, 64 3x3/1, then a dense
# 512, all relu) for images of at least NATURE_MIN_SIDE pixels a side, the smallest it fits; smaller images
# get SMALL_CONV and the model's fcnet_hiddens / fcnet_activation.
NATURE_CONV = ((32, 8, 4), (64, 4, 2), (64, 3, 1))
NATURE_DENSE = (512,)
NATURE_MIN_SIDE = 36
SMALL_CONV = ((16, 8, 4), (32, 4, 2))


def image_torso(model: dict, obs_shape: tuple) -> tuple[Sequence, list[int], str]:
    """(conv [filters, kernel, stride] list, dense widths after it, their activation) for an image: the
    model's conv_filters with its fcnet_hiddens, or with "auto" the rule above."""
    if model["conv_filters"] != "auto":
        return model["conv_filters"], list(model["fcnet_hiddens"]), model["fcnet_activation"]
    if min(obs_shape[:2]) >= NATURE_MIN_SIDE:
        return NATURE_CONV, list(NATURE_DENSE), "relu"
    return SMALL_CONV, list(model["fcnet_hiddens"]), model["fcnet_activation"]
