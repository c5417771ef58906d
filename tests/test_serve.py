"""scripts/serve.py's nginx config (fast; the processes themselves: tests/e2e/test_e2e_serve.py).

nginx itself checks the generated config (`nginx -t`, Debian's package, installed here when
missing as `make serve` does); the affinity is a cookie naming the worker, which nginx sets to
the next worker in turn for a new browser (never ip_hash, which puts every client behind one
address on one worker; a hash of a random key split a class 72 / 48); websockets get the Upgrade
and Connection headers and long timeouts; every path (/, /_stcore/, /media/, /static/) goes
through the one sticky location, except Streamlit's /static/ files, which nginx sends itself
from a gzip-compressed copy (the same bytes as the workers would send, decompressed), and
Streamlit's /_stcore/metrics, which nginx never passes on (however it is spelled).
`--stop` never signals a process that is not a launcher.
The supervisor (with stand-in workers, tests/fake_worker.py, behind a real nginx): a worker
killed with SIGKILL is logged and replaced on its port while nginx sends its students to the
other worker; nginx then serves the replacement; stop() leaves no process of the group and
starts no replacement. The tests that start nginx are marked `server` (not in `make test-fast`).
"""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
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


@pytest.mark.server
def test_nginx_accepts_the_generated_config(nginx, tmp_path):
    (tmp_path / "nginx.conf").write_text(serve.nginx_config(18999, [18001, 18002, 18003],
                                                            tmp_path))
    run = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", "nginx.conf",
                          "-e", str(tmp_path / "error.log")], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    assert "syntax is ok" in run.stderr and "warn" not in run.stderr, run.stderr


def test_affinity_is_a_cookie_naming_the_worker_and_websockets_are_proxied(tmp_path):
    conf = serve.nginx_config(8501, [9001, 9002], tmp_path)
    assert "ip_hash" not in conf and "hash " not in conf
    pool = re.search(r"upstream attnviz \{(.*?)\}", conf, re.S).group(1)
    assert pool.count("server 127.0.0.1:") == 2 and "backup" not in pool  # in turn
    for i, (own, other) in enumerate([(9001, 9002), (9002, 9001)], 1):
        up = re.search(rf"upstream attnviz_{i} \{{(.*?)\}}", conf, re.S).group(1)
        assert f"server 127.0.0.1:{own} max_fails=1" in up
        assert f"server 127.0.0.1:{other} backup;" in up
        assert f'"{i}" attnviz_{i};' in conf
    assert "proxy_pass http://$attnviz_upstream;" in conf
    assert f"$cookie_{serve.COOKIE}" in conf and "$request_id" not in conf
    assert re.search(rf'"{serve.COOKIE}=\$attnviz_worker; Path=/; HttpOnly', conf)
    # every path is sticky, but the metrics, which are not passed on
    assert conf.count("location ") == 2 and "location / {" in conf
    for line in ("proxy_http_version 1.1;", "proxy_set_header Upgrade $http_upgrade;",
                 "proxy_set_header Connection $connection_upgrade;", "daemon off;",
                 "proxy_read_timeout 1d;", "proxy_send_timeout 1d;"):
        assert line in conf
    # Nothing outside the temporary folder: pid, logs and temp paths all under it.
    for path in re.findall(r"(?:pid|error_log|_temp_path) (\S+?);?\s", conf):
        assert path.startswith(str(tmp_path)), path
    assert "listen 127.0.0.1:8501;" in conf
    assert "listen 0.0.0.0:80;" in serve.nginx_config(80, [9001], tmp_path, "0.0.0.0")


