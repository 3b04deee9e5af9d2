"""The request side of the policy server's external episodes: open episodes, each with its complete steps
and the step awaiting its outcome, driven by HTTP handler threads (start / get_action / log_returns / end).
What clients cannot abuse is enforced here: the open-episode limit (the idlest is evicted), the idle
timeout, one request per episode at a time, rewards within float32. episodes.py cuts the steps into
fragments.

Retries are idempotent. A client numbers its requests within an episode (`seq`: a number it draws for the
start, then 1, 2, ...); a request that repeats the last answered `seq` (the client lost the reply, not
the server the request) gets the first answer again, and its reward is not added twice. One that repeats
a request still being answered waits for that answer. Requests without `seq` are answered as they
come."""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from typing import Any

import numpy as np

from relayrl.policy_server.batcher import InferenceBatcher
from relayrl.policy_server.wire import F32_MAX, RequestError

RETIRED_REMEMBERED = 10_000  # evicted / expired ids answered 410 with the reason (older ones: 404)
ENDED_REMEMBERED = 10_000  # ended ids whose last seq a retried /end_episode is answered from
REPEAT_WAIT_S = 10.0  # longest a repeated request waits for the one still being answered


class Replay:
    """The answer of an already answered request, for its repetition."""

    def __init__(self, reply: Any) -> None:
        self.reply = reply


class Episode:
    """One external episode: complete steps (with their bootstrap) and the step awaiting its outcome."""

    def __init__(self, episode_id: str) -> None:
        self.episode_id = episode_id
        self.steps: list[
            tuple
        ] = []  # (x, action, logp, value, reward, next_value, terminated, done, version)
        self.open: list | None = None  # [x, action, logp, value, reward so far, version]
        self.busy = False  # a request of this episode is being answered
        self.ep_return, self.ep_length = 0.0, 0
        self.last_seen = time.monotonic()
        self.dropped = False  # some of its steps were unlearnable: its return is not reported
        # idempotent retries: the request being answered, the last one answered and its answer, the
        # request whose reward is in, and how many repetitions wait for the answer
        self.pending_seq: int | None = None
        self.last_seq: int | None = None
        self.last_reply: Any = None
        self.rewarded_seq: int | None = None
        self.waiters = 0

    def close_open(self, next_value: float, terminated: bool, done: bool) -> int:
        if self.open is None:
            return 0
        x, action, logp, value, reward, version = self.open
        self.steps.append((x, action, logp, value, reward, next_value, terminated, done, version))
        self.open = None
        return 1


