"""The sharded Ray replay and the Redis backend fed compact rows (each frame once) hold and serve the same
transitions, bit for bit, as when fed whole obs / next_obs stacks: ReplayCache concatenating several fragments
per upload, a shard killed and restored from its snapshot (its frame streams too) with the uploads resent."""

import uuid

import gymnasium as gym
import numpy as np
import pytest
import ray

from relayrl.replay import UniformReplay
from relayrl.replay.redis_replay import RedisReplay
from tests.helpers.frame_envs import TRANSITIONS_SPEC, FragmentSource, stacked


def sources(num_workers=2, n_step=2):
    config = {"k": 4, "min_len": 1, "max_len": 6}
    return [
        FragmentSource(
            gym.vector.SyncVectorEnv([lambda: stacked(config)] * 2), w, 3, n_step, TRANSITIONS_SPEC
        )
        for w in range(num_workers)
    ]


def all_rows(state: dict, capacity: int) -> dict:
    buffer = UniformReplay(capacity)
    buffer.load_state({k: v for k, v in state.items() if k != "applied"})
    return buffer._gather(np.arange(buffer.size))


def assert_same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
        assert a[key].dtype == b[key].dtype, key


def test_sharded_replay_with_caches_and_a_restored_shard_holds_the_whole_stack_rows(ray_session):
    from relayrl.runtime.replay_actors import ReplayCache, ShardedReplay

    replays = [ShardedReplay(2, 60, seed=0) for _ in range(2)]  # [whole stacks, compact]
    try:
        caches = [[ReplayCache(r.shards[w % 2], flush_rows=7, source=w) for w in range(2)] for r in replays]
        feed = sources()

        def upload(rounds):
            for _ in range(rounds):
                for w, source in enumerate(feed):
                    for layout, fragment in enumerate(source.fragment()):
                        caches[layout][w].add(fragment)
            for layout in range(2):
                for cache in caches[layout]:
                    cache.wait()

        upload(6)
        replays[1].snapshot()
        upload(4)  # rows after the snapshot: only the caches hold them
        ray.kill(replays[1].shards[0], no_restart=True)
        replays[1].restore_shard(0)
        caches[1][0].retarget(replays[1].shards[0])
        upload(3)
        for i in range(2):
            states = [ray.get(r.shards[i].state.remote()) for r in replays]
            assert "frames" in states[1] and "frames" not in states[0]
            assert_same(all_rows(states[0], 30), all_rows(states[1], 30))
        batch = replays[1].sample(16)
        assert batch["obs"].shape == (16, 6, 5, 4) and batch["next_obs"].dtype == np.uint8
    finally:
        for r in replays:
            r.stop()


def test_redis_replay_of_compact_blocks_samples_the_same_rows(redis_server):
    replays = [
        RedisReplay(
            redis_server["address"], redis_server["password"], 50, f"frames-{uuid.uuid4().hex}", seed=3
        )
        for _ in range(2)
    ]
    try:
        for source in sources(n_step=3):
            for _ in range(12):  # 12 fragments of 2 x 3 steps per worker: past the capacity, blocks evicted
                for replay, fragment in zip(replays, source.fragment()):
                    replay.add(fragment)
        assert len(replays[0]) == len(replays[1]) and replays[1].checksum()[0] == len(replays[1])
        assert_same(*(replay.sample(64) for replay in replays))
    finally:
        for replay in replays:
            replay.clear()


def test_a_redis_block_whose_frame_references_leave_its_frames_is_refused(redis_server):
    # anyone who can reach the server can write blocks: a reference past the block's frames would read
    # another array's memory region as frames (or raise an IndexError deep in sampling)
    replay = RedisReplay(redis_server["address"], redis_server["password"], 50, f"bad-{uuid.uuid4().hex}")
    try:
        _, compact = sources(num_workers=1)[0].fragment()
        compact["next_ref"] = compact["next_ref"] + len(compact["frames"])
        replay.add(compact)
        with pytest.raises(ValueError, match=r"replay block \d+ in Redis: next_ref: allowed: \[rows, k\]"):
            replay.sample(4)
    finally:
        replay.clear()
