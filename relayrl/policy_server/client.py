"""PolicyClient: drive episodes of an external simulator against `relayrl serve` over HTTP/JSON.

    client = PolicyClient("http://127.0.0.1:9900")
    eid = client.start_episode()
    obs = sim.reset()
    while True:
        action = client.get_action(eid, obs)
        obs, reward, terminated, truncated = sim.step(action)
        client.log_returns(eid, reward)
        if terminated or truncated:
            client.end_episode(eid, obs, truncated=truncated)
            break

Rewards given to log_returns are summed here and sent with the next get_action / end_episode (one
round trip per step instead of two); pass `batch_rewards=False` to send each one at once.
One keep-alive connection per client; use one client per thread.

The server going away is survived: a refused, reset or closed connection (a restart, the server
closing an idle connection or stopping in the middle of a reply, a full server's 503 with Retry-After)
is retried on a fresh connection, with backoff from 50 ms to 1 s, for up to `reconnect_s` seconds;
after that PolicyServerUnavailable (a ConnectionError) is raised. A retry is safe where the first try did
reach the server and only its reply was lost: each request of an episode carries its number, and the
server answers a repeated number as the first time, without a second action or a second reward. A
restarted server does not know the
episodes started before: a request for one raises EpisodeLostError (as does one for an episode the
server evicted or expired), and the simulator starts a new episode with the same client. Episodes are
never restarted silently: the simulator's own state would no longer match the episode the server records.
"""

from __future__ import annotations

import http.client
import json
import math
import os
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

import numpy as np

TOKEN_ENV = "RELAYRL_SERVER_TOKEN"
SERVER_ID_HEADER = "X-Relayrl-Server"  # a new value for every server start
START_SEQ_FLOOR = 2**52  # a start's random number lies in [2^52, 2^53): no episode counts that far
BACKOFF_S = (0.05, 1.0)  # first and longest wait between reconnect attempts


class PolicyServerError(RuntimeError):
    """The server refused a request: `status` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class EpisodeLostError(PolicyServerError):
    """The server no longer has this episode (it restarted, or evicted / expired it): start a new one."""


class PolicyServerUnavailable(ConnectionError):
    """No server answered at the address within the client's reconnect budget."""


