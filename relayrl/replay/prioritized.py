"""Prioritised experience replay (Schaul et al. 2016, arXiv:1511.05952): proportional prioritisation
P(i) = p_i^alpha / sum_k p_k^alpha with a sum tree (O(log n) update and prefix-sum search) and
importance-sampling weights w_i = (N * P(i))^-beta / max_j w_j, the max taken over the whole buffer
(through a min tree of priorities), beta annealed towards 1 by the caller."""

from __future__ import annotations

import numpy as np

from relayrl.replay.uniform import UniformReplay


class SumTree:
    """Complete binary tree over `capacity` leaves stored in an array; node i has children 2i and 2i+1,
    leaves live at [size, 2 * size). Keeps sums and minima of the leaf values."""

    def __init__(self, capacity: int):
        self.size = 1
        while self.size < capacity:
            self.size *= 2
        self.sums = np.zeros(2 * self.size, np.float64)
        self.mins = np.full(2 * self.size, np.inf)

    @property
    def total(self) -> float:
        return float(self.sums[1])

    @property
    def min(self) -> float:
        return float(self.mins[1])

    def set(self, leaves: np.ndarray, values: np.ndarray) -> None:
        """Set leaf values, then recompute the affected ancestors level by level (vectorised)."""
        nodes = np.asarray(leaves, np.int64) + self.size
        if not len(nodes):  # e.g. a fragment whose only step was an autoreset step
            return
        self.sums[nodes] = values
        self.mins[nodes] = np.where(np.asarray(values) > 0, values, np.inf)  # 0 = never sampled: no IS weight
        nodes = np.unique(nodes // 2)
        while nodes[0] >= 1:
            left, right = 2 * nodes, 2 * nodes + 1
            self.sums[nodes] = self.sums[left] + self.sums[right]
            self.mins[nodes] = np.minimum(self.mins[left], self.mins[right])
            if nodes[0] == 1:
                break
            nodes = np.unique(nodes // 2)

    def get(self, leaves: np.ndarray) -> np.ndarray:
        return self.sums[np.asarray(leaves, np.int64) + self.size]

    def find(self, prefix: np.ndarray) -> np.ndarray:
        """For each prefix sum u in [0, total): the leaf i with sum(leaves[:i]) <= u < sum(leaves[:i+1])."""
        u = np.array(prefix, np.float64)
        nodes = np.ones(len(u), np.int64)
        while nodes[0] < self.size:  # all walkers descend one level per step
            left = 2 * nodes
            go_right = u >= self.sums[left]
            u = np.where(go_right, u - self.sums[left], u)
            nodes = np.where(go_right, left + 1, left)
        return nodes - self.size


class PrioritizedReplay(UniformReplay):
    def __init__(
        self,
        capacity: int,
        alpha: float = 0.6,
        beta: float = 0.4,
        eps: float = 1e-6,
        seed: int | None = None,
        frame_capacity: int | None = None,
    ):
        super().__init__(capacity, seed, frame_capacity)
        if not 0 <= alpha:
            raise ValueError(f"prioritized replay alpha = {alpha} is invalid: allowed: a number >= 0")
        self.alpha, self.beta, self.eps = alpha, beta, eps
        self.tree = SumTree(capacity)
        self.max_priority = 1.0

    def add(self, batch: dict[str, np.ndarray], priorities: np.ndarray | None = None) -> None:
        """New rows get the given priorities (e.g. initial TD errors from Ape-X workers) or the max seen."""
        slots = self._write(batch)
        if priorities is None:
            p = np.full(len(slots), self.max_priority)
        else:
            p = np.abs(np.asarray(priorities, np.float64))[-len(slots) :] + self.eps
            self.max_priority = max(self.max_priority, float(p.max()))
        self.tree.set(slots, p**self.alpha)
        self._drop_stale()

    def _drop_stale(self) -> None:
        """Rows whose frames were overwritten (frames.py) get priority 0: never sampled again."""
        if len(self._stale):
            self.tree.set(self._stale, np.zeros(len(self._stale)))
            self._stale = self._stale[:0]

    def sample(self, batch_size: int, beta: float | None = None) -> dict[str, np.ndarray]:
        """Stratified proportional sampling: one uniform draw in each of batch_size equal slices of the total.
        The rows come back in random order: callers cut one large sample into several minibatches, and in
        stratum order each minibatch would hold only a narrow, time-contiguous slice of the buffer."""
        if self.size == 0:
            raise ValueError("cannot sample from an empty replay buffer")
        beta = self.beta if beta is None else beta
        total = self.tree.total
        bounds = np.linspace(0.0, total, batch_size + 1)
        u = self.rng.uniform(bounds[:-1], bounds[1:])
        indices = np.minimum(self.tree.find(np.minimum(u, np.nextafter(total, 0))), self.size - 1)
        indices = self.rng.permutation(indices)
        probs = self.tree.get(indices) / total
        max_weight = (self.size * self.tree.min / total) ** -beta  # the weight of the least likely row
        weights = (self.size * probs) ** -beta / max_weight
        out = self._gather(indices)
        out["indices"] = indices
        out["weights"] = weights.astype(np.float32)
        return out

    def update_priorities(self, indices: np.ndarray, priorities: np.ndarray) -> None:
        p = np.abs(np.asarray(priorities, np.float64)) + self.eps
        if not np.all(np.isfinite(p)):
            raise FloatingPointError("non-finite replay priorities (a NaN TD error?)")
        self.max_priority = max(self.max_priority, float(p.max()))
        p = p**self.alpha
        if self.frames is not None:  # a row that became unsampleable since it was drawn stays so
            p = np.where(self.frames.row_ok[indices], p, 0.0)
        self.tree.set(indices, p)

    def state(self) -> dict[str, np.ndarray]:
        out = super().state()
        out["priorities"] = self.tree.get(np.arange(self.size))
        out["prio_meta"] = np.array([self.max_priority], np.float64)
        return out

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        super().load_state(state)
        self.tree = SumTree(self.capacity)
        if self.size:
            self.tree.set(np.arange(self.size), state["priorities"])
        self._drop_stale()
        self.max_priority = float(state["prio_meta"][0])
