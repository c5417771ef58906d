"""A real `redis-server` for tests: Debian's package, installed by `make system` (before
`make test`), or here with apt-get where it is missing and apt-get can run (as root).
`start()` runs one on a free loopback port with its data in a given folder (append-only file,
fsync on every write, so a restart keeps every acknowledged write); `None` and the reason
when no server can run here."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_redis_server() -> tuple[str | None, str]:
    """(the redis-server binary or None, why not)."""
    found = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if os.access("/usr/bin/redis-server", os.X_OK) else None)
    if found:
        return found, ""
    if shutil.which("apt-get") and os.geteuid() == 0:
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        wait = ["-o", "DPkg::Lock::Timeout=300"]  # another apt-get's dpkg lock is waited for
        subprocess.run(["apt-get", *wait, "update", "-qq"], check=False, env=env,
                       capture_output=True)
        subprocess.run(["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends",
                        "redis-server"], check=False, env=env, capture_output=True)
        found = shutil.which("redis-server")
        if found:
            return found, ""
        return None, "redis-server is missing and `apt-get install redis-server` failed"
    return None, ("redis-server is missing (Debian: `apt-get install redis-server`, as root); "
                  "the Redis store's tests need a real server")


@dataclass
class RedisServer:
    binary: str
    folder: Path
    port: int
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout_s: float = 15) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.folder),
             "--daemonize", "no", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(64).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}")
            time.sleep(0.1)
        raise RuntimeError("redis-server did not answer")

    def stop(self, kill: bool = False) -> None:
        if self.proc is None:
            return
        if kill:
            self.proc.kill()
        else:
            self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


def start(folder: Path) -> tuple[RedisServer | None, str]:
    """A running redis-server with its data in `folder`, or (None, why not)."""
    binary, why = ensure_redis_server()
    if binary is None:
        return None, why
    server = RedisServer(binary, folder, free_port())
    server.start()
    return server, ""