def test_static_files_are_copied_and_compressed_where_it_pays(tmp_path):
    src = tmp_path / "src"
    (src / "js").mkdir(parents=True)
    (src / "media").mkdir()
    script = b"function f(){return 1}\n" * 500
    (src / "js" / "index.abc.js").write_bytes(script)
    font = os.urandom(4000)  # a woff2 is compressed already: never gzipped
    (src / "media" / "font.woff2").write_bytes(font)
    (src / "js" / "tiny.js").write_bytes(b"x")  # gzip would be larger: no .gz
    files, raw, sent = serve.static_files(src, tmp_path / "out")
    out = tmp_path / "out"
    assert files == 3 and raw == len(script) + len(font) + 1
    assert (out / "js" / "index.abc.js").read_bytes() == script
    assert gzip.decompress((out / "js" / "index.abc.js.gz").read_bytes()) == script
    assert (out / "media" / "font.woff2").read_bytes() == font
    assert not (out / "media" / "font.woff2.gz").exists()
    assert not (out / "js" / "tiny.js.gz").exists()
    gz = (out / "js" / "index.abc.js.gz").stat().st_size
    assert sent == gz + len(font) + 1 and gz < len(script) / 10


def test_static_files_are_readable_by_other_users_whatever_the_umask(tmp_path):
    (tmp_path / "src" / "js").mkdir(parents=True)
    (tmp_path / "src" / "js" / "a.js").write_bytes(b"var a = 1;\n" * 100)
    old = os.umask(0o077)
    try:
        serve.static_files(tmp_path / "src", tmp_path / "out")
    finally:
        os.umask(old)
    for path in [tmp_path / "out", *(tmp_path / "out").rglob("*")]:
        assert path.stat().st_mode & 0o777 == (0o755 if path.is_dir() else 0o644), path


def test_streamlit_static_is_the_folder_streamlit_serves():
    import streamlit

    found = serve.streamlit_static()
    assert found == Path(streamlit.__file__).parent / "static" / "static"
    assert any(found.glob("js/*.js")) and any(found.glob("css/*.css"))


