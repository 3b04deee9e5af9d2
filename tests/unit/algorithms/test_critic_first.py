"""SAC and TD3 step their critics first and then the actor against the updated critics (the TD3 paper's
order, CleanRL's and SB3's): the actor's step depends on how far the critics just moved. Before this, both
came from one forward pass, so the actor's step was the same whatever the critics' learning rate."""

import numpy as np
import pytest

from relayrl.algorithms.sac import SAC, SACConfig
from relayrl.algorithms.td3 import TD3, TD3Config
from relayrl.models import networks
from tests.helpers.transitions import ACT, OBS, ROWS, batch


def actor_after_one_step(algo, config, critic_lr: float) -> list[np.ndarray]:
    config.training(lr=critic_lr, actor_lr=1e-3, train_batch_size=ROWS, model={"fcnet_hiddens": [16]})
    config.debugging(seed=0)
    spec = networks.spec_from_spaces(OBS, ACT, config.model, head=algo.continuous_head)
    learner = algo.build_learner(spec, config)
    learner.set_weights(networks.init_weights(spec, np.random.default_rng(0)))  # as the algorithm does
    learner.update(batch(), np.arange(ROWS, dtype=np.int32)[None])
    return learner.get_weights()  # the actor's (what workers get)


@pytest.mark.parametrize(
    "algo, make_config",
    [(SAC, lambda: SACConfig()), (TD3, lambda: TD3Config().training(policy_delay=1))],
    ids=["sac", "td3"],
)
def test_the_actor_steps_against_the_critics_updated_in_the_same_step(algo, make_config):
    still = actor_after_one_step(algo, make_config(), critic_lr=1e-12)  # critics practically unmoved
    moved = actor_after_one_step(algo, make_config(), critic_lr=0.5)  # critics moved a lot first
    assert max(float(np.abs(a - b).max()) for a, b in zip(still, moved)) > 1e-6
    # same critic learning rate twice: the difference above comes from the critics' step, nothing else
    again = actor_after_one_step(algo, make_config(), critic_lr=0.5)
    for a, b in zip(moved, again):
        np.testing.assert_array_equal(a, b)
