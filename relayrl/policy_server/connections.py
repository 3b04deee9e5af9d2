"""The policy server's listening socket: at most `max_connections` open connections; one over the cap is
answered 503 (Retry-After: 1) and closed in the accepting thread, without a thread of its own.
"""

from __future__ import annotations

import json
import socket
import socketserver
import sys
import threading
from http.server import ThreadingHTTPServer
from typing import Any


class CappedServer(ThreadingHTTPServer):
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
        refuse_connection(
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


def refuse_connection(sock: socket.socket, message: str) -> None:
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
