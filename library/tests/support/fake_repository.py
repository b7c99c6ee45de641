"""A Maven repository on 127.0.0.1 that has nothing: every request is answered with 404.

It lets tests reach the "repository answers, but the connector is not there" case without
the network.
"""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class _NotFound(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass  # keep the test output clean


@contextmanager
def empty_maven_repository() -> Iterator[str]:
    """Serve the empty repository while the block runs; yields its URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotFound)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/maven2/"
    finally:
        server.shutdown()
        server.server_close()
