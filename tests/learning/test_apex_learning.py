"""Ape-X with 2 Ray workers (tuned defaults) reaches episode_reward_mean 475 on CartPole-v1 even though a
replay shard actor is killed on the way: it comes back from its snapshot, the workers resend the uploads the
snapshot lacks, and learning carries on."""

import pytest
import ray

from relayrl import ApeXConfig

pytestmark = pytest.mark.learning


def test_apex_two_workers_solve_cartpole_through_a_replay_shard_failure(ray_session):
    algo = ApeXConfig.from_tuned("CartPole-v1").rollouts(num_rollout_workers=2).debugging(seed=0).build()
    killed_at = None
    try:
        while True:
            result = algo.train()
            if (
                killed_at is None
                and result["timesteps_total"] >= 30_000
                and all(s is not None for s in algo.replay.snapshots)
            ):
                ray.kill(algo.replay.shards[0], no_restart=True)
                killed_at = result["timesteps_total"]
            if result["episode_reward_mean"] >= 475 or result["timesteps_total"] >= 600_000:
                break
        dropped = [c["dropped"] for c in ray.get([a.flush_replay.remote() for a in algo.workers.actors])]
    finally:
        algo.stop()
    assert killed_at is not None and result["learner/replay_shard_restarts"] == 1
    assert dropped == [0, 0]  # every upload after the snapshot was still held by its worker and resent
    assert result["episode_reward_mean"] >= 475, result
