"""A stand-in for a Streamlit worker in tests/test_serve.py: `python fake_worker.py APP
--server.port P [other flags]` answers every GET on 127.0.0.1:P with `ok` (as
/_stcore/health does) until it is killed. Standard library only, so the supervisor's test
starts in a blink."""

from __future__ import annotations

import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def main(argv: list[str]) -> None:
    port = int(argv[argv.index("--server.port") + 1])
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer(("127.0.0.1", port), Ok).serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
