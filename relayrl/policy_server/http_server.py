"""HTTP front of the policy server: stdlib ThreadingHTTPServer, JSON POSTs, keep-alive connections.

    POST /start_episode {"episode_id"?}                                  -> {"episode_id"}
    POST /get_action    {"episode_id", "observation", "reward"?}         -> {"action"}
    POST /log_returns   {"episode_id", "reward"}                         -> {}
    POST /end_episode   {"episode_id", "observation", "truncated"?, "reward"?} -> {}
    GET  /status                                                         -> training and server counters

`reward` on /get_action and /end_episode is the reward since the previous action (what /log_returns
would have sent; the client batches it to halve the round trips). Every failure is a JSON
{"error": message} with a 4xx status (5xx only for the server's own faults); no request can stop
the server. With a token, every request needs `Authorization: Bearer <token>`.
"""
from __future__ import annotations

import hmac
import json
import socket
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from relayrl.policy_server import wire
from relayrl.policy_server.episodes import ExternalEpisodes
from relayrl.policy_server.wire import RequestError, SpaceCodec

MAX_BODY_BYTES = 1 << 20
LOOPBACK = ("127.0.0.1", "localhost", "::1")


class PolicyServer:
    """Serves `episodes` on host:port (port 0 picks a free one) until stop()."""

    def __init__(self, episodes: ExternalEpisodes, codec: SpaceCodec, host: str = "127.0.0.1", port: int = 0,
                 token: str | None = None, status: Callable[[], dict] | None = None):
        if host not in LOOPBACK and not token:
            raise ValueError(f"serving on {host!r} (not loopback) needs a shared-secret token: set RELAYRL_SERVER_TOKEN")
        self.episodes, self.codec = episodes, codec
        self._token = token.encode() if token else None
        self._status = status or (lambda: {})
        self.routes: dict[str, Callable[[dict], dict]] = {
            "/start_episode": self._start_episode, "/get_action": self._get_action,
            "/log_returns": self._log_returns, "/end_episode": self._end_episode,
        }
        handler = type("Handler", (_Handler,), {"server_app": self})
        self.httpd = _Server((host, port), handler)
        self.host, self.port = host, self.httpd.server_address[1]
        self._thread: threading.Thread | None = None
        self.connections: set = set()  # open keep-alive sockets, closed on stop()
        self.connections_lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> "PolicyServer":
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="relayrl-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop accepting, then close the kept-alive connections so no client waits on a dead server."""
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
        given = (header or "").removeprefix("Bearer ").encode()
        return hmac.compare_digest(given, self._token)

    def status(self) -> dict:
        merged = {**self.episodes.status(), **self._status()}
        return {k: None if isinstance(v, float) and v != v else v for k, v in merged.items()}  # NaN -> null

    # ------------------------------------------------------------------ routes: validated body -> reply
    def _start_episode(self, body: dict) -> dict:
        requested = wire.episode_id(body) if "episode_id" in body and body["episode_id"] is not None else None
        return {"episode_id": self.episodes.start_episode(requested)}

    def _get_action(self, body: dict) -> dict:
        eid, x = wire.episode_id(body), self.codec.observation(wire.field(body, "observation"))
        reward = _optional_reward(body)
        return {"action": self.codec.action(self.episodes.get_action(eid, x, reward))}

    def _log_returns(self, body: dict) -> dict:
        self.episodes.log_returns(wire.episode_id(body), wire.reward(wire.field(body, "reward")))
        return {}

    def _end_episode(self, body: dict) -> dict:
        eid, x = wire.episode_id(body), self.codec.observation(wire.field(body, "observation"))
        self.episodes.end_episode(eid, x, wire.flag(body, "truncated"), _optional_reward(body))
        return {}


def _parse_json(raw: bytes) -> dict:
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise RequestError(400, f"request body is not valid JSON: {exc}") from None
    if not isinstance(body, dict):
        raise RequestError(400, f"request body must be a JSON object, got {type(body).__name__}")
    return body


def _optional_reward(body: dict) -> float | None:
    value = body.get("reward")
    return None if value is None else wire.reward(value)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the listen backlog: bursts of new clients must not be refused

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is no server fault
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client reuses one connection for all its requests
    disable_nagle_algorithm = True  # headers and body are two writes: Nagle + delayed ACK would add 40 ms
    server_app: PolicyServer

    def setup(self) -> None:
        super().setup()
        with self.server_app.connections_lock:
            self.server_app.connections.add(self.connection)

    def finish(self) -> None:
        with self.server_app.connections_lock:
            self.server_app.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass  # the client (or stop()) closed the connection first

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        try:
            raw = self._read_body()
            self._authorize()  # before anything else is said about the request
            route = self.server_app.routes.get(self.path)
            if route is None:
                raise RequestError(404, f"unknown path {self.path!r}; allowed: {', '.join(self.server_app.routes)}, GET /status")
            self._reply(200, route(_parse_json(raw)))
        except RequestError as exc:
            self._reply(exc.status, {"error": exc.message})
        except Exception as exc:  # noqa: BLE001 - a bug must cost one request, never the server
            traceback.print_exc(file=sys.stderr)
            self._reply(500, {"error": f"internal error: {type(exc).__name__}: {exc}"})

    def do_GET(self) -> None:  # noqa: N802
        try:
            self._authorize()
            if self.path != "/status":
                raise RequestError(405 if self.path in self.server_app.routes else 404,
                                   f"GET {self.path}: use POST for {', '.join(self.server_app.routes)}; GET only /status")
            self._reply(200, self.server_app.status())
        except RequestError as exc:
            self._reply(exc.status, {"error": exc.message})
        except Exception as exc:  # noqa: BLE001
            traceback.print_exc(file=sys.stderr)
            self._reply(500, {"error": f"internal error: {type(exc).__name__}: {exc}"})

    def _authorize(self) -> None:
        if not self.server_app.authorized(self.headers.get("Authorization")):
            raise RequestError(401, "missing or wrong token: send 'Authorization: Bearer <token>'")

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is None or not length.isdigit():
            self.close_connection = True
            raise RequestError(411, "a Content-Length header is required")
        if int(length) > MAX_BODY_BYTES:
            self.close_connection = True  # the unread body must not be parsed as the next request
            raise RequestError(413, f"request body of {length} bytes is over the {MAX_BODY_BYTES} byte limit")
        return self.rfile.read(int(length))

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, allow_nan=False, default=_json_default).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - one line per request is too much
        pass


def _json_default(value: Any) -> Any:
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
