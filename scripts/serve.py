"""Serve a lecture hall: N Streamlit processes behind nginx, with session affinity.

One Streamlit process runs its sessions' Python on one core at a time (the GIL), so a bigger
class needs more processes. A Streamlit session lives in one process (its websocket, its
widget state, the /media/ files its downloads point at), so every request of one browser
must reach the same process. nginx (Debian's package, installed with apt-get when missing)
deals browsers without a cookie to the workers in turn (round robin) and hands each a cookie
naming its worker; a browser with the cookie goes to the worker it names:

    browser --(no cookie)--> nginx :PORT --in turn--> worker i  (Set-Cookie attnviz_worker=i)
    browser --(cookie attnviz_worker=i)--> nginx :PORT --> worker i

(In turn, not "least busy": nginx counts connections per upstream block, and a browser's
pinned requests go through its worker's own block, so a least_conn pool would only see the
browsers that have no cookie yet; open-source nginx cannot pin a browser inside one pool.)

(`ip_hash` would send every client behind one address, e.g. loopback or a school's NAT, to
one worker; a hash of a random key, this launcher's first way, split a class of 120 72 / 48
and left the busier worker the bottleneck; in turn splits it 60 / 60.) When a worker stops
answering, its browsers are served by the next worker and their cookie is changed to name
it, so their pages, websockets and /media/ files stay together there.

Streamlit's own scripts, styles and fonts (/static/: ~25 MB, the same files in every worker,
named by their content's hash) are served by nginx itself, gzip-compressed once at start
(`static_files`): a worker would send each student ~13 MB uncompressed from its Python thread,
the one that draws every session's page. So is plotly.js, the file the app's charts load
(ui.live_chart: the app's static/plotly-<hash>.min.js at /app/static/, 4.8 MB, 1.4 MB
compressed): nginx sends its own compressed copy of the plotly package's file at that one
path (`plotly_files`); every other /app/static/ path is the workers'. `--proxy-static` sends
them through the workers as before (to compare).

The launcher supervises its workers: one that exits (killed, crashed) is noticed within a
second, logged on stderr, and replaced by a fresh process on the same port, so nginx's
upstream names a living server again (nginx retries a failed server after its fail_timeout);
the other workers serve meanwhile. A worker that keeps dying soon after it starts is restarted
after a doubling pause (1 s, 2 s, ... at most a minute). Nothing is restarted once the
launcher is stopping.

    python scripts/serve.py --workers 2 --port 8501     # Ctrl-C (or SIGTERM) stops all
    python scripts/serve.py --stop --port 8501          # from another shell
    make serve WORKERS=2 [PORT=8501]                    # the same; `make stop` stops it

Each worker is `scripts/run_app.py` (`streamlit run app.py` that loads the model once it
listens). Every process started here is in one process group of its own,
stopped (SIGTERM, then SIGKILL after a grace period) when the launcher exits, and each child
also gets SIGTERM from the kernel should the launcher die first (Linux's parent-death signal,
set by util-linux's setpriv).
nginx runs in the foreground with a generated config in a temporary folder: it needs no root
paths beyond its binary. Responses carry `X-Attnviz-Worker: i` (1..N), which worker answered.
Standard library only: the launcher itself never imports torch.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout: app.py, .streamlit/config.toml
COOKIE = "attnviz_worker"
UPSTREAM = "attnviz"  # nginx upstream names: the pool, and attnviz_i for worker i
NGINX_CANDIDATES = ("/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx")
GRACE_S = 10.0  # seconds a process may take to stop after SIGTERM before SIGKILL
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
POLL_S = 0.5  # how often the launcher looks at its processes
SETTLED_S = 30.0  # a worker that ran this long is replaced at once when it dies
MAX_PAUSE_S = 60.0  # the longest pause before restarting a worker that keeps dying
# Tokens per trace a class server's workers take unless ATTNVIZ_MAX_TOKENS says otherwise
# (BERT's own positions): a decoder's 2,048-token trace, the personal default, keeps ~0.5 GB
# and takes tens of seconds of CPU, which a class of many sessions cannot each have.
CLASS_MAX_TOKENS = 512


def worker_env(environ: dict[str, str], workers: int) -> dict[str, str]:
    """The environment each worker starts with: offline, torch's threads shared out, the class
    preload (the lesson, corpus sample: ui.preload) and CLASS_MAX_TOKENS tokens per trace,
    each unless `environ` sets it."""
    env = dict(environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    env.setdefault("OMP_NUM_THREADS", str(torch_threads(os.cpu_count() or 1, workers)))
    env.setdefault("ATTNVIZ_PRELOAD", "class")
    env.setdefault("ATTNVIZ_MAX_TOKENS", str(CLASS_MAX_TOKENS))
    return env


def find_nginx() -> str | None:
    """The nginx binary: $NGINX, then PATH, then Debian's and source builds' places."""
    for candidate in (os.environ.get("NGINX"), shutil.which("nginx"), *NGINX_CANDIDATES):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    return None


def ensure_nginx() -> str:
    """The nginx binary, installing Debian's package with apt-get when it is missing and we
    may (root, apt-get present), as `make browser` installs chromium. Two launchers starting
    at once on a machine without nginx (two halls of the tests) install it one after the
    other (a file lock; the second finds it installed), and apt-get waits for a dpkg lock
    that another apt-get holds instead of failing. Raises RuntimeError with what to do
    otherwise."""
    found = find_nginx()
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        import fcntl

        with open(Path(tempfile.gettempdir()) / "attnviz-apt.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            found = find_nginx()  # installed by the launcher that held the lock
            if not found:
                env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
                wait = ["-o", f"DPkg::Lock::Timeout={APT_LOCK_WAIT_S}"]
                subprocess.run(["apt-get", *wait, "update", "-qq"], check=False, env=env)
                subprocess.run(["apt-get", *wait, "install", "-y", "-qq",
                                "--no-install-recommends", "nginx"], check=False, env=env)
                found = find_nginx()
    if not found:  # apt-get said why above
        raise RuntimeError("nginx is missing: install it (Debian: `apt-get install nginx`) or "
                           "set NGINX=/path/to/nginx")
    return found


APT_LOCK_WAIT_S = 300  # how long apt-get waits for a dpkg lock another apt-get holds


def open_files_limit() -> int:
    """Raise this process's open-file limit to its hard limit (children inherit it); return
    it. Each student holds two of nginx's connections (browser side, worker side)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return soft if soft != resource.RLIM_INFINITY else 65536


