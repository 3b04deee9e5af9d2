"""Replay buffers: ring storage, sum-tree invariants, prioritised sampling frequencies (chi-square),
importance weights against the formula, npz-able state, n-step returns against a naive loop."""

import numpy as np
import pytest

from relayrl.core import ops
from relayrl.replay import PrioritizedReplay, SumTree, UniformReplay


def rows(start, n):
    return {
        "obs": np.arange(start, start + n, dtype=np.float32)[:, None],
        "actions": np.arange(start, start + n),
    }


def test_ring_buffer_overwrites_oldest_and_round_trips_state():
    buf = UniformReplay(5, seed=0)
    buf.add(rows(0, 3))
    buf.add(rows(3, 4))  # 7 rows into 5 slots: 0 and 1 are gone
    assert len(buf) == 5 and buf.added_total == 7
    assert sorted(buf.columns["actions"].tolist()) == [2, 3, 4, 5, 6]
    again = UniformReplay(5)
    again.load_state({k: v.copy() for k, v in buf.state().items()})
    np.testing.assert_array_equal(again.columns["actions"], buf.columns["actions"])
    assert (again.next, again.size) == (buf.next, buf.size)
    batch = buf.sample(64)
    assert set(batch["actions"].tolist()) <= {2, 3, 4, 5, 6} and np.all(batch["weights"] == 1)
    with pytest.raises(ValueError, match="differ from the stored"):
        buf.add({"obs": np.zeros((1, 1), np.float32)})


def test_a_large_prioritized_sample_cut_into_minibatches_gives_each_one_rows_from_the_whole_buffer():
    # learners draw K * B rows at once and cut them into K minibatches; stratified draws come out in
    # buffer order, so without shuffling minibatch k would only hold rows from the k-th slice of the buffer
    buf = PrioritizedReplay(1000, alpha=0.6, seed=0)
    buf.add(rows(0, 1000))
    batch = buf.sample(32 * 32)
    spans = [np.ptp(mb) for mb in batch["actions"].reshape(32, 32)]
    assert min(spans) > 500, spans
    np.testing.assert_array_equal(batch["actions"], batch["indices"])  # rows still match their indices


def test_sum_tree_invariants_under_random_updates():
    rng = np.random.default_rng(0)
    tree = SumTree(37)
    leaves = np.zeros(37)
    is_set = np.zeros(37, bool)
    for _ in range(200):
        idx = rng.choice(37, size=rng.integers(1, 8), replace=False)
        vals = rng.uniform(0.1, 5, len(idx))
        tree.set(idx, vals)
        leaves[idx], is_set[idx] = vals, True
        assert tree.total == pytest.approx(leaves.sum())
        assert tree.min == pytest.approx(leaves[is_set].min())
        internal = np.arange(1, tree.size)
        np.testing.assert_allclose(tree.sums[internal], tree.sums[2 * internal] + tree.sums[2 * internal + 1])
    u = rng.uniform(0, leaves.sum(), 500)
    want = np.searchsorted(np.cumsum(leaves), u, side="right")
    np.testing.assert_array_equal(tree.find(u), want)


def test_prioritized_sampling_frequencies_match_priorities_chi_square():
    buf = PrioritizedReplay(10, alpha=1.0, seed=1)
    buf.add(rows(0, 10))
    priorities = np.arange(1, 11, dtype=np.float64)
    buf.update_priorities(np.arange(10), priorities)
    counts = np.zeros(10)
    for _ in range(200):
        counts += np.bincount(buf.sample(250)["indices"], minlength=10)
    expected = counts.sum() * priorities / priorities.sum()
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 27.88, chi2  # chi-square critical value, 9 degrees of freedom, p = 0.001


def test_importance_weights_follow_the_formula():
    buf = PrioritizedReplay(8, alpha=0.7, beta=0.5, eps=0.0, seed=2)
    buf.add(rows(0, 8))
    p = np.array([0.5, 1, 2, 3, 4, 5, 6, 7.0])
    buf.update_priorities(np.arange(8), p)
    batch = buf.sample(32, beta=0.5)
    P = p**0.7 / (p**0.7).sum()
    w_all = (8 * P) ** -0.5
    np.testing.assert_allclose(batch["weights"], w_all[batch["indices"]] / w_all.max(), rtol=1e-5)


def test_new_rows_get_max_priority_and_state_round_trips():
    buf = PrioritizedReplay(6, alpha=1.0, eps=0.0, seed=3)
    buf.add(rows(0, 2))
    buf.update_priorities(np.array([0, 1]), np.array([5.0, 1.0]))
    buf.add(rows(2, 1))
    assert buf.tree.get(np.array([2]))[0] == pytest.approx(5.0)
    again = PrioritizedReplay(6, alpha=1.0, eps=0.0)
    again.load_state(buf.state())
    assert again.tree.total == pytest.approx(buf.tree.total) and again.max_priority == buf.max_priority
    with pytest.raises(FloatingPointError):
        buf.update_priorities(np.array([0]), np.array([np.nan]))


def naive_n_step(rewards, terminated, dones, gamma, n):
    T, N = rewards.shape
    R, nxt, disc = np.zeros((T, N)), np.zeros((T, N), int), np.zeros((T, N))
    for i in range(N):
        for t in range(T):
            total, m, term = 0.0, 0, False
            for k in range(n):
                if t + k >= T:
                    break
                total += gamma**k * rewards[t + k, i]
                m += 1
                if dones[t + k, i]:
                    term = bool(terminated[t + k, i])
                    break
            R[t, i], nxt[t, i], disc[t, i] = total, t + m, 0.0 if term else gamma**m
    return R, nxt, disc


@pytest.mark.parametrize("n", [1, 3, 5])
def test_n_step_transitions_match_naive_loop(n):
    rng = np.random.default_rng(n)
    T, N = 20, 4
    rewards = rng.standard_normal((T, N)).astype(np.float32)
    terminated = rng.random((T, N)) < 0.1
    truncated = (rng.random((T, N)) < 0.1) & ~terminated
    dones = terminated | truncated
    R, nxt, disc = ops.n_step_transitions(rewards, terminated, dones, 0.9, n)
    R2, nxt2, disc2 = naive_n_step(rewards, terminated, dones, 0.9, n)
    np.testing.assert_allclose(R, R2, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(nxt, nxt2)
    np.testing.assert_allclose(disc, disc2, rtol=1e-6)
