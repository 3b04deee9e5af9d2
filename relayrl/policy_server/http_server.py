"""HTTP front of the policy server: stdlib ThreadingHTTPServer, JSON POSTs, keep-alive connections.

    POST /start_episode {"episode_id"?, "seq"?}                                    -> {"episode_id"}
    POST /get_action    {"episode_id", "observation", "reward"?, "seq"?}           -> {"action"}
    POST /log_returns   {"episode_id", "reward", "seq"?}                           -> {}
    POST /end_episode   {"episode_id", "observation", "truncated"?, "reward"?, "seq"?} -> {}
    GET  /status        -> training and server counters

`reward` on /get_action and /end_episode is the reward since the previous action (what /log_returns would
have sent; the client batches it to halve the round trips). `seq` numbers an episode's requests (its
start: a number the client draws; then 1, 2, ...): a request repeated with the last answered `seq` (a
retry after a lost reply) is answered as the first time and not applied twice (episode_requests.py).
Every failure is a JSON {"error": message} with a 4xx status (5xx only for the server's own faults, and
503 when full or stopping); no request can stop the server. With a token, every request needs
`Authorization: Bearer <token>`. Every reply carries `X-Relayrl-Server: <id>`, new for each server start,
so a client can tell that episodes it started are gone.

One thread per connection, at most `max_connections` of them: a connection over the cap is answered
503 (Retry-After: 1) and closed at once, without a thread. Each request must arrive whole (request
line, headers and body) within `read_timeout_s` of the server starting to wait for it: the deadline
is total, not per read, so a client dripping one byte a second is closed as surely as a silent one.
The cap lives in `connections`, the reading and answering of one connection's requests in `request_handler`.
"""

from __future__ import annotations

import hmac
import ipaddress
import math
import socket
import threading
import uuid
from collections.abc import Callable

from relayrl.policy_server import wire
from relayrl.policy_server.connections import CappedServer
from relayrl.policy_server.episodes import ExternalEpisodes
from relayrl.policy_server.limits import ServerLimits
from relayrl.policy_server.request_handler import RequestHandler
from relayrl.policy_server.wire import SpaceCodec


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class PolicyServer:
    """Serves `episodes` on host:port (port 0 picks a free one) until stop()."""

    def __init__(
        self,
        episodes: ExternalEpisodes,
        codec: SpaceCodec,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        status: Callable[[], dict] | None = None,
        limits: ServerLimits = ServerLimits(),
    ):
        if not is_loopback(host) and not token:
            raise ValueError(
                f"serving on {host!r} (not loopback) needs a shared-secret token: set RELAYRL_SERVER_TOKEN"
            )
        self.episodes, self.codec, self.limits = episodes, codec, limits
        self.server_id = uuid.uuid4().hex
        self._token = token.encode() if token else None
        self._status = status or (lambda: {})
        self.routes: dict[str, Callable[[dict], dict]] = {
            "/start_episode": self._start_episode,
            "/get_action": self._get_action,
            "/log_returns": self._log_returns,
            "/end_episode": self._end_episode,
        }
        handler = type("Handler", (RequestHandler,), {"server_app": self})
        self.httpd = CappedServer((host, port), handler, limits.max_connections)
        self.host, self.port = host, self.httpd.server_address[1]
        self.timed_out = 0  # connections closed because a request did not arrive in time
        self._thread: threading.Thread | None = None
        self.connections: set = set()  # open sockets, closed on stop()
        self.connections_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://[{self.host}]:{self.port}" if ":" in self.host else f"http://{self.host}:{self.port}"

    def start(self) -> PolicyServer:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, name="relayrl-http", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, then close the open connections so no client waits on a dead server."""
        self.httpd.shutdown()
        self.httpd.server_close()
        with self.connections_lock:
            for sock in list(self.connections):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def authorized(self, header: str | None) -> bool:
        if self._token is None:
            return True
        given = (header or "").removeprefix("Bearer ").encode(errors="replace")
        return hmac.compare_digest(given, self._token)

    def status(self) -> dict:
        merged = {
            **self.episodes.status(),
            **self._status(),
            "open_connections": self.httpd.open_connections,
            "refused_connections": self.httpd.refused,
            "timed_out_connections": self.timed_out,
        }
        # JSON has no NaN / Inf: null
        return {k: None if isinstance(v, float) and not math.isfinite(v) else v for k, v in merged.items()}

    # ------------------------------------------------------------------ routes: validated body -> reply
    def _start_episode(self, body: dict) -> dict:
        requested = wire.episode_id(body) if body.get("episode_id") is not None else None
        return {"episode_id": self.episodes.start_episode(requested, wire.sequence(body))}

    def _get_action(self, body: dict) -> dict:
        eid, x = wire.episode_id(body), self.codec.observation(wire.field(body, "observation"))
        reward, seq = _optional_reward(body), wire.sequence(body)
        return {"action": self.codec.action(self.episodes.get_action(eid, x, reward, seq))}

    def _log_returns(self, body: dict) -> dict:
        reward = wire.reward(wire.field(body, "reward"))
        self.episodes.log_returns(wire.episode_id(body), reward, wire.sequence(body))
        return {}

    def _end_episode(self, body: dict) -> dict:
        eid, x = wire.episode_id(body), self.codec.observation(wire.field(body, "observation"))
        truncated, reward, seq = wire.flag(body, "truncated"), _optional_reward(body), wire.sequence(body)
        self.episodes.end_episode(eid, x, truncated, reward, seq)
        return {}


def _optional_reward(body: dict) -> float | None:
    value = body.get("reward")
    return None if value is None else wire.reward(value)
