"""External episodes as a training runtime: the policy server's "workers" are the episodes that
clients drive over HTTP.

Requests from many client threads meet in an InferenceBatcher: what arrives within a couple of
milliseconds is answered by one numpy forward pass (it stops waiting once every open episode has a
request queued). Each answered step is kept with its observation, action, behaviour log-prob and
value, like a RolloutWorker step. A step is complete when the episode's next observation arrives
(its value bootstraps the step) or the episode ends: `terminated` ends the return, `truncated`
bootstraps from V(final observation), as in gymnasium.

`sample()` is the runtime interface the Algorithm calls: it blocks until `train_batch_size` complete
steps exist, then cuts every episode's complete steps into one Fragment with GAE (`ops.gae`) and the
same columns RolloutWorker produces (`rollout.batch_spec`). The unchanged algorithm (PPO's
training_step) updates its learner and calls `sync_weights`, which the batcher picks up before its
next forward pass: clients are always served the newest weights and never wait for the learner.
"""
from __future__ import annotations

import threading
import time
import uuid

import gymnasium as gym
import numpy as np

from relayrl import ops
from relayrl.networks import ModelSpec
from relayrl.policy_server.batcher import InferenceBatcher
from relayrl.policy_server.wire import RequestError
from relayrl.rollout import batch_spec
from relayrl.types import Fragment


class ServerStopped(RuntimeError):
    """sample() was waiting for experience when the server was asked to stop."""


class _Episode:
    """One external episode: complete steps (with their bootstrap) and the step awaiting its outcome."""

    def __init__(self) -> None:
        self.steps: list[tuple] = []  # (x, action, logp, value, reward, next_value, terminated, done, version)
        self.open: list | None = None  # [x, action, logp, value, reward so far, version]
        self.busy = False  # a request of this episode is being answered
        self.ep_return, self.ep_length = 0.0, 0
        self.last_seen = time.monotonic()

    def close_open(self, next_value: float, terminated: bool, done: bool) -> int:
        if self.open is None:
            return 0
        x, action, logp, value, reward, version = self.open
        self.steps.append((x, action, logp, value, reward, next_value, terminated, done, version))
        self.open = None
        return 1


