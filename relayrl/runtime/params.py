"""ParameterServer and WeightClient: the latest weights with a version, and the worker side that pulls them.

The parameter server is plain Python (runtime/ray_async.py runs it as a Ray actor). For A3C it also owns
the optimiser: workers send gradients computed against the weights version they sampled with, and the
server applies each one as it arrives (no barrier; Mnih et al. 2016, arXiv:1602.01783), recording its
staleness (server version - gradient version). Acme's VariableSource/VariableClient and Sample Factory's
policy versions are the models here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import numpy as np

Weights = list  # list[np.ndarray] in the networks.py layout


class ParameterServer:
    """Loop that uses it:

    server.set_weights(w, v)  |  server.apply_gradients(g, v)  ->  server.latest(my_v)
    """

    def __init__(self, learner_factory: Callable[[], Any] | None = None):
        self.learner = learner_factory() if learner_factory is not None else None  # only for gradient updates
        self.weights: Weights | None = None
        self.version = -1
        self._staleness: list[int] = []
        self._gnorms: list[float] = []

    def set_weights(self, weights: Weights, version: int) -> None:
        self.weights, self.version = weights, version
        if self.learner is not None:
            self.learner.set_weights(weights)

    def latest(self, known_version: int) -> tuple[Weights, int] | None:
        """(weights, version) when newer than `known_version`, else None (nothing sent)."""
        return None if self.version == known_version else (self.weights, self.version)

    def apply_gradients(self, grads: Weights, grads_version: int) -> tuple[Weights, int]:
        """Apply one worker's gradients now; returns the new (weights, version) for it to continue with."""
        self._staleness.append(self.version - grads_version)
        self._gnorms.append(self.learner.apply_gradients(grads))
        self.weights, self.version = self.learner.get_weights(), self.version + 1
        return self.weights, self.version

    def pop_stats(self) -> dict[str, float]:
        """Updates applied and their mean / max staleness since the last call."""
        stale, gn = self._staleness, self._gnorms
        self._staleness, self._gnorms = [], []
        return {
            "updates": len(stale),
            "staleness_mean": float(np.mean(stale)) if stale else float("nan"),
            "staleness_max": float(max(stale)) if stale else float("nan"),
            "grad_gnorm": float(np.mean(gn)) if gn else float("nan"),
            "version": self.version,
        }


class WeightClient:
    """Worker-side weights: pulls from a source when its version moved, either every `every_k` fragments
    (in the sampling thread) or continuously in a background thread that never blocks sampling (new
    weights are swapped in between fragments). With `ema_tau` the worker's copy is soft-updated,
    w <- tau * w_new + (1 - tau) * w, which smooths a lagging behaviour policy.

    Loop that uses it:  client.before_fragment(); fragment = worker.sample(); ...
    """

    def __init__(
        self,
        fetch: Callable[[int], tuple[Weights, int] | None],
        apply: Callable[[Weights, int], None],
        every_k: int = 1,
        background: bool = False,
        ema_tau: float | None = None,
        poll_s: float = 0.005,
    ):
        self.fetch, self.apply_fn = fetch, apply
        self.every_k, self.ema_tau, self.poll_s = every_k, ema_tau, poll_s
        self.version = -1
        self.weights: Weights | None = None
        self.pulls = 0
        self._fragments = 0
        self._pending: tuple[Weights, int] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        if background:
            self._thread = threading.Thread(target=self._poll_forever, daemon=True, name="weight-client")
            self._thread.start()

    def before_fragment(self) -> None:
        """Install newer weights if any (background) or pull now if this is the K-th fragment."""
        if self.weights is None:  # nothing to sample with yet: wait for the first weights whatever the mode
            got = self.fetch(self.version)
            while got is None:
                self._stop.wait(self.poll_s)
                got = self.fetch(self.version)
            self._install(*got)
        elif self._thread is not None:
            with self._lock:
                pending, self._pending = self._pending, None
            if pending is not None:
                self._install(*pending)
        elif self._fragments % self.every_k == 0:
            got = self.fetch(self.version)
            if got is not None:
                self._install(*got)
        self._fragments += 1

    def _poll_forever(self) -> None:
        known = self.version
        while not self._stop.is_set():
            got = self.fetch(known)
            if got is not None:
                known = got[1]
                with self._lock:
                    self._pending = got
            self._stop.wait(self.poll_s)

    def _install(self, weights: Weights, version: int) -> None:
        if self.ema_tau is not None and self.weights is not None:
            tau = self.ema_tau
            weights = [tau * np.asarray(new) + (1.0 - tau) * old for new, old in zip(weights, self.weights)]
        self.weights, self.version = weights, version
        self.pulls += 1
        self.apply_fn(weights, version)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=1.0)
