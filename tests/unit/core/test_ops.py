import numpy as np
import pytest

from relayrl.core import ops


def naive_gae(rewards, values, next_values, terminated, dones, gamma, lam):
    """Forward sums per env: A_t = sum_l (gamma*lam)^l delta_{t+l}, stopping after the step that ends the
    episode."""
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
    ones, zeros, tens = (
        np.ones((1, 1), np.float32),
        np.zeros((1, 1), np.float32),
        np.full((1, 1), 10.0, np.float32),
    )
    yes, no = np.ones((1, 1), bool), np.zeros((1, 1), bool)
    assert ops.gae(ones, zeros, tens, yes, yes, 0.5, 1.0)[0, 0] == pytest.approx(1.0)
    assert ops.gae(ones, zeros, tens, no, yes, 0.5, 1.0)[0, 0] == pytest.approx(6.0)


def test_piecewise_linear():
    sched = [[0, 1.0], [100, 0.0]]
    assert ops.piecewise_linear(sched, 0) == 1.0
    assert ops.piecewise_linear(sched, 25) == pytest.approx(0.75)
    assert ops.piecewise_linear(sched, 1000) == 0.0


def naive_vtrace(rewards, values, next_values, terminated, dones, log_rhos, gamma, rho_bar, c_bar):
    """Eq. 1 of the IMPALA paper as a forward sum per env and step:
    vs_t = V(x_t) + sum_{k>=t} gamma^(k-t) (prod_{i<k} c_i) rho_k delta_k, stopping after the episode ends."""
    T, N = rewards.shape
    vs, adv = np.zeros((T, N)), np.zeros((T, N))
    for i in range(N):
        for t in range(T):
            total, coef = 0.0, 1.0
            for k in range(t, T):
                ratio = np.exp(log_rhos[k, i])
                boot = 0.0 if terminated[k, i] else gamma * next_values[k, i]
                total += coef * min(rho_bar, ratio) * (rewards[k, i] + boot - values[k, i])
                if dones[k, i]:
                    break
                coef *= gamma * min(c_bar, ratio)
            vs[t, i] = values[t, i] + total
        for t in range(T):
            if dones[t, i] or t == T - 1:
                next_vs = next_values[t, i]
            else:
                next_vs = vs[t + 1, i]
            boot = 0.0 if terminated[t, i] else gamma * next_vs
            adv[t, i] = min(rho_bar, np.exp(log_rhos[t, i])) * (rewards[t, i] + boot - values[t, i])
    return vs, adv


def consistent_trajectory(rng, T, N):
    """Values where V(x_{t+1}) of step t is V(x_{t+1}) of step t+1 unless the episode ended at t."""
    obs_values = rng.standard_normal((T + 1, N)).astype(np.float32)
    terminated = rng.random((T, N)) < 0.1
    truncated = (rng.random((T, N)) < 0.1) & ~terminated
    dones = terminated | truncated
    final_values = rng.standard_normal((T, N)).astype(np.float32)  # V of the final observation of an episode
    next_values = np.where(dones, final_values, obs_values[1:])
    rewards = rng.standard_normal((T, N)).astype(np.float32)
    return rewards, obs_values[:-1], next_values, terminated, dones


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rho_bar,c_bar", [(1.0, 1.0), (0.5, 0.8), (2.0, 1.5)])
def test_vtrace_matches_naive_loop_with_clipping_and_episode_ends(seed, rho_bar, c_bar):
    rng = np.random.default_rng(seed)
    T, N = 13, 4
    rewards, values, next_values, terminated, dones = consistent_trajectory(rng, T, N)
    log_rhos = rng.normal(0.0, 0.7, (T, N)).astype(np.float32)  # ratios on both sides of the clips
    vs, adv = ops.vtrace(rewards, values, next_values, terminated, dones, log_rhos, 0.95, rho_bar, c_bar)
    want_vs, want_adv = naive_vtrace(
        rewards, values, next_values, terminated, dones, log_rhos, 0.95, rho_bar, c_bar
    )
    np.testing.assert_allclose(vs, want_vs, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(adv, want_adv, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("seed", [0, 1])
def test_vtrace_on_policy_equals_n_step_returns(seed):
    # pi == mu: every ratio is 1, so vs_t is the discounted return to the fragment end (or episode end),
    # bootstrapped from V there: the n-step return, i.e. GAE with lambda = 1 plus V.
    rng = np.random.default_rng(seed)
    T, N, gamma = 11, 3, 0.9
    rewards, values, next_values, terminated, dones = consistent_trajectory(rng, T, N)
    vs, adv = ops.vtrace(rewards, values, next_values, terminated, dones, np.zeros((T, N), np.float32), gamma)
    n_step = np.zeros((T, N))
    for i in range(N):
        for t in range(T):
            ret, disc = 0.0, 1.0
            for k in range(t, T):
                ret += disc * rewards[k, i]
                disc *= gamma
                if terminated[k, i]:
                    break
                if dones[k, i] or k == T - 1:
                    ret += disc * next_values[k, i]
                    break
            n_step[t, i] = ret
    np.testing.assert_allclose(vs, n_step, rtol=1e-5, atol=1e-5)
    gae_returns = ops.gae(rewards, values, next_values, terminated, dones, gamma, 1.0) + values
    np.testing.assert_allclose(vs, gae_returns, rtol=1e-5, atol=1e-5)
    # the policy-gradient advantage is then the one-step TD error on the n-step target
    next_vs = np.where(dones, next_values, np.concatenate([vs[1:], next_values[-1:]]))
    np.testing.assert_allclose(adv, rewards + gamma * ~terminated * next_vs - values, rtol=1e-5, atol=1e-5)
