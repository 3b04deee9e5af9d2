"""HTTP front of the policy server: stdlib ThreadingHTTPServer, JSON POSTs, keep-alive connections.

    POST /start_episode {"episode_id"?}                                  -> {"episode_id"}
    POST /get_action    {"episode_id", "observation", "reward"?}         -> {"action"}
    POST /log_returns   {"episode_id", "reward"}                         -> {}
    POST /end_episode   {"episode_id", "observation", "truncated"?, "reward"?} -> {}
    GET  /status                                                         -> training and server counters

`reward` on /get_action and /end_episode is the reward since the previous action (what /log_returns
would have sent; the client batches it to halve the round trips). Every failure is a JSON
{"error": message} with a 4xx status (5xx only for the server's own faults, and 503 when full or
stopping); no request can stop the server. With a token, every request needs
`Authorization: Bearer <token>`. Every reply carries `X-Relayrl-Server: <id>`, new for each server
start, so a client can tell that episodes it started are gone.

One thread per connection, at most `max_connections` of them: a connection over the cap is answered
503 (Retry-After: 1) and closed at once, without a thread. Each request must arrive whole (request
line, headers and body) within `read_timeout_s` of the server starting to wait for it: the deadline
is total, not per read, so a client dripping one byte a second is closed as surely as a silent one.
"""

from __future__ import annotations

import hmac
import io
import ipaddress
import json
import math
import re
import socket
import socketserver
import sys
import threading
import time
import traceback
import uuid
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from relayrl.policy_server import wire
from relayrl.policy_server.client import SERVER_ID_HEADER
from relayrl.policy_server.episodes import ExternalEpisodes
from relayrl.policy_server.limits import ServerLimits
from relayrl.policy_server.wire import RequestError, SpaceCodec

MAX_BODY_BYTES = 1 << 20
_CONTENT_LENGTH = re.compile(r"[0-9]+")  # ASCII digits only: str.isdigit() also accepts '²'


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
        handler = type("Handler", (_Handler,), {"server_app": self})
        self.httpd = _Server((host, port), handler, limits.max_connections)
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


def _optional_reward(body: dict) -> float | None:
    value = body.get("reward")
    return None if value is None else wire.reward(value)


