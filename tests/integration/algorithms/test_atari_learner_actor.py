"""The GPU layout on Atari, exercised on CPU: PPO, IMPALA and DQN on 'ALE/Breakout-v5' with the learner in a
Ray actor (learner_placement='actor', what num_gpus > 0 picks) and a Ray rollout worker shipping uint8
frames (DQN: each frame once) through the object store."""

import os

import numpy as np
import pytest

from relayrl import DQNConfig, IMPALAConfig, PPOConfig

pytest.importorskip("ale_py")
SMALL = {
    "ppo": lambda: PPOConfig().training(train_batch_size=64, sgd_minibatch_size=32, num_sgd_iter=1),
    "impala": lambda: IMPALAConfig().training(train_batch_size=32),
    "dqn": lambda: DQNConfig().training(train_batch_size=16, replay_buffer_capacity=256, learning_starts=32),
}


@pytest.mark.parametrize("algo_name", sorted(SMALL))
def test_atari_learner_in_a_ray_actor_fed_by_a_ray_worker(ray_session, algo_name):
    config = (
        SMALL[algo_name]()
        .environment("ALE/Breakout-v5")
        .rollouts(num_rollout_workers=1, num_envs_per_worker=2, rollout_fragment_length=16)
        .resources(learner_placement="actor")
        .debugging(seed=0)
    )
    algo = config.build()
    try:
        assert algo.learner.placement["pid"] != os.getpid()
        before = algo.learner.get_weights()
        for _ in range(3):
            result = algo.train()
        assert result["timesteps_total"] >= 64
        assert np.isfinite(result["episode_reward_mean"]) or result["episodes_total"] == 0
        # uint8 frames on the wire: a fragment of 32 steps is far below 32 float32 (84, 84, 4) stacks
        assert 0 < result["workers/fragment_bytes_mean"] < 32 * 84 * 84 * 4 * 4
        moved = max(float(np.abs(w - w0).max()) for w, w0 in zip(algo.learner.get_weights(), before))
        assert moved > 0  # the actor's updates reached the weights the driver reads back
    finally:
        algo.stop()