@pytest.mark.server
def test_static_location_serves_the_copy_and_everything_else_stays_sticky(nginx, tmp_path):
    conf = serve.nginx_config(18999, [18001, 18002], tmp_path, static=tmp_path / "static")
    assert conf.count("location ") == 3 and "location / {" in conf
    assert f"location ^~ /static/ {{\n            alias {tmp_path.as_posix()}/static/;" in conf
    for line in ("gzip_static on;", "gzip_vary on;", "application/javascript js mjs;",
                 'add_header Cache-Control "public, max-age=31536000, immutable" always;'):
        assert line in conf
    (tmp_path / "nginx.conf").write_text(conf)
    run = subprocess.run([nginx, "-t", "-p", str(tmp_path), "-c", "nginx.conf",
                          "-e", str(tmp_path / "error.log")], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0 and "warn" not in run.stderr, run.stderr


def fetch(url: str, gzip_ok: bool) -> tuple[int, dict, bytes]:
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"} if gzip_ok else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), b""


@contextlib.contextmanager
def running(cluster: serve.Cluster):
    """`cluster` started; stopped after, and its folder (nginx's config and files) removed:
    its logs are in the test's own folder."""
    cluster.start(timeout_s=60)
    try:
        yield cluster
    finally:
        cluster.stop(grace_s=5)
        cluster.remove_folder()

@pytest.mark.server
def test_nginx_sends_streamlits_static_files_itself_compressed(nginx, tmp_path):
    source = serve.streamlit_static()
    script = max(source.glob("js/*.js"), key=lambda f: f.stat().st_size)  # the largest
    font = next(source.glob("media/*.woff2"))
    cluster = serve.Cluster(workers=2, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    with running(cluster):
        files, raw, sent = cluster.static_summary
        assert files == sum(1 for f in source.rglob("*") if f.is_file()) and sent < raw / 2
        base = f"http://127.0.0.1:{cluster.port}/static/"
        status, headers, body = fetch(base + f"js/{script.name}", gzip_ok=True)
        assert status == 200 and headers["Content-Encoding"] == "gzip", headers
        assert gzip.decompress(body) == script.read_bytes()  # the very file, from nginx
        assert len(body) < script.stat().st_size / 2
        assert headers["X-Attnviz-Worker"] == "static" and "immutable" in headers[
            "Cache-Control"] and headers["Vary"] == "Accept-Encoding"
        assert headers["Content-Type"] == "application/javascript"
        status, headers, body = fetch(base + f"js/{script.name}", gzip_ok=False)
        assert status == 200 and "Content-Encoding" not in headers
        assert body == script.read_bytes()
        status, headers, body = fetch(base + f"media/{font.name}", gzip_ok=True)
        assert status == 200 and body == font.read_bytes()
        assert headers["Content-Type"] == "font/woff2" and "Content-Encoding" not in headers
        assert fetch(base + "js/none.js", gzip_ok=True)[0] == 404  # not passed to a worker
        for outside in ("../nginx.conf", "%2e%2e/nginx.conf", "..%2fnginx.conf"):
            # nginx resolves the dots first: never a file outside the copy
            assert b"daemon off" not in fetch(base + outside, gzip_ok=True)[2], outside
        # Everything else is the workers' (sticky, as before).
        assert worker_for(cluster.port, "k") in ("1", "2")


@pytest.mark.server
def test_nginx_sends_the_charts_plotly_js_itself_compressed(nginx, tmp_path):
    """plotly.js, the file every chart of the app loads (ui.live_chart: app/static/
    plotly-<hash>.min.js, written by the workers), comes from nginx gzip-compressed: the URL the
    app names, the very bytes the app serves, a quarter of them on the wire; any other
    /app/static/ path is still the workers'."""
    from attnviz.ui import live_chart

    script = live_chart.plotly_js()
    cluster = serve.Cluster(workers=2, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    with running(cluster):
        assert cluster.plotly_url == f"/app/static/{live_chart.plotly_name(script)}"
        url = f"http://127.0.0.1:{cluster.port}{cluster.plotly_url}"
        status, headers, body = fetch(url, gzip_ok=True)
        assert status == 200 and headers["Content-Encoding"] == "gzip", headers
        assert gzip.decompress(body) == script  # the app's file, not a worker's "ok"
        assert len(body) < len(script) / 3, len(body)
        assert headers["X-Attnviz-Worker"] == "static" and headers["Vary"] == "Accept-Encoding"
        assert headers["Content-Type"] == "application/javascript"
        assert "immutable" in headers["Cache-Control"]  # its name changes with its bytes
        status, headers, body = fetch(url, gzip_ok=False)
        assert status == 200 and "Content-Encoding" not in headers and body == script
        status, headers, body = fetch(f"http://127.0.0.1:{cluster.port}/app/static/other.js",
                                      gzip_ok=True)
        assert body == b"ok" and headers["X-Attnviz-Worker"] in ("1", "2")


@pytest.mark.server
def test_proxy_static_leaves_static_files_to_the_workers(nginx, tmp_path):
    cluster = serve.Cluster(workers=1, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py", static=False)
    with running(cluster):
        assert cluster.static_summary is None and cluster.plotly_url is None
        assert "/static/" not in (cluster.folder / "nginx.conf").read_text()
        status, headers, body = fetch(f"http://127.0.0.1:{cluster.port}/static/js/x.js", True)
        assert status == 200 and body == b"ok" and headers["X-Attnviz-Worker"] == "1"


def test_metrics_are_never_passed_on(tmp_path):
    conf = serve.nginx_config(8501, [9001, 9002], tmp_path)
    block = conf[conf.index("location ~* ^/_stcore/metrics"):]
    assert block[:block.index("}")].split("{")[1].split() == ["return", "404;"]
    assert conf.index("location ~* ^/_stcore/metrics") < conf.index("location / {")


@pytest.mark.server
def test_metrics_are_not_reachable_through_nginx_in_any_spelling(nginx, tmp_path):
    """/_stcore/metrics (sessions, their times, cache bytes) answers 404 from nginx itself
    however the path is written; the workers' other paths still answer."""
    cluster = serve.Cluster(workers=1, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    with running(cluster):
        base = f"http://127.0.0.1:{cluster.port}"
        for path in ("/_stcore/metrics", "/_stcore/metrics/", "/_stcore//metrics",
                     "//_stcore/metrics", "/_STCORE/Metrics", "/_stcore/%6detrics",
                     "/%5fstcore/metrics", "/static/../_stcore/metrics",
                     "/_stcore/metrics?format=text", "/x/%2e%2e/_stcore/metrics"):
            status, headers, body = fetch(base + path, gzip_ok=False)
            assert status == 404 and body != b"ok", path
            assert "X-Attnviz-Worker" not in headers, path  # no worker was asked
        status, _, body = fetch(base + "/_stcore/health", gzip_ok=False)
        assert status == 200 and body == b"ok"
        worker = cluster.worker_ports[0]  # from the machine itself, the worker answers
        assert fetch(f"http://127.0.0.1:{worker}/_stcore/metrics", False)[2] == b"ok"


def test_stop_runs_on_a_python_without_attnviz():
    """`make stop` runs the system's python3, which has no attnviz (nor the venv's packages):
    -S leaves out every site-packages folder, so nothing but the standard library is there."""
    out = subprocess.run([sys.executable, "-I", "-S", str(ROOT / "scripts" / "serve.py"),
                          "--stop", "--port", "18996"], capture_output=True, text=True,
                         timeout=60)
    assert (out.returncode, out.stdout.strip()) == (0, "nothing serves port 18996"), out.stderr


def test_stop_ignores_a_stale_pid_file(tmp_path, monkeypatch):
    monkeypatch.setattr(serve.tempfile, "gettempdir", lambda: str(tmp_path))
    path = serve.pid_file(18998)
    path.write_text(f"{os.getpid()}\n")  # pytest, not a launcher: never signalled
    assert serve.stop_running(18998) is False
    assert not path.exists()
    assert serve.stop_running(18997) is False  # no file at all


def group_members(pgid: int) -> list[int]:
    """Pids of the processes in process group pgid (from /proc/*/stat)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:  # after "pid (comm)": state, ppid, pgrp
            found.append(int(stat.parent.name))
    return found


def worker_for(port: int, key: str) -> str:
    """Which worker nginx on `port` gives a browser whose affinity cookie is `key`."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}/_stcore/health",
                                 headers={"Cookie": f"{serve.COOKIE}={key}"})
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.read() == b"ok"
        return r.headers["X-Attnviz-Worker"]


@pytest.mark.server
def test_a_killed_worker_is_replaced_on_its_port(nginx, tmp_path, capsys):
    cluster = serve.Cluster(workers=2, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    seen: set[int] = set()
    with running(cluster):
        seen.update(group_members(cluster.pgid))
        keys = {"1": "1", "2": "2"}  # a cookie names its worker
        assert {worker_for(cluster.port, k) for k in keys.values()} == {"1", "2"}
        dead = cluster.procs[0]
        p1, p2 = cluster.worker_ports
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait(10)
        # Worker 1's students are answered at once by worker 2, before any restart.
        assert worker_for(cluster.port, keys["1"]) == "2"
        req = urllib.request.Request(f"http://127.0.0.1:{cluster.port}/_stcore/health",
                                     headers={"Cookie": f"{serve.COOKIE}=1"})
        with urllib.request.urlopen(req, timeout=10) as r:  # ... and its cookie now says so
            assert r.headers["Set-Cookie"].startswith(f"{serve.COOKIE}=2;")
        assert worker_for(cluster.port, "a new browser") in ("1", "2")
        cluster.supervise()
        err = capsys.readouterr().err
        assert f"worker 1 (pid {dead.pid}, port {p1}) exited (killed by SIGKILL)" in err, err
        assert "worker 1 restarted: pid" in err, err
        new = cluster.procs[0]
        assert new.pid != dead.pid and new.poll() is None
        assert nginx in cluster.procs[-1].args and len(cluster.procs) == 3
        assert new.pid in group_members(cluster.pgid)
        deadline = time.monotonic() + 30
        while "answers again" not in err and time.monotonic() < deadline:
            time.sleep(0.1)
            cluster.supervise()
            err += capsys.readouterr().err
        assert f"worker 1 (pid {new.pid}, port {p1}) answers again" in err, err
        assert serve._healthy(p1) and serve._healthy(p2)
        # nginx tries the failed server again after its fail_timeout: worker 1 serves again.
        deadline = time.monotonic() + 30
        while worker_for(cluster.port, keys["1"]) != "1" and time.monotonic() < deadline:
            time.sleep(0.5)
        assert worker_for(cluster.port, keys["1"]) == "1"
        assert worker_for(cluster.port, keys["2"]) == "2"
        seen.update(group_members(cluster.pgid))
    # Stopped: nothing of the group is left and nothing is restarted any more.
    cluster.supervise()
    assert "restarted" not in capsys.readouterr().err
    assert all(p.poll() is not None for p in cluster.procs)
    assert group_members(cluster.pgid) == []
    assert [p for p in seen if Path(f"/proc/{p}").exists()] == []


@pytest.mark.server
def test_new_browsers_are_dealt_in_turn_and_keep_their_worker(nginx, tmp_path):
    """Four browsers without a cookie, each holding its connection open (as a websocket
    does): two per worker, each told by its cookie which; a browser whose cookie names a
    worker is sent there and told nothing new; a cookie naming no worker is replaced."""
    cluster = serve.Cluster(workers=2, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    with running(cluster), contextlib.ExitStack() as open_:
        url = f"http://127.0.0.1:{cluster.port}"
        held = []  # closed before the cluster stops
        for _ in range(4):  # the fake worker answers /hold's headers now, its body in 3 s
            held.append(open_.enter_context(
                urllib.request.urlopen(f"{url}/hold", timeout=10)))
        workers = [r.headers["X-Attnviz-Worker"] for r in held]
        assert sorted(workers) == ["1", "1", "2", "2"], workers
        for r, w in zip(held, workers, strict=True):
            assert r.headers["Set-Cookie"] == (f"{serve.COOKIE}={w}; Path=/; HttpOnly; "
                                               "SameSite=Lax")
        for key in ("1", "2"):
            req = urllib.request.Request(f"{url}/_stcore/health",
                                         headers={"Cookie": f"{serve.COOKIE}={key}"})
            with urllib.request.urlopen(req, timeout=10) as r:
                assert r.headers["X-Attnviz-Worker"] == key
                assert r.headers.get("Set-Cookie") is None
        req = urllib.request.Request(f"{url}/_stcore/health",
                                     headers={"Cookie": f"{serve.COOKIE}=3f9a0c"})
        with urllib.request.urlopen(req, timeout=10) as r:  # an old random key, say
            w = r.headers["X-Attnviz-Worker"]
            assert w in ("1", "2")
            assert r.headers["Set-Cookie"].startswith(f"{serve.COOKIE}={w};")


@pytest.mark.server
def test_no_cookie_names_a_worker_when_none_answered(nginx, tmp_path):
    cluster = serve.Cluster(workers=1, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    with running(cluster):
        dead = cluster.procs[0]
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait(10)
        with pytest.raises(urllib.error.HTTPError) as failed:
            urllib.request.urlopen(f"http://127.0.0.1:{cluster.port}/_stcore/health",
                                   timeout=10)
        assert failed.value.code == 502
        assert failed.value.headers.get("Set-Cookie") is None
        assert not failed.value.headers.get("X-Attnviz-Worker")


@pytest.mark.server
def test_a_worker_that_keeps_dying_is_restarted_after_a_doubling_pause(nginx, tmp_path,
                                                                       capsys):
    """Dead on arrival (its runner exits at once): restarts 0, 1, 2, 4 s apart, not a
    busy loop; the launcher keeps serving with the other worker."""
    cluster = serve.Cluster(workers=2, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    with running(cluster):
        now = time.monotonic()
        starts = []
        cluster._worker_argv = lambda port: [sys.executable, "-c", "raise SystemExit(3)"]
        os.kill(cluster.procs[0].pid, signal.SIGKILL)
        cluster.procs[0].wait(10)
        for step in range(80):  # 8 s of supervision in 0.1 s steps, on a simulated clock
            t = now + step * 0.1
            before = cluster.procs[0].pid
            cluster.supervise(now=t)
            if cluster.procs[0].pid != before:
                starts.append(round(t - now, 1))
                cluster.procs[0].wait(10)
        err = capsys.readouterr().err
        # Each death is seen 0.1 s after its start (the next look), then paused 1, 2, 4 s.
        gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
        assert starts[0] == 0.0 and len(gaps) == 3, (starts, err)
        for gap, pause in zip(gaps, (1, 2, 4), strict=True):
            assert pause + 0.05 < gap < pause + 0.25, (starts, err)
        assert "(exit code 3); replacing it in 2 s" in err, err
        assert serve._healthy(cluster.worker_ports[1])
    assert group_members(cluster.pgid) == []


@pytest.mark.server
def test_a_worker_that_cannot_be_started_is_tried_again_later(nginx, tmp_path, capsys):
    cluster = serve.Cluster(workers=2, port=serve._free_port(), log_dir=tmp_path,
                            runner=ROOT / "tests" / "fake_worker.py")
    with running(cluster):
        cluster._worker_argv = lambda port: [str(tmp_path / "no-such-program")]
        dead = cluster.procs[0]
        os.kill(dead.pid, signal.SIGKILL)
        dead.wait(10)
        now = time.monotonic()
        cluster.supervise(now=now)  # the launcher keeps running, nginx and worker 2 serve
        assert "worker 1 could not be started" in capsys.readouterr().err
        assert cluster.procs[0] is dead and cluster.procs[-1].poll() is None
        assert worker_for(cluster.port, "any browser") == "2"
        cluster.supervise(now=now + 0.5)  # not before its pause
        assert "could not" not in capsys.readouterr().err
        cluster._worker_argv = lambda port: [sys.executable, str(ROOT / "tests" /
                                                                 "fake_worker.py"),
                                             "--server.port", str(port)]
        cluster.supervise(now=now + 1.0)
        assert "worker 1 restarted" in capsys.readouterr().err
        assert cluster.procs[0].poll() is None
    assert group_members(cluster.pgid) == []


@pytest.mark.parametrize("cores, workers, want", [(2, 1, 1), (2, 2, 1), (16, 2, 7), (4, 1, 3),
                                                  (1, 4, 1)])
def test_each_worker_leaves_a_core_to_its_pages(cores, workers, want):
    """make serve: a worker's torch gets its share of the cores less one for its Python
    thread (scripts/run_app.class_threads), never fewer than one."""
    assert serve.torch_threads(cores, workers) == want


def test_a_child_gets_sigterm_when_the_launcher_dies(tmp_path):
    """Every process the launcher starts runs through setpriv --pdeathsig TERM: a child whose
    parent is killed gets SIGTERM from the kernel (here the parent is a Python that starts it,
    then is killed; the child writes down the signal it got)."""
    if shutil.which("setpriv") is None:
        pytest.skip("no util-linux setpriv here")
    mark = tmp_path / "got"
    child = serve._die_with_parent([sys.executable, "-c", (
        "import signal, sys, time\n"
        # the mark is written under another name and renamed: the test never reads it half
        # written (it exists only once it holds the signal's name)
        "import os, pathlib\n"
        f"part = pathlib.Path({str(mark)!r} + '.part')\n"
        f"signal.signal(signal.SIGTERM, lambda *a: (part.write_text('TERM'),"
        f" os.replace(part, {str(mark)!r}), sys.exit(0)))\n"
        "open(sys.argv[1], 'w').write('ready')\n"
        "time.sleep(30)\n"), str(tmp_path / "ready")])
    parent = subprocess.Popen([sys.executable, "-c", (
        "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); time.sleep(30)"),
        *child])
    deadline = time.monotonic() + 20
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    parent.kill()
    parent.wait(10)
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert mark.read_text() == "TERM"
    with pytest.raises(FileNotFoundError):  # a program that is not there: said at once
        serve._die_with_parent([str(tmp_path / "no-such-program")])