class _Server(ThreadingHTTPServer):
    """Counts its connections; over the cap a connection is refused in the accepting thread."""

    daemon_threads = True
    request_queue_size = 256  # the listen backlog: bursts of new clients must not be refused

    def __init__(self, address: tuple[str, int], handler: type, max_connections: int):
        self.address_family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.max_connections = max_connections
        self.open_connections = self.refused = 0
        self._count_lock = threading.Lock()
        super().__init__(address, handler)

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)  # not HTTPServer's: its reverse DNS lookup can take seconds
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def verify_request(self, request: socket.socket, client_address: Any) -> bool:
        with self._count_lock:
            if self.open_connections < self.max_connections:
                self.open_connections += 1
                return True
            self.refused += 1
        _refuse(
            request,
            f"the server has {self.max_connections} connections open (its limit, "
            f"--max-connections): retry shortly",
        )
        return False  # the caller closes it

    def process_request(self, request: socket.socket, client_address: Any) -> None:
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: nothing else will release the slot
            self._release()
            raise

    def process_request_thread(self, request: socket.socket, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def _release(self) -> None:
        with self._count_lock:
            self.open_connections -= 1

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client hanging up is no server fault
            super().handle_error(request, client_address)


def _refuse(sock: socket.socket, message: str) -> None:
    """503 on a fresh connection without blocking the accepting thread (a full socket buffer drops it)."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        sock.setblocking(False)
        sock.send(head + body)
        sock.recv(1 << 16)  # what the client sent already: closing with unread data would reset the link
    except OSError:
        pass


class _DeadlineReader(io.RawIOBase):
    """The connection's socket, read with one deadline for the whole request (set by the handler)."""

    def __init__(self, handler: _Handler):
        self.handler = handler

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # noqa: ANN001 - a writable buffer
        remaining = self.handler.deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise TimeoutError("the request did not arrive within the read timeout")
            self.handler.connection.settimeout(remaining)
            return self.handler.connection.recv_into(buffer)
        except TimeoutError:
            with self.handler.server_app.connections_lock:  # many connections may time out at once
                self.handler.server_app.timed_out += 1
            raise


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a client reuses one connection for all its requests
    default_request_version = "HTTP/1.0"  # a malformed request line still gets a status line back
    disable_nagle_algorithm = True  # headers and body are two writes: Nagle + delayed ACK would add 40 ms
    server_app: PolicyServer
    deadline = 0.0

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain socket file: reads go through the deadline instead
        self.rfile = io.BufferedReader(_DeadlineReader(self))
        with self.server_app.connections_lock:
            self.server_app.connections.add(self.connection)

    def finish(self) -> None:
        with self.server_app.connections_lock:
            self.server_app.connections.discard(self.connection)
        try:
            super().finish()
        except OSError:
            pass  # the client (or stop()) closed the connection first

    def handle_one_request(self) -> None:
        self.deadline = time.monotonic() + self.server_app.limits.read_timeout_s
        super().handle_one_request()  # a TimeoutError while reading closes the connection there

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self._answer(self._post)

    def do_GET(self) -> None:  # noqa: N802
        if "Content-Length" in self.headers or "Transfer-Encoding" in self.headers:
            self.close_connection = True  # an unread body must not be parsed as the next request
        self._answer(self._get)

    def _post(self) -> dict:
        raw = self._read_body()
        self._authorize()  # before anything else is said about the request
        route = self.server_app.routes.get(self.path)
        if route is None:
            allowed = ", ".join(self.server_app.routes)
            raise RequestError(404, f"unknown path {self.path[:200]!r}; allowed: {allowed}, GET /status")
        return route(wire.parse_body(raw))

    def _get(self) -> dict:
        self._authorize()
        if self.path != "/status":
            routes = ", ".join(self.server_app.routes)
            raise RequestError(
                405 if self.path in self.server_app.routes else 404,
                f"GET {self.path[:200]}: use POST for {routes}; GET only /status",
            )
        return self.server_app.status()

    def _answer(self, handle: Callable[[], dict]) -> None:
        try:
            status, payload = 200, handle()
        except RequestError as exc:
            status, payload = exc.status, {"error": exc.message}
        except Exception as exc:  # noqa: BLE001 - a bug must cost one request, never the server
            traceback.print_exc(file=sys.stderr)
            status, payload = 500, {"error": f"internal error: {type(exc).__name__}: {exc}"}
        self._reply(status, payload)  # a client gone meanwhile: ConnectionError, which handle_error ignores

    def _authorize(self) -> None:
        if not self.server_app.authorized(self.headers.get("Authorization")):
            raise RequestError(401, "missing or wrong token: send 'Authorization: Bearer <token>'")

    def _read_body(self) -> bytes:
        """The body announced by exactly one plain Content-Length, read within the request's deadline."""
        lengths = self.headers.get_all("Content-Length") or []
        if "Transfer-Encoding" in self.headers or len(lengths) != 1:
            self.close_connection = True  # the body's extent is unknown: the connection cannot be reused
            if "Transfer-Encoding" in self.headers:
                raise RequestError(
                    400, "Transfer-Encoding is not supported: send the body with a Content-Length"
                )
            if not lengths:
                raise RequestError(411, "a Content-Length header is required")
            raise RequestError(400, f"Content-Length must be given once, got {len(lengths)} headers")
        text = lengths[0].strip()
        if not _CONTENT_LENGTH.fullmatch(text):
            self.close_connection = True
            raise RequestError(
                400,
                f"Content-Length must be a decimal number of bytes (0..{MAX_BODY_BYTES}), got {text[:40]!r}",
            )
        if len(text) > 9 or int(text) > MAX_BODY_BYTES:  # (a 5,000-digit number is not even parsed)
            self.close_connection = True  # the unread body must not be parsed as the next request
            shown = text if len(text) <= 12 else text[:12] + "..."
            raise RequestError(413, f"request body of {shown} bytes is over the {MAX_BODY_BYTES} byte limit")
        length = int(text)
        try:
            raw = self.rfile.read(length)
        except TimeoutError:
            self.close_connection = True
            raise RequestError(
                408,
                f"the request body ({length} bytes announced) did not arrive within "
                f"{self.server_app.limits.read_timeout_s:g} s",
            ) from None
        if len(raw) < length:
            self.close_connection = True
            raise RequestError(
                400,
                f"the request body ended after {len(raw)} of the {length} bytes announced by Content-Length",
            )
        return raw

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (bad request line, headers too long or too many, unknown method) as
        JSON, with 4xx statuses: an unsupported method or version is the client's mistake."""
        code = {HTTPStatus.NOT_IMPLEMENTED: 405, HTTPStatus.HTTP_VERSION_NOT_SUPPORTED: 400}.get(code, code)
        self.close_connection = True
        self._reply(code, {"error": message or HTTPStatus(code).phrase})

    def _reply(self, status: int, payload: Any) -> None:
        data = json.dumps(payload, allow_nan=False, default=_json_default).encode()
        self.connection.settimeout(self.server_app.limits.read_timeout_s)  # one that never reads is let go
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header(SERVER_ID_HEADER, self.server_app.server_id)
        if self.close_connection:
            self.send_header("Connection", "close")
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
