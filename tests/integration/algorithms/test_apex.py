"""Ape-X on real Ray: per-worker epsilons, workers writing to sharded replay with initial priorities, a
learner that trains without waiting for workers and sends priorities back."""

import time

import cloudpickle
import numpy as np
import pytest
import ray

import tests.helpers.fakes
from relayrl import ApeXConfig
from tests.helpers.fakes import FaultyCartPole

cloudpickle.register_pickle_by_value(
    tests.helpers.fakes
)  # Ray workers get the fake env by value, not by import


def _worker_epsilons(algo) -> list[float]:
    return ray.get([a.__ray_call__.remote(lambda self: self.policy._epsilon) for a in algo.workers.actors])


def test_apex_workers_feed_shards_and_the_learner_trains(ray_session):
    config = _apex_config(apex_epsilon=0.4, apex_alpha=7.0, exploration_timesteps=1000)
    algo = config.build()
    try:
        np.testing.assert_allclose(_worker_epsilons(algo), [0.4, 0.4**8])  # built with their own epsilons
        algo.train()  # at most 200 of the warm-up's 1,000 steps sampled: every epsilon >= 0.8
        assert all(0.75 < eps <= 1.0 for eps in _worker_epsilons(algo))
        learned, lags = 0, []
        for _ in range(200):
            result = algo.train()
            learned += "learner/loss" in result
            if "workers/policy_lag_mean" in result:  # iterations that harvested fragments
                lags.append(result["workers/policy_lag_mean"])
            if learned >= 5:
                break
        assert learned >= 5 and np.isfinite(result["learner/loss"])
        sizes = ray.get([s.size.remote() for s in algo.replay.shards])
        assert all(n > 0 for n in sizes)
        # priorities came back from the learner: the trees no longer hold only the initial priorities
        totals = ray.get(
            [s.__ray_call__.remote(lambda self: self.buffer.tree.total) for s in algo.replay.shards]
        )
        assert all(t > 0 for t in totals)
        assert lags and min(lags) >= 0
        # past the warm-up, the calls launched sample with the workers' own epsilons
        while algo.timesteps_total < 1000:
            algo.train()
        _quiesce(algo)
        algo.sampling.harvest(block=True)
        _quiesce(algo)
        np.testing.assert_allclose(_worker_epsilons(algo), [0.4, 0.4**8])
    finally:
        algo.stop()


def _apex_config(**training):
    return (
        ApeXConfig()
        .environment("CartPole-v1")
        .rollouts(num_rollout_workers=2, num_envs_per_worker=4, rollout_fragment_length=25)
        .training(
            learning_starts=300,
            train_batch_size=32,
            updates_per_iteration=8,
            worker_cache_rows=100,
            num_replay_shards=2,
            **training,
        )
        .debugging(seed=0)
    )


def _quiesce(algo) -> list[dict]:
    """Let every in-flight sampling call finish, then flush the workers' caches: their upload counts."""
    while algo.sampling.in_flight:
        algo.sampling.harvest(block=True, relaunch=False)
    return ray.get([a.flush_replay.remote() for a in algo.workers.actors])


def test_sharded_samples_mix_the_shards_in_every_minibatch(ray_session):
    from relayrl.runtime.replay_actors import ShardedReplay

    replay = ShardedReplay(2, 2000, prioritized=True, seed=0)
    try:
        for i, shard in enumerate(replay.shards):  # shard i holds only rows tagged i, as if fed by worker i
            n = 1000
            ray.get(
                shard.add.remote(
                    {"obs": np.full((n, 1), i, np.float32), "actions": np.full(n, i)}, np.ones(n), -1, 0
                )
            )
        batch = replay.sample(16 * 64, beta=0.4)
        np.testing.assert_array_equal(batch["actions"], batch["shard"])  # rows keep their shard label
        shares = batch["shard"].reshape(16, 64).mean(axis=1)
        assert np.all((shares > 0.2) & (shares < 0.8)), shares
    finally:
        replay.stop()


def test_a_killed_replay_shard_is_restored_from_its_snapshot_without_losing_rows(ray_session):
    algo = _apex_config(replay_snapshot_every=2).build()
    try:
        learned = 0
        while learned < 4:
            learned += "learner/loss" in algo.train()
        assert all(s is not None for s in algo.replay.snapshots)
        snapshot_rows = int(algo.replay.snapshots[0]["meta"][2])
        for _ in range(3):  # rows uploaded after the snapshot: only the workers' caches still have them
            algo.train()
        ray.kill(algo.replay.shards[0], no_restart=True)  # the shard actor dies with its data
        for _ in range(10):
            result = algo.train()
        assert result["learner/replay_shard_restarts"] == 1
        assert np.isfinite(result["learner/loss"])
        counts = _quiesce(algo)
        stats = ray.get([s.stats.remote() for s in algo.replay.shards])
        assert stats[0]["size"] >= snapshot_rows
        # worker i feeds shard i % 2: every row each worker ever uploaded is in its shard exactly once
        for i, shard_stats in enumerate(stats):
            assert counts[i]["dropped"] == 0
            assert shard_stats["added_total"] == counts[i]["uploaded"], (i, shard_stats, counts)
    finally:
        algo.stop()


def test_apex_checkpoint_keeps_the_sharded_replay(ray_session, tmp_path):
    algo = _apex_config().build()
    try:
        learned = 0
        while learned < 2:
            learned += "learner/loss" in algo.train()
        _quiesce(algo)
        path = algo.save(str(tmp_path / "ckpt"))
        saved = [ray.get(s.state.remote()) for s in algo.replay.shards]
        updates_done = algo._updates_done
    finally:
        algo.stop()
    restored = _apex_config().build()
    try:
        restored.restore(path)
        assert restored._updates_done == updates_done
        for shard, state in zip(restored.replay.shards, saved):
            got = ray.get(shard.state.remote())
            assert got["applied"].size == 0  # new workers number their uploads anew
            for key in state:
                if key != "applied":
                    np.testing.assert_array_equal(got[key], state[key], err_msg=key)
        result = restored.train()  # replay is full enough already: it learns at once
        assert np.isfinite(result["learner/loss"])
    finally:
        restored.stop()


@pytest.mark.parametrize("fault,timeout", [("kill", 60.0), ("raise", 60.0), ("hang", 3.0)])
def test_apex_restarts_a_failed_worker_and_keeps_learning(ray_session, tmp_path, fault, timeout):
    config = (
        _apex_config()
        .environment(
            FaultyCartPole,
            env_config={"fault": fault, "at_step": 400, "marker": str(tmp_path / "fault.marker")},
        )
        .fault_tolerance(restart_backoff_s=0.1, sample_timeout_s=timeout)
    )
    algo = config.build()
    try:
        learned = 0
        # bounded by wall clock, not iterations: Ape-X iterations take milliseconds, so a count that covers
        # the hang's 3 s timeout on a quiet machine can run out before it on a loaded one
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            result = algo.train()
            learned += "learner/loss" in result
            if (tmp_path / "fault.marker").exists() and result["workers/restarts"] == 1 and learned >= 20:
                break
        counts = _quiesce(algo)
    finally:
        algo.stop()
    assert (tmp_path / "fault.marker").exists()
    assert result["workers/restarts"] == 1 and result["workers/healthy"] == 2
    assert np.isfinite(result["learner/loss"])
    assert all(c["uploaded"] > 0 for c in counts)  # the restarted worker feeds its shard again