class ExternalEpisodes:
    """Runtime for Algorithm(make_workers=...): sample() / sync_weights() / healthy() / stop()."""

    num_workers = 0

    def __init__(self, spec: ModelSpec, action_space: gym.Space, train_batch_size: int, gamma: float,
                 lambda_: float, seed: int | None = None, max_episodes: int = 10_000, max_wait_s: float = 0.002,
                 idle_timeout_s: float = 600.0):
        self.spec, self.train_batch_size, self.gamma, self.lambda_ = spec, train_batch_size, gamma, lambda_
        self.max_episodes, self.idle_timeout_s = max_episodes, idle_timeout_s
        self.expired = 0
        self._last_sweep = time.monotonic()
        self._batch_spec = batch_spec(spec)
        self._cond = threading.Condition()
        self._episodes: dict[str, _Episode] = {}
        self._ended: list[_Episode] = []  # ended episodes whose steps were not cut yet
        self._returns: list[float] = []
        self._lengths: list[int] = []
        self._complete_steps = 0
        self._stopped = False
        self.batcher = InferenceBatcher(spec, action_space, seed, max_wait_s, lambda: len(self._episodes))

    # ------------------------------------------------------------------ runtime interface
    def wait_ready(self) -> None:
        pass

    def sync_weights(self, weights: list[np.ndarray], version: int) -> None:
        self.batcher.set_weights(weights, version)

    def healthy(self) -> int:
        return len(self._episodes)

    def object_store_bytes(self) -> int:
        return 0  # no Ray object store on this path

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self.batcher.stop()

    def status(self) -> dict:
        return {"open_episodes": len(self._episodes), "expired_episodes": self.expired,
                "complete_steps_waiting": self._complete_steps,
                "served_weights_version": self.batcher.policy.version, "inference_batches": self.batcher.batches,
                "inference_requests": self.batcher.requests}

    def sample(self) -> list[Fragment]:
        """Block until train_batch_size complete steps exist; cut them into one fragment."""
        start = time.perf_counter()
        with self._cond:
            while self._complete_steps < self.train_batch_size:
                if self._stopped:
                    raise ServerStopped("the policy server is stopping")
                self._cond.wait(timeout=0.5)
            chunks = [ep.steps for ep in list(self._episodes.values()) + self._ended if ep.steps]
            for ep in self._episodes.values():
                ep.steps = []
            self._ended, self._complete_steps = [], 0
            returns, lengths, self._returns, self._lengths = self._returns, self._lengths, [], []
        data, oldest = self._postprocess(chunks)
        return [Fragment(data=data, version=oldest, worker_index=0, env_steps=len(data["obs"]),
                         episode_returns=np.asarray(returns, np.float32), episode_lengths=np.asarray(lengths, np.int64),
                         sample_time_s=time.perf_counter() - start)]

    def _postprocess(self, chunks: list[list[tuple]]) -> tuple[dict[str, np.ndarray], int]:
        """GAE per episode chunk (consecutive steps of one episode), then the batch columns."""
        columns: dict[str, list] = {k: [] for k in self._batch_spec}
        oldest = None
        for steps in chunks:
            x, action, logp, value, reward, next_value, terminated, done, version = zip(*steps)
            col = lambda seq, dtype: np.asarray(seq, dtype).reshape(-1, 1)  # noqa: E731 - [T, 1] for ops.gae
            values = col(value, np.float32)
            adv = ops.gae(col(reward, np.float32), values, col(next_value, np.float32), col(terminated, bool),
                          col(done, bool), self.gamma, self.lambda_)[:, 0]
            columns["obs"].append(np.stack(x))
            columns["actions"].append(np.stack(action))
            columns["logp"].append(np.asarray(logp))
            columns["vf_preds"].append(values[:, 0])
            columns["advantages"].append(adv)
            columns["value_targets"].append(adv + values[:, 0])
            oldest = min(version) if oldest is None else min(oldest, min(version))
        data = {k: np.concatenate(v).astype(self._batch_spec[k][1], copy=False) for k, v in columns.items()}
        return data, -1 if oldest is None else oldest

    # ------------------------------------------------------------------ requests (HTTP handler threads)
    def start_episode(self, episode_id: str | None = None) -> str:
        with self._cond:
            self._expire_idle()
            if len(self._episodes) >= self.max_episodes:
                raise RequestError(503, f"{len(self._episodes)} episodes are open (the server's limit): end some first")
            episode_id = episode_id or uuid.uuid4().hex
            if episode_id in self._episodes:
                raise RequestError(409, f"episode_id {episode_id!r} is already open")
            self._episodes[episode_id] = _Episode()
        return episode_id

    def get_action(self, episode_id: str, x: np.ndarray, reward: float | None = None):
        """The action for observation x (network input row); completes the episode's previous step."""
        with self._cond:
            ep = self._claim(episode_id, reward)
        try:
            env_action, action, logp, value, version = self.batcher.compute(x)
        except BaseException:
            ep.busy = False
            raise
        with self._cond:
            ep.busy = False
            self._complete(ep.close_open(next_value=value, terminated=False, done=False))
            ep.open = [x, action, logp, value, 0.0, version]
            ep.ep_length += 1
        return env_action

    def log_returns(self, episode_id: str, reward: float) -> None:
        with self._cond:
            self._claim(episode_id, reward).busy = False

    def end_episode(self, episode_id: str, x: np.ndarray, truncated: bool = False, reward: float | None = None) -> None:
        """Close the episode: its last step is terminated (no bootstrap) or truncated (bootstraps from V(x))."""
        with self._cond:
            ep = self._claim(episode_id, reward)
        try:
            next_value = self.batcher.compute(x)[3] if truncated and ep.open is not None else 0.0
        except BaseException:
            ep.busy = False
            raise
        with self._cond:
            self._complete(ep.close_open(next_value=next_value, terminated=not truncated, done=True))
            del self._episodes[episode_id]
            if ep.steps:
                self._ended.append(ep)
            if ep.ep_length > 0:
                self._returns.append(ep.ep_return)
                self._lengths.append(ep.ep_length)

    def _expire_idle(self) -> None:
        """Drop episodes whose client went silent for idle_timeout_s (a crashed simulator): they would
        hold memory and make every inference batch wait for a request that never comes. Their complete
        steps are still learned from; the step awaiting an outcome is discarded."""
        now = time.monotonic()
        if now - self._last_sweep < min(1.0, self.idle_timeout_s):
            return
        self._last_sweep = now
        for episode_id, ep in list(self._episodes.items()):
            if not ep.busy and now - ep.last_seen > self.idle_timeout_s:
                del self._episodes[episode_id]
                self.expired += 1
                if ep.steps:
                    self._ended.append(ep)

    def _claim(self, episode_id: str, reward: float | None) -> _Episode:
        """The open episode, marked busy (one request per episode at a time), with `reward` added."""
        ep = self._episodes.get(episode_id)
        if ep is None:
            raise RequestError(404, f"unknown episode_id {episode_id!r}: start it with /start_episode (or it has ended)")
        if ep.busy:
            raise RequestError(409, f"episode {episode_id!r} already has a request in progress: send one at a time")
        if reward is not None:
            if ep.open is None:
                raise RequestError(409, f"episode {episode_id!r} has no action yet: a reward follows a /get_action")
            ep.open[4] += reward
            ep.ep_return += reward
        ep.busy = True
        ep.last_seen = time.monotonic()
        return ep

    def _complete(self, n: int) -> None:
        self._complete_steps += n
        if self._complete_steps >= self.train_batch_size:
            self._cond.notify_all()