# Files nginx sends gzip-compressed (a .gz beside each, gzip_static); fonts and images that
# are compressed already go as they are.
COMPRESSED = (".js", ".css", ".svg", ".json", ".html", ".txt", ".ttf", ".map", ".wasm")
MIME_TYPES = {  # nginx's types block for the static location (no system mime.types needed)
    "application/javascript": "js mjs", "text/css": "css", "image/svg+xml": "svg",
    "application/json": "json map", "text/html": "html", "text/plain": "txt",
    "font/woff2": "woff2", "font/woff": "woff", "font/ttf": "ttf", "image/png": "png",
    "image/jpeg": "jpg jpeg", "image/gif": "gif", "image/x-icon": "ico",
    "application/wasm": "wasm"}


def streamlit_static() -> Path | None:
    """The folder Streamlit serves at /static/ (its frontend build), found without importing
    streamlit; None when this Python has no streamlit or the folder is missing."""
    spec = importlib.util.find_spec("streamlit")
    if spec is None or not spec.submodule_search_locations:
        return None
    folder = Path(next(iter(spec.submodule_search_locations))) / "static" / "static"
    return folder if folder.is_dir() else None


def static_files(source: Path, dest: Path, level: int = 6) -> tuple[int, int, int]:
    """Copy `source`'s files to `dest` (readable by nginx's workers, which may run as another
    user) and write a gzip copy (`name.gz`) beside each compressible one; (files, bytes,
    bytes a browser that accepts gzip receives for all of them)."""
    count = raw = sent = 0
    for path in sorted(source.rglob("*")):
        if not path.is_file():
            continue
        target = dest / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = path.read_bytes()
        _write(target, data)
        count, raw = count + 1, raw + len(data)
        if path.suffix in COMPRESSED:
            packed = gzip.compress(data, compresslevel=level, mtime=0)
            if len(packed) < len(data):
                _write(target.with_name(target.name + ".gz"), packed)
                sent += len(packed)
                continue
        sent += len(data)
    for folder in (dest, *(d for d in dest.rglob("*") if d.is_dir())):
        folder.chmod(0o755)  # whatever the umask: nginx's workers may be another user
    return count, raw, sent


