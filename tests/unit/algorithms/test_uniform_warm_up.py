"""SAC and TD3 act uniformly at random over the action space until learning_starts (SB3, CleanRL), then
with their actor. A fresh TD3 actor gives tanh(~0) + N(0, 0.1): std 0.1, no action beyond |0.5|."""

import numpy as np
import pytest

from relayrl import SACConfig, TD3Config


@pytest.mark.parametrize("make_config", [SACConfig, TD3Config], ids=["sac", "td3"])
def test_actions_are_uniform_before_learning_starts_and_the_actors_after(make_config):
    config = make_config().environment("Pendulum-v1").rollouts(num_rollout_workers=0, num_envs_per_worker=4)
    config.rollouts(rollout_fragment_length=100).training(learning_starts=800, train_batch_size=64)
    with config.debugging(seed=0).build() as algo:
        algo.train()  # 400 env steps, all before learning_starts
        warm = algo.replay.sample(400)["actions"]  # network space [-1, 1] (the Box rescaled)
        assert abs(float(warm.std()) - np.sqrt(1 / 3)) < 0.06  # uniform on [-1, 1]: std 0.577
        assert 0.4 < float(np.mean(np.abs(warm) > 0.5)) < 0.6
        policy = algo.workers.worker.policy  # the in-process worker's
        assert policy._uniform
        algo.train()
        algo.train()  # the first fragment sampled at learning_starts: the actor's own actions
        assert not policy._uniform and algo.num_updates_total > 0