class PolicyClient:
    def __init__(
        self,
        address: str,
        token: str | None = None,
        timeout_s: float = 30.0,
        batch_rewards: bool = True,
        reconnect_s: float = 10.0,
    ):
        """`timeout_s`: the longest wait for one reply; `reconnect_s`: how long to keep reconnecting to a
        server that went away before raising PolicyServerUnavailable (0: one immediate retry only)."""
        parts = urlsplit(address if "://" in address else f"http://{address}")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"PolicyClient address {address!r}: expected http://HOST:PORT")
        if not _seconds(timeout_s) or timeout_s == 0:
            raise ValueError(
                f"PolicyClient timeout_s = {timeout_s!r}: allowed a finite number of seconds > 0"
            )
        if not _seconds(reconnect_s):
            raise ValueError(
                f"PolicyClient reconnect_s = {reconnect_s!r}: allowed a finite number of seconds >= 0"
            )
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout_s, self.reconnect_s = timeout_s, reconnect_s
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self.batch_rewards = batch_rewards
        self._unsent: dict[str, float] = {}
        self._episodes: dict[str, str | None] = {}  # open episode id -> id of the server it was started on
        self._seq: dict[str, int] = {}  # open episode id -> the number its next request carries
        self.server_id: str | None = None  # of the server that answered last
        self._conn: http.client.HTTPConnection | None = None

    # ------------------------------------------------------------------ the RLlib-shaped API
    # Every request of an episode carries its number (`seq`), and a retry repeats it: a request whose reply
    # was lost is answered again by the server, not applied twice (an action computed twice, a reward
    # counted twice). The id is chosen here for the same reason: a retried start names the same episode.
    # The start's number is drawn at random (above any count of requests), so that starting an open id
    # again is still refused, while a retry of the same start is not.
    def start_episode(self, episode_id: str | None = None) -> str:
        episode_id = episode_id if episode_id is not None else uuid.uuid4().hex
        start = START_SEQ_FLOOR + uuid.uuid4().int % START_SEQ_FLOOR
        episode_id = self._post("/start_episode", {"episode_id": episode_id, "seq": start})["episode_id"]
        self._episodes[episode_id], self._seq[episode_id] = self.server_id, 1
        return episode_id

    def get_action(self, episode_id: str, observation: Any) -> Any:
        body = {"episode_id": episode_id, "observation": observation}
        self._attach_reward(episode_id, body)
        return self._post("/get_action", self._numbered(body))["action"]

    def log_returns(self, episode_id: str, reward: float) -> None:
        if self.batch_rewards:
            self._unsent[episode_id] = self._unsent.get(episode_id, 0.0) + float(reward)
        else:
            self._post("/log_returns", self._numbered({"episode_id": episode_id, "reward": float(reward)}))

    def end_episode(self, episode_id: str, observation: Any, truncated: bool = False) -> None:
        body = {"episode_id": episode_id, "observation": observation, "truncated": bool(truncated)}
        self._attach_reward(episode_id, body)
        self._post("/end_episode", self._numbered(body))
        self._episodes.pop(episode_id, None)
        self._seq.pop(episode_id, None)

    def status(self) -> dict:
        return self._request("GET", "/status", None)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ plumbing
    def _numbered(self, body: dict) -> dict:
        """`body` with its episode's next request number (none for an episode this client did not start)."""
        episode_id = body["episode_id"]
        if episode_id in self._seq:
            body["seq"] = self._seq[episode_id]
            self._seq[episode_id] += 1
        return body

    def _attach_reward(self, episode_id: str, body: dict) -> None:
        if episode_id in self._unsent:
            body["reward"] = self._unsent.pop(episode_id)

    def _post(self, path: str, body: dict) -> dict:
        try:
            return self._request("POST", path, json.dumps(body, default=_to_json, allow_nan=False).encode())
        except PolicyServerError as exc:
            episode_id = body.get("episode_id")
            if exc.status not in (404, 410) or path == "/start_episode" or episode_id not in self._episodes:
                raise
            started_on = self._episodes.pop(episode_id)
            self._unsent.pop(episode_id, None)
            self._seq.pop(episode_id, None)
            if exc.status == 404 and started_on is not None and started_on != self.server_id:
                raise EpisodeLostError(
                    404,
                    f"episode {episode_id!r} was lost: the server restarted since it "
                    f"began and does not know it; start a new episode",
                ) from None
            raise EpisodeLostError(exc.status, str(exc).removeprefix(f"HTTP {exc.status}: ")) from None

    def _request(self, method: str, path: str, data: bytes | None) -> dict:
        """One request; on a connection failure retried on fresh connections until reconnect_s has passed."""
        deadline, wait = None, BACKOFF_S[0]
        while True:
            try:
                status, payload, retry = self._exchange(method, path, data)
                if not retry:
                    break
                failure: Exception = PolicyServerError(status, _error_text(payload))
            except ConnectionError as exc:  # refused, reset, broken pipe, closed before a reply
                failure = exc
            self.close()
            now = time.monotonic()
            if deadline is None:  # the first retry is immediate: usually the server closed an idle connection
                deadline = now + self.reconnect_s
                continue
            if now + wait > deadline:
                if isinstance(failure, PolicyServerError):
                    raise failure
                raise PolicyServerUnavailable(
                    f"no policy server answered at {self.host}:{self.port} for {self.reconnect_s:g} s "
                    f"({type(failure).__name__}: {failure})"
                ) from failure
            time.sleep(wait)
            wait = min(2 * wait, BACKOFF_S[1])
        try:
            reply = json.loads(payload) if payload else {}
        except ValueError:
            reply = None
        if status != 200 or not isinstance(reply, dict):
            raise PolicyServerError(status, _error_text(payload))
        return reply

    def _exchange(self, method: str, path: str, data: bytes | None) -> tuple[int, bytes, bool]:
        """(status, body, whether to retry: a full server's 503 with Retry-After) on the kept-alive
        connection."""
        if self._conn is None:
            self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
        try:
            self._conn.request(method, path, body=data, headers=self._headers)
            response = self._conn.getresponse()
            payload = response.read()
        except http.client.IncompleteRead as exc:
            # the server went away in the middle of its reply (a stop or restart while it was writing): a
            # connection failure like one before the reply, not a malformed answer
            self.close()
            raise ConnectionError(
                f"the connection closed in the middle of the reply ({len(exc.partial)} bytes of "
                f"{len(exc.partial) + (exc.expected or 0)})"
            ) from exc
        except BaseException:
            self.close()  # the connection is in an unknown state (half a reply, a timeout): never reuse it
            raise
        self.server_id = response.getheader(SERVER_ID_HEADER) or self.server_id
        if response.will_close:
            self.close()
        full = response.status == 503 and response.getheader("Retry-After") is not None
        return response.status, payload, full


def _seconds(value: Any) -> bool:
    is_number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return is_number and math.isfinite(value) and value >= 0


def _error_text(payload: bytes) -> str:
    try:
        return str(json.loads(payload)["error"])
    except (ValueError, KeyError, TypeError):
        return payload[:500].decode(errors="replace")


def _to_json(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
