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
"""
from __future__ import annotations

import http.client
import json
import os
from typing import Any
from urllib.parse import urlsplit

import numpy as np

TOKEN_ENV = "RELAYRL_SERVER_TOKEN"


class PolicyServerError(RuntimeError):
    """The server refused a request: `status` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status


class PolicyClient:
    def __init__(self, address: str, token: str | None = None, timeout_s: float = 30.0, batch_rewards: bool = True):
        parts = urlsplit(address if "://" in address else f"http://{address}")
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"PolicyClient address {address!r}: expected http://HOST:PORT")
        self.host, self.port = parts.hostname, parts.port or 80
        self.timeout_s = timeout_s
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self.batch_rewards = batch_rewards
        self._unsent: dict[str, float] = {}
        self._conn: http.client.HTTPConnection | None = None

    # ------------------------------------------------------------------ the RLlib-shaped API
    def start_episode(self, episode_id: str | None = None) -> str:
        return self._post("/start_episode", {"episode_id": episode_id})["episode_id"]

    def get_action(self, episode_id: str, observation: Any) -> Any:
        body = {"episode_id": episode_id, "observation": observation}
        self._attach_reward(episode_id, body)
        return self._post("/get_action", body)["action"]

    def log_returns(self, episode_id: str, reward: float) -> None:
        if self.batch_rewards:
            self._unsent[episode_id] = self._unsent.get(episode_id, 0.0) + float(reward)
        else:
            self._post("/log_returns", {"episode_id": episode_id, "reward": float(reward)})

    def end_episode(self, episode_id: str, observation: Any, truncated: bool = False) -> None:
        body = {"episode_id": episode_id, "observation": observation, "truncated": bool(truncated)}
        self._attach_reward(episode_id, body)
        self._post("/end_episode", body)

    def status(self) -> dict:
        return self._request("GET", "/status", None)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # ------------------------------------------------------------------ plumbing
    def _attach_reward(self, episode_id: str, body: dict) -> None:
        if episode_id in self._unsent:
            body["reward"] = self._unsent.pop(episode_id)

    def _post(self, path: str, body: dict) -> dict:
        return self._request("POST", path, json.dumps(body, default=_to_json).encode())

    def _request(self, method: str, path: str, data: bytes | None) -> dict:
        for attempt in (0, 1):  # one retry on a fresh connection if the kept-alive one was closed
            if self._conn is None:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)
            try:
                self._conn.request(method, path, body=data, headers=self._headers)
                response = self._conn.getresponse()
                payload = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()
                if attempt == 1:
                    raise
        reply = json.loads(payload) if payload else {}
        if response.status != 200:
            raise PolicyServerError(response.status, reply.get("error", payload.decode(errors="replace")))
        return reply


def _to_json(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
