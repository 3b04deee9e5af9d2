"""One connection of the policy server: each request read whole within its deadline (request line, headers
and a body of exactly one plain Content-Length), routed to the PolicyServer, answered in JSON.
"""

from __future__ import annotations

import io
import json
import re
import sys
import time
import traceback
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

from relayrl.policy_server import wire
from relayrl.policy_server.client import SERVER_ID_HEADER
from relayrl.policy_server.wire import RequestError

if TYPE_CHECKING:
    from relayrl.policy_server.http_server import PolicyServer

MAX_BODY_BYTES = 1 << 20
_CONTENT_LENGTH = re.compile(r"[0-9]+")  # ASCII digits only: str.isdigit() also accepts '²'


class _DeadlineReader(io.RawIOBase):
    """The connection's socket, read with one deadline for the whole request (set by the handler)."""

    def __init__(self, handler: RequestHandler):
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


class RequestHandler(BaseHTTPRequestHandler):
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
