"""InferenceBatcher: one thread owns the numpy Policy and answers many HTTP requests per forward pass.

Handler threads queue an observation row and wait. The batcher takes the first request, then keeps
collecting for at most `max_wait_s` or until every open episode has a request queued (nobody else
can join), and answers the whole batch with one forward pass. New weights are swapped in between
batches, never during one.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field

import gymnasium as gym
import numpy as np

from relayrl.models.networks import ModelSpec
from relayrl.models.policy import Policy
from relayrl.policy_server.wire import RequestError


@dataclass
class _Request:
    x: np.ndarray
    done: threading.Event = field(default_factory=threading.Event)
    result: tuple | None = None
    error: BaseException | None = None


class InferenceBatcher:
    """One thread owns the Policy; handler threads queue observations and wait for their answer."""

    def __init__(
        self,
        spec: ModelSpec,
        action_space: gym.Space,
        seed: int | None,
        max_wait_s: float,
        expected_requests,
        timeout_s: float = 30.0,
    ):
        self.policy = Policy(spec, action_space, seed=seed)
        self.max_wait_s, self.timeout_s = max_wait_s, timeout_s
        self._expected = expected_requests  # () -> how many requests could still join this batch
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._new_weights: tuple | None = None
        self.batches = self.requests = 0
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="relayrl-inference", daemon=True)
        self._thread.start()

    def set_weights(self, weights: list[np.ndarray], version: int) -> None:
        self._new_weights = (weights, version)  # swapped in between batches, never mid-forward

    def compute(self, x: np.ndarray) -> tuple:
        """(env action, network action, logp, value, weights version) for one observation row."""
        if self._stopped:
            raise RequestError(503, "the policy server is stopping")
        request = _Request(x)
        self._queue.put(request)
        if not request.done.wait(self.timeout_s):
            raise RequestError(503, f"no action within {self.timeout_s:.0f} s: the server is overloaded")
        if request.error is not None:
            raise request.error
        return request.result

    def stop(self) -> None:
        self._stopped = True
        self._queue.put(None)

    def _loop(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                self._refuse_queued()
                return
            batch, deadline = [first], time.perf_counter() + self.max_wait_s
            while len(batch) < self._expected():
                try:
                    item = self._queue.get(timeout=max(deadline - time.perf_counter(), 0.0))
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # stop after answering this batch
                    break
                batch.append(item)
            self._answer(batch)

    def _refuse_queued(self) -> None:
        while True:
            try:
                request = self._queue.get_nowait()
            except queue.Empty:
                return
            if request is not None:
                request.error = RequestError(503, "the policy server is stopping")
                request.done.set()

    def _answer(self, batch: list[_Request]) -> None:
        try:
            if self._new_weights is not None:
                weights, version = self._new_weights
                self._new_weights = None
                self.policy.set_weights(weights, version)
            p = self.policy
            x = np.stack([r.x for r in batch])
            with np.errstate(over="ignore", invalid="ignore"):  # overflowing rows are refused below
                actions, dist_inputs = p.sample_step(x, p.draw_noise(1, len(batch))[0])
                logp = p.log_prob(dist_inputs, actions)
                values = p.net.value(x).astype(np.float32)
            env_actions = p.env_actions(actions)
            # a finite observation can still be too large for the network (float32 overflow in a layer)
            finite = np.isfinite(logp) & np.isfinite(values)
            finite &= np.isfinite(np.asarray(env_actions, np.float64).reshape(len(batch), -1)).all(axis=1)
            for i, r in enumerate(batch):
                if finite[i]:
                    r.result = (env_actions[i], actions[i], float(logp[i]), float(values[i]), p.version)
                else:
                    r.error = RequestError(
                        400,
                        "observation: the network's output for it is not finite "
                        "(its values are too large for the model)",
                    )
        except Exception as exc:  # noqa: BLE001 - reported to every waiting request, the thread lives on
            for r in batch:
                r.error = exc
        self.batches += 1
        self.requests += len(batch)
        for r in batch:
            r.done.set()
