import numpy as np
import pytest

from relayrl import ops


def naive_gae(rewards, values, next_values, terminated, dones, gamma, lam):
    """Forward sums per env: A_t = sum_l (gamma*lam)^l delta_{t+l}, stopping after the step that ends the episode."""
    T, N = rewards.shape
    adv = np.zeros((T, N))
    for i in range(N):
        for t in range(T):
            total, coef = 0.0, 1.0
            for k in range(t, T):
                bootstrap = 0.0 if terminated[k, i] else gamma * next_values[k, i]
                delta = rewards[k, i] + bootstrap - values[k, i]
                total += coef * delta
                if dones[k, i]:
                    break
                coef *= gamma * lam
            adv[t, i] = total
    return adv


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_gae_matches_naive_loop_with_terminations_and_truncations(seed):
    rng = np.random.default_rng(seed)
    T, N = 17, 5
    rewards = rng.standard_normal((T, N)).astype(np.float32)
    values = rng.standard_normal((T, N)).astype(np.float32)
    next_values = rng.standard_normal((T, N)).astype(np.float32)
    terminated = rng.random((T, N)) < 0.1
    truncated = (rng.random((T, N)) < 0.1) & ~terminated
    dones = terminated | truncated
    got = ops.gae(rewards, values, next_values, terminated, dones, 0.97, 0.9)
    want = naive_gae(rewards, values, next_values, terminated, dones, 0.97, 0.9)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_and_termination_does_not():
    # One env, one step each. r=1, V(s)=0, V(s')=10, gamma=0.5:
    #   terminated -> A = 1 + 0 - 0 = 1;  truncated -> A = 1 + 0.5 * 10 - 0 = 6.
    ones, zeros, tens = np.ones((1, 1), np.float32), np.zeros((1, 1), np.float32), np.full((1, 1), 10.0, np.float32)
    yes, no = np.ones((1, 1), bool), np.zeros((1, 1), bool)
    assert ops.gae(ones, zeros, tens, yes, yes, 0.5, 1.0)[0, 0] == pytest.approx(1.0)
    assert ops.gae(ones, zeros, tens, no, yes, 0.5, 1.0)[0, 0] == pytest.approx(6.0)


def test_piecewise_linear():
    sched = [[0, 1.0], [100, 0.0]]
    assert ops.piecewise_linear(sched, 0) == 1.0
    assert ops.piecewise_linear(sched, 25) == pytest.approx(0.75)
    assert ops.piecewise_linear(sched, 1000) == 0.0