def plotly_source() -> Path | None:
    """The installed plotly package's plotly.js (package_data/plotly.min.js), the file the
    app's charts load, found without importing plotly; None when this Python has none."""
    spec = importlib.util.find_spec("plotly")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "package_data" / "plotly.min.js"
    return path if path.is_file() else None


def plotly_name(script: bytes) -> str:
    """The name the app serves `script` under (ui.live_chart.plotly_name):
    plotly-<12 hex digits of its SHA-256>.min.js."""
    return f"plotly-{hashlib.sha256(script).hexdigest()[:12]}.min.js"


def plotly_files(source: Path, root: Path, level: int = 6) -> str:
    """Copy plotly.js (`source`) to `root`/app/static/<plotly_name> with a gzip copy beside
    it, readable by nginx's workers; the URL path the app's charts fetch it from."""
    data = source.read_bytes()
    url = f"/app/static/{plotly_name(data)}"
    target = root / url.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    _write(target, data)
    _write(target.with_name(target.name + ".gz"),
           gzip.compress(data, compresslevel=level, mtime=0))
    for folder in (root, *(d for d in root.rglob("*") if d.is_dir())):
        folder.chmod(0o755)
    return url


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o644)


def _static_location(static: Path) -> str:
    types = "\n".join(f"                {mime} {exts};" for mime, exts in MIME_TYPES.items())
    return f"""
        # Streamlit's frontend files, the same in every worker: sent by nginx, compressed once.
        location ^~ /static/ {{
            alias {static.as_posix()}/;
            types {{
{types}
            }}
            default_type application/octet-stream;
            gzip_static on;
            gzip_vary on;
            add_header Cache-Control "public, max-age=31536000, immutable" always;
            add_header X-Attnviz-Worker "static" always;
        }}"""


def _plotly_location(url: str, root: Path) -> str:
    return f"""
        # plotly.js, the one file of the app's static/ every browser fetches (its name holds
        # its content's hash): sent by nginx, compressed once; other /app/static/ paths go to
        # the workers.
        location = {url} {{
            root {root.as_posix()};
            types {{
                application/javascript js;
            }}
            gzip_static on;
            gzip_vary on;
            add_header Cache-Control "public, max-age=31536000, immutable" always;
            add_header X-Attnviz-Worker "static" always;
        }}"""


def _server(port: int) -> str:
    """A worker in an upstream: out of turn for 5 s after one failed try."""
    return f"        server 127.0.0.1:{port} max_fails=1 fail_timeout=5s;"


def _own_upstream(i: int, port: int, worker_ports: Sequence[int]) -> str:
    """Worker i's upstream for the browsers it holds: it first, the others as backups."""
    backups = "".join(f"\n        server 127.0.0.1:{p} backup;" for p in worker_ports
                      if p != port)
    return f"    upstream {UPSTREAM}_{i} {{\n{_server(port)}{backups}\n        keepalive 4;\n    }}"


