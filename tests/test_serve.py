"""scripts/serve.py's nginx config (fast; the processes themselves: tests/e2e/test_e2e_serve.py).

nginx itself checks the generated config (`nginx -t`, Debian's package, installed here when
missing as `make serve` does); the affinity is a consistent hash of a cookie nginx sets (never
ip_hash, which puts every client behind one address on one worker); websockets get the Upgrade
and Connection headers and long timeouts; every path (/, /_stcore/, /media/, /static/) goes
through the one sticky location. `--stop` never signals a process that is not a launcher.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("attnviz_serve", ROOT / "scripts" / "serve.py")
serve = importlib.util.module_from_spec(_spec)
sys.modules["attnviz_serve"] = serve  # its dataclass looks its module up by name
_spec.loader.exec_module(serve)


@pytest.fixture(scope="module")
def nginx() -> str:
    try:
        return serve.ensure_nginx()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        pytest.fail(f"nginx is missing and could not be installed: {e}")


def test_nginx_accepts_the_generated_config(nginx, tmp_path):
    (tmp_path / "nginx.conf").write_text(serve.nginx_config(18999, [18001, 18002, 18003],
                                                            tmp_path))
    run = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", "nginx.conf",
                          "-e", str(tmp_path / "error.log")], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    assert "syntax is ok" in run.stderr and "warn" not in run.stderr, run.stderr


def test_affinity_is_a_cookie_hash_and_websockets_are_proxied(tmp_path):
    conf = serve.nginx_config(8501, [9001, 9002], tmp_path)
    assert "ip_hash" not in conf
    assert re.search(r"hash \$affinity consistent;", conf)
    assert f"$cookie_{serve.COOKIE}" in conf and "$request_id" in conf
    assert re.search(rf'"{serve.COOKIE}=\$request_id; Path=/; HttpOnly', conf)
    assert conf.count("server 127.0.0.1:") == 2
    assert conf.count("location ") == 1 and "location / {" in conf  # every path is sticky
    for line in ("proxy_http_version 1.1;", "proxy_set_header Upgrade $http_upgrade;",
                 "proxy_set_header Connection $connection_upgrade;", "daemon off;",
                 "proxy_read_timeout 1d;", "proxy_send_timeout 1d;"):
        assert line in conf
    # Nothing outside the temporary folder: pid, logs and temp paths all under it.
    for path in re.findall(r"(?:pid|error_log|_temp_path) (\S+?);?\s", conf):
        assert path.startswith(str(tmp_path)), path
    assert "listen 127.0.0.1:8501;" in conf
    assert "listen 0.0.0.0:80;" in serve.nginx_config(80, [9001], tmp_path, "0.0.0.0")


def test_stop_ignores_a_stale_pid_file(tmp_path, monkeypatch):
    monkeypatch.setattr(serve.tempfile, "gettempdir", lambda: str(tmp_path))
    path = serve.pid_file(18998)
    path.write_text(f"{os.getpid()}\n")  # pytest, not a launcher: never signalled
    assert serve.stop_running(18998) is False
    assert not path.exists()
    assert serve.stop_running(18997) is False  # no file at all
