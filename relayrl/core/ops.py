"""Pure RL math on numpy arrays (time-major [T, N]); each function is tested against a naive loop."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    dones: np.ndarray,
    gamma: float,
    lam: float,
) -> np.ndarray:
    """Generalised advantage estimation (Schulman et al. 2016, arXiv:1506.02438) with gymnasium semantics.

    All inputs are [T, N]. `next_values[t]` is V of the observation returned by step t (the final
    observation when the episode ended there). `terminated` zeroes that bootstrap (the return ends);
    a truncated step keeps it. `dones` (terminated | truncated) stops the recursion, so advantages
    never leak across an episode boundary. Returns advantages [T, N] (float32).
    """
    deltas = (rewards + gamma * next_values * ~terminated - values).astype(np.float32)  # [T, N]
    decay = (gamma * lam) * ~dones  # [T, N]: 0 where the episode ended
    adv = np.empty_like(deltas)
    carry = np.zeros(deltas.shape[1], dtype=np.float32)
    for t in range(deltas.shape[0] - 1, -1, -1):
        carry = deltas[t] + decay[t] * carry
        adv[t] = carry
    return adv


def vtrace(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminated: np.ndarray,
    dones: np.ndarray,
    log_rhos: np.ndarray,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, arXiv:1802.01561, eq. 1 and 4).

    Inputs are [T, N] with the same gymnasium semantics as `gae`; `log_rhos` = log pi(a|s) - log mu(a|s)
    (target minus behaviour policy). With rho_t = min(rho_bar, e^log_rho), c_t = min(c_bar, e^log_rho):
        delta_t = rho_t (r_t + gamma (1 - term_t) V(x_{t+1}) - V(x_t))
        vs_t - V(x_t) = delta_t + gamma c_t (1 - done_t) (vs_{t+1} - V(x_{t+1}))
    An episode that ends at t stops the recursion; vs_{t+1} is then V(x_{t+1}) (the final observation's
    value, zeroed by termination), and likewise after the fragment's last step. The advantage is
    rho_t (r_t + gamma (1 - term_t) vs_{t+1} - V(x_t)).
    On-policy with rho_bar, c_bar >= 1 this is the n-step return to the fragment end (`gae` with lam=1).
    Returns (vs, pg_advantages), both [T, N] float32.
    """
    ratio = np.exp(log_rhos)
    rho, c = np.minimum(rho_bar, ratio), np.minimum(c_bar, ratio)
    bootstrap = gamma * ~terminated
    deltas = (rho * (rewards + bootstrap * next_values - values)).astype(np.float32)  # [T, N]
    decay = (gamma * c * ~dones).astype(np.float32)
    vs_minus_v = np.empty_like(deltas)
    carry = np.zeros(deltas.shape[1], dtype=np.float32)
    for t in range(deltas.shape[0] - 1, -1, -1):
        carry = deltas[t] + decay[t] * carry
        vs_minus_v[t] = carry
    vs = vs_minus_v + values
    next_vs = np.concatenate([vs[1:], next_values[-1:]])  # vs_{t+1}; the fragment's last step bootstraps
    next_vs = np.where(dones, next_values, next_vs)
    pg_adv = rho * (rewards + bootstrap * next_vs - values)
    return vs.astype(np.float32), pg_adv.astype(np.float32)


def piecewise_linear(schedule: Sequence[Sequence[float]], t: float) -> float:
    """Value of a [[t0, v0], [t1, v1], ...] schedule at t; constant past the ends."""
    if t <= schedule[0][0]:
        return float(schedule[0][1])
    for (t0, v0), (t1, v1) in zip(schedule, schedule[1:]):
        if t < t1:
            frac = (t - t0) / max(t1 - t0, 1e-12)
            return float(v0 + frac * (v1 - v0))
    return float(schedule[-1][1])


def explained_variance(y_pred: np.ndarray, y_true: np.ndarray) -> float:
    """1 - Var[y_true - y_pred] / Var[y_true]; nan when y_true is constant."""
    var = np.var(y_true)
    return float("nan") if var == 0 else float(1.0 - np.var(y_true - y_pred) / var)


def n_step_transitions(
    rewards: np.ndarray, terminated: np.ndarray, dones: np.ndarray, gamma: float, n: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """n-step returns over a fragment (all inputs [T, N]).

    For each step t: R_t = sum_{k<m} gamma^k r_{t+k} over the m <= n steps up to the episode's end or the
    fragment's end, the index of the observation to bootstrap from (t + m in the [T + 1, N] observation
    array) and the bootstrap discount gamma^m, 0 when the episode terminated within those steps (a
    truncated episode still bootstraps from its final observation). Returns (returns, next_index,
    discounts), each [T, N]; rows of autoreset steps are meaningless (the caller drops them). A window
    never crosses a done, so it never reaches the reset step that follows one.
    """
    T, N = rewards.shape
    returns = np.zeros((T, N), np.float32)
    discounts = np.zeros((T, N), np.float32)
    next_index = np.zeros((T, N), np.int64)
    for t in range(T):
        acc = np.zeros(N, np.float32)
        alive = np.ones(N, bool)  # still inside the episode (not past its last step)
        scale = np.ones(N, np.float32)
        steps = np.zeros(N, np.int64)
        ended_by_termination = np.zeros(N, bool)
        for k in range(n):
            if t + k >= T:
                break
            acc += alive * scale * rewards[t + k]
            steps += alive
            ended_by_termination |= alive & terminated[t + k]
            alive &= ~dones[t + k]
            scale = scale * gamma
        returns[t] = acc
        next_index[t] = t + steps
        discounts[t] = np.where(ended_by_termination, 0.0, gamma ** steps.astype(np.float32))
    return returns, next_index, discounts
