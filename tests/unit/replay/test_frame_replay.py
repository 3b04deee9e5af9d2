"""Frame-stacking replay (each frame stored once) against a naive buffer storing whole obs / next_obs stacks:
both are fed the same fragments of a real stacked image env (episode starts, n-step rows, several workers and
envs interleaved, batches concatenated as ReplayCache does, capacities small enough to wrap) and must hold and
sample the same rows bit for bit. Plus checkpoint round trips and hostile checkpoint arrays."""

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relayrl.core.saved_state import CheckpointError
from relayrl.replay import PrioritizedReplay, UniformReplay
from relayrl.sampling import frame_rows
from tests.helpers.frame_envs import TRANSITIONS_SPEC, FragmentSource, stacked


def feed(plan, make, frame_capacity=None, min_len=1):
    """Feed both buffers the plan's fragments; returns (naive, frame replay)."""
    num_workers, num_envs, length, n_step, k, max_len, capacity, order, group = plan
    config = {"k": k, "min_len": min_len, "max_len": max_len}
    sources = [
        FragmentSource(
            gym.vector.SyncVectorEnv([lambda: stacked(config)] * num_envs),
            w,
            length,
            n_step,
            TRANSITIONS_SPEC,
        )
        for w in range(num_workers)
    ]
    naive, frames = make(capacity, None), make(capacity, frame_capacity or capacity * (2 * k + 2))
    pending: list[tuple[dict, dict]] = []
    for w in order:
        fragment = sources[w % num_workers].fragment()
        if (
            w >= 6
        ):  # lost on the way (a dead actor): the stream's next fragment does not continue the held one
            continue
        pending.append(fragment)
        if len(pending) >= group:  # several fragments in one add, as ReplayCache uploads them
            naive.add(frame_rows.concat([p[0] for p in pending]))
            frames.add(frame_rows.concat([p[1] for p in pending]))
            pending = []
    return naive, frames


def assert_same(a: dict, b: dict) -> None:
    assert sorted(a) == sorted(b)
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape, key
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)


plans = st.tuples(
    st.integers(1, 3),  # workers
    st.integers(1, 3),  # envs per worker
    st.integers(1, 6),  # fragment length
    st.integers(1, 3),  # n_step
    st.integers(2, 4),  # k frames per stack
    st.integers(1, 7),  # longest episode
    st.integers(4, 40),  # capacity: small enough to wrap
    st.lists(st.integers(0, 8), min_size=1, max_size=12),  # which worker sends each fragment (>= 6: lost)
    st.integers(1, 3),  # fragments per add
)
fast = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@fast
@given(plans)
def test_uniform_frame_replay_holds_and_samples_the_naive_buffers_rows_bit_for_bit(plan):
    naive, frames = feed(plan, lambda cap, fcap: UniformReplay(cap, seed=5, frame_capacity=fcap))
    if len(naive) == 0:
        return
    assert len(frames) == len(naive) and frames.added_total == naive.added_total
    every = np.arange(naive.size)
    assert_same(naive._gather(every), frames._gather(every))
    assert_same(naive.sample(64), frames.sample(64))
    again = UniformReplay(naive.capacity, seed=5, frame_capacity=frames.frame_capacity)
    again.load_state({key: value.copy() for key, value in frames.state().items()})
    assert_same(naive._gather(every), again._gather(every))


@fast
@given(plans, st.integers(0, 2**31))
def test_prioritized_frame_replay_samples_like_the_naive_one_with_the_same_priorities(plan, seed):
    naive, frames = feed(plan, lambda cap, fcap: PrioritizedReplay(cap, seed=5, frame_capacity=fcap))
    if len(naive) == 0:
        return
    priorities = np.random.default_rng(seed).uniform(0.01, 3.0, naive.size)
    for buf in (naive, frames):
        buf.update_priorities(np.arange(naive.size), priorities)
    assert_same(naive.sample(32, beta=0.5), frames.sample(32, beta=0.5))