class OpenEpisodes:
    """Episodes clients drive, under `_cond`; complete steps are counted until `_wanted` are ready."""

    batcher: InferenceBatcher  # set by the subclass: answers get_action

    def __init__(self, max_episodes: int, idle_timeout_s: float, wanted: int) -> None:
        self.max_episodes, self.idle_timeout_s = max_episodes, idle_timeout_s
        self.expired = self.evicted = 0
        self._last_sweep = time.monotonic()
        self._cond = threading.Condition()
        self._episodes: OrderedDict[str, Episode] = OrderedDict()  # least recently active first
        self._retired: OrderedDict[str, str] = OrderedDict()  # evicted / expired id -> why, oldest first
        self._ended_seqs: OrderedDict[str, int] = OrderedDict()  # ended id -> its /end_episode's seq
        self._ended: list[Episode] = []  # ended (or retired) episodes whose steps were not cut yet
        self._finished: list[Episode] = []  # ended episodes whose return is reported with the next fragment
        self._complete_steps = 0
        self._wanted = wanted  # complete steps a waiting sample() needs

    def start_episode(self, episode_id: str | None = None, seq: int | None = None) -> str:
        with self._cond:
            self._expire_idle()
            episode_id = episode_id or uuid.uuid4().hex
            if episode_id in self._episodes:
                if seq is not None and self._episodes[episode_id].last_seq == seq:
                    return episode_id  # a retried start whose first answer was lost
                raise RequestError(409, f"episode_id {episode_id!r} is already open")
            if len(self._episodes) >= self.max_episodes:
                self._evict_idlest()
            self._retired.pop(episode_id, None)
            self._ended_seqs.pop(episode_id, None)
            self._episodes[episode_id] = ep = Episode(episode_id)
            ep.last_seq = seq
        return episode_id

    def get_action(self, episode_id: str, x: np.ndarray, reward: float | None = None, seq: int | None = None):
        """The action for observation x (network input row); completes the episode's previous step."""
        with self._cond:
            ep = self._claim(episode_id, reward, seq)
            if isinstance(ep, Replay):
                return ep.reply
        try:
            env_action, action, logp, value, version = self.batcher.compute(x)
        except BaseException:
            with self._cond:
                self._release(ep, answered=False)
            raise
        with self._cond:
            self._complete(ep.close_open(next_value=value, terminated=False, done=False))
            ep.open = [x, action, logp, value, 0.0, version]
            ep.ep_length += 1
            self._release(ep, reply=env_action)
        return env_action

    def log_returns(self, episode_id: str, reward: float, seq: int | None = None) -> None:
        with self._cond:
            ep = self._claim(episode_id, reward, seq)
            if not isinstance(ep, Replay):
                self._release(ep)

    def end_episode(
        self,
        episode_id: str,
        x: np.ndarray,
        truncated: bool = False,
        reward: float | None = None,
        seq: int | None = None,
    ) -> None:
        """Close the episode: its last step is terminated (no bootstrap) or truncated (bootstraps from
        V(x))."""
        with self._cond:
            ep = self._claim(episode_id, reward, seq)
            if isinstance(ep, Replay):
                return
        try:
            next_value = self.batcher.compute(x)[3] if truncated and ep.open is not None else 0.0
        except BaseException:
            with self._cond:
                self._release(ep, answered=False)
            raise
        with self._cond:
            self._complete(ep.close_open(next_value=next_value, terminated=not truncated, done=True))
            del self._episodes[episode_id]
            if ep.steps:
                self._ended.append(ep)
            if ep.ep_length > 0:
                self._finished.append(ep)
            if seq is not None:
                self._ended_seqs[episode_id] = seq
                if len(self._ended_seqs) > ENDED_REMEMBERED:
                    self._ended_seqs.popitem(last=False)
            self._release(ep)

    def _expire_idle(self) -> None:
        """Drop episodes whose client went silent for idle_timeout_s (a crashed simulator): they would
        hold memory and make every inference batch wait for a request that never comes."""
        now = time.monotonic()
        if now - self._last_sweep < min(1.0, self.idle_timeout_s):
            return
        self._last_sweep = now
        for episode_id, ep in list(self._episodes.items()):  # least recently active first
            if now - ep.last_seen <= self.idle_timeout_s:
                break
            if not ep.busy:
                self.expired += 1
                self._retire(
                    episode_id,
                    f"expired after {self.idle_timeout_s:g} s without a request "
                    f"(the server's episode timeout)",
                )

    def _evict_idlest(self) -> None:
        """Make room for one episode: the one idle longest goes (a flood of never-ended episodes evicts its
        own oldest first, while episodes that are being played stay)."""
        for episode_id, ep in self._episodes.items():
            if not ep.busy:
                self.evicted += 1
                self._retire(
                    episode_id,
                    f"was evicted: the server holds at most {self.max_episodes} open "
                    f"episodes and this one had been idle longest",
                )
                return
        raise RequestError(
            503,
            f"all {len(self._episodes)} open episodes (the server's limit) have a "
            f"request in progress: retry shortly",
        )

    def _retire(self, episode_id: str, why: str) -> None:
        """Close an episode the client did not end: its complete steps stay, its pending step is discarded."""
        ep = self._episodes.pop(episode_id)
        if ep.steps:
            self._ended.append(ep)
        self._retired[episode_id] = why
        if len(self._retired) > RETIRED_REMEMBERED:
            self._retired.popitem(last=False)

    def _claim(self, episode_id: str, reward: float | None, seq: int | None = None) -> Episode | Replay:
        """The open episode, marked busy (one request per episode at a time), with `reward` added; or, for a
        repetition of the last answered request (the same `seq`), its answer."""
        ep = self._episodes.get(episode_id)
        if ep is not None and seq is not None:
            if ep.busy and ep.pending_seq == seq:  # the first try is still being answered: wait for it
                ep.waiters += 1
                try:
                    self._cond.wait_for(lambda: not ep.busy, timeout=REPEAT_WAIT_S)
                finally:
                    ep.waiters -= 1
            if ep.last_seq == seq:
                return Replay(ep.last_reply)
            ep = self._episodes.get(episode_id)  # (an /end_episode answered meanwhile removed it)
        if ep is None:
            if seq is not None and self._ended_seqs.get(episode_id) == seq:
                return Replay(None)  # a retried /end_episode whose first answer was lost
            if episode_id in self._retired:
                why = self._retired[episode_id]
                raise RequestError(410, f"episode {episode_id!r} {why}: start a new episode")
            raise RequestError(
                404, f"unknown episode_id {episode_id!r}: start it with /start_episode (or it has ended)"
            )
        if ep.busy:
            raise RequestError(
                409, f"episode {episode_id!r} already has a request in progress: send one at a time"
            )
        if reward is not None and (seq is None or seq != ep.rewarded_seq):  # (a failed first try added it)
            if ep.open is None:
                raise RequestError(
                    409, f"episode {episode_id!r} has no action yet: a reward follows a /get_action"
                )
            step_reward = ep.open[4] + reward
            if abs(step_reward) > F32_MAX:
                raise RequestError(
                    400,
                    f"reward: the rewards since the last action add up to "
                    f"{step_reward:.4g}, beyond float32's range (|x| <= {F32_MAX:.4g})",
                )
            ep.open[4] = step_reward
            ep.ep_return += reward
            ep.rewarded_seq = seq
        ep.busy, ep.pending_seq = True, seq
        ep.last_seen = time.monotonic()
        self._episodes.move_to_end(episode_id)
        return ep

    def _release(self, ep: Episode, answered: bool = True, reply: Any = None) -> None:
        """The episode's request is done: answered (`reply` is kept for a repetition) or failed (a
        repetition is then answered anew)."""
        ep.busy = False
        if answered and ep.pending_seq is not None:
            ep.last_seq, ep.last_reply = ep.pending_seq, reply
        ep.pending_seq = None
        if ep.waiters:
            self._cond.notify_all()

    def _complete(self, n: int) -> None:
        self._complete_steps += n
        if self._complete_steps >= self._wanted:
            self._cond.notify_all()
