"""A stand-in for a Streamlit worker in tests/test_serve.py: `python fake_worker.py APP
--server.port P [other flags]` answers every GET on 127.0.0.1:P with `ok` (as
/_stcore/health does) until it is killed; GET /hold sends its headers at once and its body
HOLD_S seconds later, holding the connection open as a student's websocket does. Standard
library only, so the supervisor's test starts in a blink."""

from __future__ import annotations

import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOLD_S = 3.0


class Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.path.startswith("/hold"):
            self.wfile.flush()
            time.sleep(HOLD_S)
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def main(argv: list[str]) -> None:
    port = int(argv[argv.index("--server.port") + 1])
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer(("127.0.0.1", port), Ok).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
