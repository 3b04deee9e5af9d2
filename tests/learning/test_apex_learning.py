"""Ape-X with 2 Ray workers (tuned defaults) reaches episode_reward_mean 475 on CartPole-v1, even though one
replay shard actor is killed half way (it comes back from its snapshot)."""
import pytest
import ray

from relayrl import ApeXConfig

pytestmark = pytest.mark.learning


def test_apex_two_workers_solve_cartpole_through_a_replay_shard_failure(ray_session):
    algo = ApeXConfig.from_tuned("CartPole-v1").rollouts(num_rollout_workers=2).debugging(seed=0).build()
    killed = False
    try:
        while True:
            result = algo.train()
            if not killed and result["timesteps_total"] >= 30_000 and all(s is not None for s in algo.replay.snapshots):
                ray.kill(algo.replay.shards[0], no_restart=True)
                killed = True
            if result["episode_reward_mean"] >= 475 or result["timesteps_total"] >= 400_000:
                break
    finally:
        algo.stop()
    assert killed and result["learner/replay_shard_restarts"] == 1
    assert result["episode_reward_mean"] >= 475, result