@fast
@given(plans)
def test_a_tight_frame_ring_only_loses_rows_never_serves_wrong_stacks(plan):
    naive, frames = feed(plan, lambda cap, fcap: PrioritizedReplay(cap, seed=5, frame_capacity=fcap), 8)
    if len(frames) == 0:
        return
    ok = np.flatnonzero(frames.frames.row_ok[: frames.size])
    assert len(frames) == len(ok)
    assert_same(naive._gather(ok), frames._gather(ok))
    batch = frames.sample(64)
    assert frames.frames.row_ok[batch["indices"]].all() and np.isfinite(batch["weights"]).all()


def test_short_fragments_of_one_stream_cost_one_frame_per_step():
    # fragments of 2 steps from 1 env, k = 4: each later fragment's first stack is matched to the frames held
    plan = (1, 1, 2, 1, 4, 1000, 200, [0] * 50, 1)
    naive, frames = feed(plan, lambda cap, fcap: UniformReplay(cap, seed=5, frame_capacity=fcap), None, 1000)
    assert len(frames) == 100 and frames.frames.total <= 1 + 100  # the reset stack repeats one frame
    assert_same(naive._gather(np.arange(100)), frames._gather(np.arange(100)))


def test_expand_gives_the_whole_stacks_back():
    env = gym.vector.SyncVectorEnv([lambda: stacked({"max_len": 3})] * 2)
    naive, compact = FragmentSource(env, 0, 5, 3, TRANSITIONS_SPEC).fragment()
    assert_same(naive, frame_rows.expand(compact))


def frame_state():
    plan = (2, 2, 3, 2, 4, 4, 20, [0, 1, 0, 1, 0], 1)
    return feed(plan, lambda cap, fcap: UniformReplay(cap, seed=5, frame_capacity=fcap))[1].state()


@pytest.mark.parametrize(
    "field, hostile, message",
    [
        ("frame_meta", np.array([1, 2], np.int64), "frame_meta: allowed: 3 int64"),
        ("frame_meta", np.array([10**6, 5, 4], np.int64), "frame_meta = .*allowed: capacity"),
        ("frames", np.zeros((3, 6, 5), np.uint8), "frames: .*allowed"),
        ("stream_tails", np.full((4, 4), 10**9, np.int64), "stream_tails: allowed"),
        ("stream_keys", np.zeros(4, np.int64), "stream_keys: allowed: distinct"),
        ("col/obs_ref", None, "col/obs_ref: allowed: frame ids"),
        ("col/next_ref", None, "col/next_ref: allowed: .*int64"),
    ],
)
def test_a_crafted_frame_state_is_refused_naming_the_field(field, hostile, message):
    state = frame_state()
    if field == "col/obs_ref":
        hostile = state[field].copy()
        hostile[0, 0] = 10**9  # a frame id past everything written: an out-of-bounds read when sampled
    if field == "col/next_ref":
        hostile = state[field].astype(np.float64)
    state[field] = hostile
    buf = UniformReplay(20, frame_capacity=20 * 10)
    with pytest.raises(CheckpointError, match=message):
        buf.load_state(state)
    assert buf.size == 0 and buf.frames is None  # nothing of the crafted state was taken


def test_the_checkpoint_check_takes_a_frame_state_and_refuses_frames_that_do_not_fit_the_obs():
    from relayrl.algorithms.state import check_replay_arrays
    from relayrl.core.knobs import DEFAULT_MODEL
    from relayrl.models import networks

    obs_space = gym.spaces.Box(0, 255, (6, 5, 4), np.uint8)
    model = {**DEFAULT_MODEL, "conv_filters": [[4, 2, 1]]}
    spec = networks.spec_from_spaces(obs_space, gym.spaces.Discrete(2), model)
    state = frame_state()
    check_replay_arrays(state, 20, spec, False, "replay.npz")  # a state the buffer wrote passes
    for field, hostile, message in [
        ("frames", state["frames"][:, :3], r"replay.npz: frames: allowed: \[n, 6, 5\] uint8"),
        ("frame_meta", state["frame_meta"] * [1, 1, 0] + [0, 0, 3], "frame_meta: allowed: .*stacks of 4"),
        ("col/obs_ref", state["col/obs_ref"][:, :2], r"col/obs_ref: .*allowed: int64 \(\d+, 4\)"),
    ]:
        with pytest.raises(CheckpointError, match=message):
            check_replay_arrays({**state, field: hostile}, 20, spec, False, "replay.npz")