def nginx_config(port: int, worker_ports: Sequence[int], folder: Path,
                 address: str = "127.0.0.1", connections: int = 4096,
                 static: Path | None = None, plotly: tuple[str, Path] | None = None) -> str:
    """nginx.conf for a foreground nginx on address:port in front of the workers on
    127.0.0.1:worker_ports, everything it writes under `folder`.

    Affinity: the attnviz_worker cookie names a worker (1..N), whose own upstream sends every
    request there (the other workers as its backups, should it not answer). Requests without
    such a cookie are dealt to the workers in turn, and the response's cookie names the
    worker that answered; it is set again whenever the answering worker is not the one the
    cookie named (a failover), so the browser's page, websocket and /media/ files stay on one
    process. No cookie when no worker answered (nginx's own 502).
    Websockets: HTTP/1.1 with the Upgrade and Connection headers passed on, a day's read/send
    timeout (a class sits for hours). `connections`: nginx's worker_connections, at most the
    open-file limit. `static`: a folder made by static_files, served at /static/ by nginx
    itself (None: by the workers). `plotly`: (URL path, root folder) from plotly_files, that
    one path served by nginx itself (None: by the workers)."""
    tmp = folder.as_posix()
    servers = "\n".join(_server(p) for p in worker_ports)
    # $upstream_addr and $upstream_status list every server tried ("A, B" and "502, 101" after
    # a failover): name the last one, if it answered (no 5xx: nginx's own 502 names none).
    names = "\n".join(f'        "~127\\.0\\.0\\.1:{p}\\|(.*, )?[1-4][0-9][0-9]$" {i};'
                      for i, p in enumerate(worker_ports, 1))
    pins = "\n".join(f'        "{i}" {UPSTREAM}_{i};' for i in range(1, len(worker_ports) + 1))
    own = "\n".join(_own_upstream(i, p, worker_ports) for i, p in enumerate(worker_ports, 1))
    return f"""# generated by scripts/serve.py; nginx -p {tmp} -c nginx.conf
daemon off;
master_process on;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;

events {{
    worker_connections {connections};
}}

http {{
    access_log off;
    client_body_temp_path {tmp}/client_body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    client_max_body_size 2m;
    server_tokens off;

    map $http_upgrade $connection_upgrade {{
        default upgrade;
        ''      close;
    }}
    # The worker a browser's cookie names, or (no such cookie) the next one in turn.
    map $cookie_{COOKIE} $attnviz_upstream {{
{pins}
        default {UPSTREAM};
    }}
    map "$upstream_addr|$upstream_status" $attnviz_worker {{
{names}
        default "";
    }}
    # Name the worker that answered, unless the cookie already does (or none answered).
    map "$cookie_{COOKIE}|$attnviz_worker" $affinity_cookie {{
        "~^([^|]*)\\|\\1$" "";
        "~\\|$"        "";
        default "{COOKIE}=$attnviz_worker; Path=/; HttpOnly; SameSite=Lax";
    }}

    upstream {UPSTREAM} {{
{servers}
        keepalive 16;
    }}
{own}

    server {{
        listen {address}:{port};
        # Streamlit's metrics (sessions, times, cache bytes) are not the class's to watch: never
        # through nginx, whatever the spelling (nginx matches the decoded, normalised path);
        # each worker answers them on its own loopback port (docs/deploy.md).
        location ~* ^/_stcore/metrics {{
            return 404;
        }}
        location / {{
            proxy_pass http://$attnviz_upstream;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection $connection_upgrade;
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_read_timeout 1d;
            proxy_send_timeout 1d;
            proxy_buffering off;
            proxy_next_upstream error timeout;
            proxy_connect_timeout 5s;
            add_header Set-Cookie $affinity_cookie always;
            add_header X-Attnviz-Worker $attnviz_worker always;
        }}{"" if static is None else _static_location(static)}{
            "" if plotly is None else _plotly_location(*plotly)}
    }}
}}
"""


def _die_with_parent(argv: list[str]) -> list[str]:
    """`argv` run so that the child gets SIGTERM when the launcher dies: through util-linux's
    `setpriv --pdeathsig TERM`, which sets Linux's parent-death signal and then runs the
    command in its own process (same pid). Where there is no setpriv (not Linux), `argv` as
    it is: the process group (see Cluster) is then the safety net."""
    if shutil.which(argv[0]) is None:  # said as Popen says it, before setpriv would run
        raise FileNotFoundError(2, "No such file or directory", argv[0])
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *argv] if setpriv else argv


def torch_threads(cores: int, workers: int) -> int:
    """Each worker's torch threads: its share of the cores, less the one its Python thread
    (every session's page) needs, at least 1 (scripts/run_app.class_threads: why)."""
    return max(1, cores // workers - 1)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(port: int, timeout: float = 2) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                    timeout=timeout) as r:
            return r.read().strip() == b"ok"
    except OSError:
        return False


def _exit_reason(code: int) -> str:
    """'exit code 3' or 'killed by SIGKILL' for a Popen returncode."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def log(message: str) -> None:
    """One line on the launcher's stderr, with the time."""
    print(f"{time.strftime('%H:%M:%S')} serve.py: {message}", file=sys.stderr, flush=True)


@dataclass
class Restart:
    """Supervision state of one worker slot (its port stays; its process may change)."""

    started: float = 0.0  # time.monotonic() of the current process's start
    due: float | None = None  # when a replacement is to start (the worker is dead till then)
    pause: float = 0.0  # the pause before its next restart: 0, then 1, 2, 4 ... s while it
    # keeps dying within SETTLED_S of its start
    count: int = 0  # replacements started so far
    announced: bool = True  # its "answers again" line was logged


@dataclass
class Cluster:
    """N Streamlit workers and nginx, all in one process group led by the first worker."""

    workers: int = 2
    port: int = 8501
    address: str = "127.0.0.1"
    app: Path = ROOT / "app.py"
    log_dir: Path | None = None  # default: the temporary folder made by start()
    runner: Path = ROOT / "scripts" / "run_app.py"  # a worker: python runner app --server...
    worker_ports: list[int] = field(default_factory=list)
    procs: list[subprocess.Popen] = field(default_factory=list)  # workers..., nginx last
    folder: Path | None = None
    pgid: int | None = None
    stopping: bool = False  # set by stop(): from then on nothing is (re)started
    slots: list[Restart] = field(default_factory=list)  # one per worker
    env: dict | None = None
    static: bool = True  # nginx serves Streamlit's /static/ files (False: the workers do)
    static_summary: tuple[int, int, int] | None = None  # static_files' (files, bytes, gzip)
    plotly_url: str | None = None  # the plotly.js path nginx sends itself (plotly_files)

    def _spawn(self, argv: list[str], log_path: Path, env: dict | None = None
               ) -> subprocess.Popen:
        """Start argv in the cluster's process group, its output appended to `log`.

        The stop signals are blocked in the launcher while it forks (a Ctrl-C then arrives
        once the new process is known, so stop() reaches it) and unblocked in the child."""
        if self.stopping:
            raise RuntimeError("the launcher is stopping")
        pgid = self.pgid

        def before_exec() -> None:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
            os.setpgid(0, pgid or 0)  # the first child leads a new group; the rest join it

        out = open(log_path, "ab")  # noqa: SIM115 - the child holds it; closed when we exit
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
        try:
            proc = subprocess.Popen(_die_with_parent(argv), cwd=self.app.parent, stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env,
                                    preexec_fn=before_exec)
            if self.pgid is None:
                self.pgid = proc.pid
            self.procs.append(proc)
        finally:
            out.close()
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return proc

    @property
    def logs(self) -> Path:
        return self.log_dir or self.folder or Path(tempfile.gettempdir())

    def _worker_argv(self, port: int) -> list[str]:
        return [sys.executable, str(self.runner), str(self.app), "--server.port", str(port),
                "--server.address", "127.0.0.1", "--server.headless", "true"]

    def _start_worker(self, i: int) -> subprocess.Popen:
        """Start worker i (0-based) on its port; a replacement takes the dead one's place in
        procs (nginx stays last)."""
        proc = self._spawn(self._worker_argv(self.worker_ports[i]),
                           self.logs / f"worker{i + 1}.log", self.env)
        if i < len(self.procs) - 1:  # a replacement: move it from the end to its slot
            self.procs[i] = self.procs.pop()
        return proc

    @property
    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    def start(self, timeout_s: float = 180) -> None:
        """Start the workers and nginx; return once nginx answers for every worker."""
        nginx = ensure_nginx()
        self.folder = Path(tempfile.mkdtemp(prefix=f"attnviz-serve-{self.port}-"))
        self.folder.chmod(0o755)  # nginx's workers run as another user when started as root
        logs = self.logs
        logs.mkdir(parents=True, exist_ok=True)
        self.worker_ports = [_free_port() for _ in range(self.workers)]
        env = worker_env(os.environ, self.workers)
        self.env = env
        try:
            for i in range(self.workers):
                self._start_worker(i)
                self.slots.append(Restart(started=time.monotonic()))
            static = None
            source = streamlit_static() if self.static else None
            if source is not None:  # compressed while the workers start
                static = self.folder / "static"
                self.static_summary = static_files(source, static)
            plotly = None
            script = plotly_source() if self.static else None
            if script is not None:
                self.plotly_url = plotly_files(script, self.folder / "app_static")
                plotly = (self.plotly_url, self.folder / "app_static")
            (self.folder / "nginx.conf").write_text(
                nginx_config(self.port, self.worker_ports, self.folder, self.address,
                             connections=max(256, min(4096, open_files_limit() - 64)),
                             static=static, plotly=plotly))
            deadline = time.time() + timeout_s
            for p in self.worker_ports:
                while not _healthy(p):
                    self._check_alive(logs)
                    if time.time() > deadline:
                        raise RuntimeError(f"a worker did not start in {timeout_s:.0f} s")
                    time.sleep(0.3)
            self._spawn([nginx, "-p", str(self.folder), "-c", "nginx.conf",
                         "-e", str(self.folder / "error.log")], logs / "nginx.log")
            while not _healthy(self.port):
                self._check_alive(logs)
                if time.time() > deadline:
                    raise RuntimeError(f"nginx did not answer in {timeout_s:.0f} s")
                time.sleep(0.2)
        except BaseException:
            self.stop()
            raise

    def _check_alive(self, logs: Path) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                tails = "\n".join(f"--- {f.name}\n{f.read_text(errors='replace')[-1500:]}"
                                  for f in sorted(logs.glob("*.log")))
                raise RuntimeError(f"a process exited ({proc.args[0]} ...):\n{tails}")

    def supervise(self, now: float | None = None) -> None:
        """One look at the workers: log each that exited and start its replacement on the same
        port (at once, or after its pause when it keeps dying); log a replacement once it
        answers /_stcore/health."""
        now = time.monotonic() if now is None else now
        for i, slot in enumerate(self.slots):
            if self.stopping:
                return
            proc, port = self.procs[i], self.worker_ports[i]
            if slot.due is None and proc.poll() is not None:
                if now - slot.started >= SETTLED_S:
                    slot.pause = 0.0  # it had run a while: a fresh failure, replace it at once
                slot.due = now + slot.pause
                when = f" in {slot.pause:.0f} s" if slot.pause else ""
                others = ", the other workers serve meanwhile" if len(self.slots) > 1 else ""
                log(f"worker {i + 1} (pid {proc.pid}, port {port}) exited "
                    f"({_exit_reason(proc.returncode)}); replacing it{when}{others}")
                slot.pause = min(MAX_PAUSE_S, max(1.0, slot.pause * 2))
            if slot.due is not None:
                if now >= slot.due:
                    try:
                        new = self._start_worker(i)
                    except OSError as e:  # e.g. out of processes or memory: try again later
                        slot.due = now + slot.pause
                        log(f"worker {i + 1} could not be started ({e}); trying again in "
                            f"{slot.pause:.0f} s")
                        slot.pause = min(MAX_PAUSE_S, max(1.0, slot.pause * 2))
                        continue
                    slot.due, slot.started, slot.announced = None, now, False
                    slot.count += 1
                    log(f"worker {i + 1} restarted: pid {new.pid} on port {port}")
            elif not slot.announced and proc.poll() is None and _healthy(port, timeout=0.5):
                slot.announced = True
                log(f"worker {i + 1} (pid {proc.pid}, port {port}) answers again, "
                    f"{now - slot.started:.1f} s after its restart")

    def stop(self, grace_s: float = GRACE_S) -> None:
        """SIGTERM to the whole group, SIGKILL to what is left after grace_s; reap all.
        Nothing is restarted from here on."""
        self.stopping = True
        if self.pgid is not None:
            _signal_group(self.pgid, signal.SIGTERM)
            deadline = time.time() + grace_s
            while time.time() < deadline and any(p.poll() is None for p in self.procs):
                time.sleep(0.1)
            _signal_group(self.pgid, signal.SIGKILL)  # stragglers, nginx's own workers
        for p in self.procs:
            try:
                p.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:  # pragma: no cover - unkillable
                pass

    def remove_folder(self) -> None:
        """Delete the temporary folder (nginx's config and files; the logs unless --logs)."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def wait(self) -> int:
        """Supervise the workers until a signal asks us to stop (it raises in this thread) or
        nginx exits (then 1)."""
        while True:
            if self.procs[-1].poll() is not None:
                return 1
            self.supervise()
            time.sleep(POLL_S)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def pid_file(port: int) -> Path:
    return Path(tempfile.gettempdir()) / f"attnviz-serve-{port}.pid"


def stop_running(port: int, timeout_s: float = 30) -> bool:
    """Stop the launcher serving `port` (from its pid file): SIGTERM, wait until it is gone.
    False when none is running."""
    path = pid_file(port)
    try:
        pid = int(path.read_text().split()[0])
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError, IndexError):
        path.unlink(missing_ok=True)
        return False
    argv = [Path(a.decode(errors="replace")) for a in cmdline.split(b"\0")]
    if not any(a.name == "serve.py" and a.parent.name == "scripts" for a in argv):
        # A stale file whose pid now names another process: leave that process alone.
        path.unlink(missing_ok=True)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.time() + timeout_s
    while time.time() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.2)
    return True


class _Stop(Exception):
    pass


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=None,
                    help="Streamlit processes (default $ATTNVIZ_WORKERS, else 2)")
    ap.add_argument("--port", type=int, default=8501, help="nginx's port (default 8501)")
    ap.add_argument("--address", default="127.0.0.1",
                    help="nginx's address (0.0.0.0: every interface, for a class's network)")
    ap.add_argument("--app", type=Path, default=ROOT / "app.py")
    ap.add_argument("--logs", type=Path, help="folder for the processes' logs")
    ap.add_argument("--proxy-static", action="store_true",
                    help="send Streamlit's /static/ files and plotly.js through the workers "
                         "instead of from nginx (to compare)")
    ap.add_argument("--stop", action="store_true",
                    help="stop the launcher already serving --port, and exit")
    args = ap.parse_args(argv)
    if args.stop:  # any Python stops it (`make stop` runs the system's): attnviz not imported
        print("stopped" if stop_running(args.port) else f"nothing serves port {args.port}")
        return 0
    if args.workers is None:
        from attnviz.settings import settings

        args.workers = settings().workers
    if args.workers < 1:
        ap.error("--workers must be at least 1")

    cluster = Cluster(workers=args.workers, port=args.port, address=args.address,
                      app=args.app.resolve(), log_dir=args.logs, static=not args.proxy_static)

    def on_signal(signum, frame):
        cluster.stopping = True  # no replacement from here on, wherever the signal lands
        raise _Stop

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)
    pid_file(args.port).write_text(f"{os.getpid()}\n")
    code = 0
    try:
        cluster.start()
        print(f"attnviz: {args.workers} worker(s) on 127.0.0.1:"
              f"{','.join(map(str, cluster.worker_ports))} behind nginx at "
              f"http://{args.address}:{args.port}  (pids {' '.join(map(str, cluster.pids))}; "
              f"logs in {args.logs or cluster.folder}; Ctrl-C stops all)", flush=True)
        if cluster.static_summary:
            files, raw, sent = cluster.static_summary
            print(f"attnviz: nginx sends Streamlit's {files} static files ({raw / 1e6:.1f} MB; "
                  f"{sent / 1e6:.1f} MB gzip-compressed)", flush=True)
        if cluster.plotly_url:
            print(f"attnviz: nginx sends plotly.js ({cluster.plotly_url}) gzip-compressed",
                  flush=True)
        code = cluster.wait()
        if code:
            print("nginx exited; stopping the workers", file=sys.stderr)
    except _Stop:
        pass
    except RuntimeError as e:
        print(f"serve.py: {e}", file=sys.stderr)
        code = 1
    finally:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)
        cluster.stop()
        pid_file(args.port).unlink(missing_ok=True)
        if code == 0 or args.logs:
            cluster.remove_folder()
        elif cluster.folder is not None:
            print(f"logs kept in {cluster.folder}", file=sys.stderr)
    return code


if __name__ == "__main__":
    raise SystemExit(main())
