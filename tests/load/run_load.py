"""A class of 30 at once (issue 8): `make load` starts the app on loopback and drives 30
concurrent sessions, each typing its own sentence and switching layers, tabs and pages.

Why a protocol client and not 30 browser tabs: on a 2-core machine, 30 Chromium renderers
drawing Plotly heatmaps would take the CPU from the server being measured, and a tab's own
drawing time would be counted as server latency. Each session here is what a browser tab is
to the server: one websocket on ws://127.0.0.1:PORT/_stcore/stream speaking Streamlit's
protocol (BackMsg `rerun_script` with the widget states, ForwardMsg deltas until
`script_finished`), so the server does all the work a class causes (every script rerun, every
figure serialised and sent) and nothing else competes for the CPU. The e2e suite checks the
browser side (tests/e2e/test_e2e_all_pages.py).

Measured: the latency of every rerun (BackMsg sent -> script_finished received), p50/p95/max
overall and per page and action; errors (exception elements, error boxes, closed sockets,
timeouts; the goal is zero); the server's RSS (VmRSS of its process) at start, after a warm-up
visit of every page, at its peak, and 20 s after the sessions close. Bounded in count (steps per
session) and time (--duration); loopback only.

    .venv/bin/python tests/load/run_load.py [--sessions 30] [--steps 12] [--duration 240]
    .venv/bin/python tests/load/run_load.py --sessions 120 --url http://127.0.0.1:8501
    .venv/bin/python tests/load/run_load.py --sessions 120 --lecture 1 --url ...

Every student types a sentence of their own by default (the worst case: each one is new to
its server); --lecture K is a class that follows the teacher, every student typing one of K
sentences (and the same small variants of it), so that each server computes each of them once.

With --url the sessions load a server that is already running (e.g. `make serve WORKERS=2`,
nginx in front of several processes) instead of one started here; its memory is then not
measured, and the report counts the sessions each worker served (nginx's X-Attnviz-Worker).
With --url and --pid PID it is one Streamlit process, whose memory and life are read as for a
server started here, and which is left running (tests/test_load_smoke.py shares one so).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import serve  # noqa: E402
from tests.pages_list import default_page  # noqa: E402
from tests.serve import free_port  # noqa: E402

DEFAULT = Path(default_page()).stem  # served at "/", url_pathname ""

SENTENCES = [
    "I saw a saw", "The cat sat on the mat", "Time flies like an arrow",
    "Fruit flies like a banana", "The old man the boat", "She saw the man with the telescope",
    "Colorless green ideas sleep furiously", "The bank by the river bank was closed",
    "A saw is a tool that cuts wood", "We watched the watch on the watch tower",
    "Attention is all you need", "Queries meet keys and values follow",
    "The quick brown fox jumps over the lazy dog", "I read the book you read yesterday",
    "Rows are queries and columns are keys", "He will park the car near the park",
    "Can you can a can as a canner can", "The teacher saw the student saw the board",
    "Buffalo buffalo buffalo buffalo", "我看见了一把锯子",
]


# ----------------------------------------------------------------------- server
def start_server(port: int, log_path: Path) -> subprocess.Popen:
    try:
        return serve.start_server(port, log_path)
    except RuntimeError as e:
        raise SystemExit(str(e)) from None


def rss_mib(pid: int) -> float:
    """Resident memory of the process and its children, MiB (from /proc)."""
    total = 0
    pids = [pid]
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        pids += [int(k) for k in kids]
    except OSError:
        pass
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total / 1024


class MemorySampler(threading.Thread):
    def __init__(self, pid: int, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.samples = pid, every, []
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            self.samples.append((time.time(), rss_mib(self.pid)))
            self._stop_event.wait(self.every)

    def stop(self) -> None:
        self._stop_event.set()


# ----------------------------------------------------------------------- client
# A widget drawn inside an st.fragment reruns that fragment alone, as the browser asks
# (BackMsg rerun_script.fragment_id); --full-reruns: every click reruns the whole page.
FRAGMENT_RERUNS = True
ONLY_PAGES: set[str] | None = None  # --pages: the class visits only these (by file stem)
WORKERS_SEEN: dict[int, str] = {}  # session index -> worker that answered (behind nginx)


@dataclass
class Rerun:
    session: int
    page: str
    action: str
    seconds: float
    ok: bool
    charts: int = 0
    errors: list[str] = field(default_factory=list)
    at: float = 0.0  # when it was sent (time.time())
    fragment: bool = False  # an st.fragment's rerun alone


class Session:
    """One student's browser tab, as the server sees it."""

    def __init__(self, url: str, index: int, timeout: float) -> None:
        self.url, self.index, self.timeout = url, index, timeout
        self.ws = None
        self.query_string = ""
        self.page_hash = ""
        self.page_name = ""
        self.pages: dict[str, str] = {}  # url path name -> page_script_hash
        self.widgets: dict[str, object] = {}  # id -> latest element proto (this run)
        self.states: dict[str, object] = {}  # id -> WidgetState we set
        self.text_id: str | None = None
        self.tabs: tuple[str, list[str]] | None = None  # (tab group's widget id, labels)
        self.fragment_of: dict[str, str] = {}  # widget id -> the st.fragment that drew it
        self.fragment = ""  # the next rerun is this fragment's alone (a browser does that)
        self.notes: list[str] = []  # info and warning boxes seen (the last rerun's first)
        self.downloads: list[tuple[str, str]] = []  # the last run's (label, deferred file id)
        self.session_id = ""

    async def connect(self) -> None:
        import websockets

        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"], max_size=None,
                                           open_timeout=60, ping_interval=None)
        worker = self.ws.response.headers.get("X-Attnviz-Worker") if self.ws.response else None
        if worker:  # behind scripts/serve.py's nginx: which process holds this session
            WORKERS_SEEN[self.index] = worker

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def rerun(self, action: str) -> Rerun:
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string = self.query_string
        cs.page_script_hash = self.page_hash
        cs.page_name = self.page_name
        cs.widget_states.widgets.extend(self.states.values())
        fragment, self.fragment = self.fragment, ""
        if fragment and FRAGMENT_RERUNS:  # only that fragment's elements are drawn again
            cs.fragment_id = fragment
            self.widgets = {k: v for k, v in self.widgets.items()
                            if self.fragment_of.get(k) != fragment}
            if self.tabs is not None and self.fragment_of.get(self.tabs[0]) == fragment:
                self.tabs = None
        else:
            self.widgets = {}
            self.tabs = None
        self.downloads = []
        charts, errors = 0, []
        t0, at = time.perf_counter(), time.time()
        await self.ws.send(msg.SerializeToString())
        ok = False
        try:
            while True:
                raw = await asyncio.wait_for(self.ws.recv(), timeout=self.timeout)
                fm = ForwardMsg()
                fm.ParseFromString(raw)
                kind = fm.WhichOneof("type")
                if kind == "delta" and fm.delta.WhichOneof("type") == "add_block":
                    block = fm.delta.add_block
                    if block.WhichOneof("type") == "tab_container" and block.tab_container.id:
                        self.tabs = (block.tab_container.id, [])
                        self.fragment_of[block.tab_container.id] = fm.delta.fragment_id
                    elif block.WhichOneof("type") == "tab" and self.tabs is not None:
                        self.tabs[1].append(block.tab.label)
                elif kind == "delta" and fm.delta.WhichOneof("type") == "new_element":
                    el = fm.delta.new_element
                    etype = el.WhichOneof("type")
                    if etype == "exception":
                        errors.append(f"exception: {el.exception.type}: {el.exception.message}")
                    elif etype == "alert" and el.alert.format == el.alert.ERROR:
                        errors.append(f"error box: {el.alert.body[:120]}")
                    elif etype == "alert":
                        self.notes.append(el.alert.body)
                    elif etype == "download_button" and el.download_button.deferred_file_id:
                        self.downloads.append((el.download_button.label,
                                               el.download_button.deferred_file_id))
                    elif etype in ("plotly_chart", "bidi_component"):  # drawn in place too
                        charts += 1
                    elif etype in ("text_area", "selectbox", "slider", "button_group"):
                        w = getattr(el, etype)
                        self.widgets[w.id] = (etype, w)
                        self.fragment_of[w.id] = fm.delta.fragment_id
                        if etype == "text_area" and w.label == "Sentence":
                            self.text_id = w.id
                elif kind == "new_session":
                    self.session_id = fm.new_session.initialize.session_id or self.session_id
                elif kind == "navigation":
                    self.pages = {p.url_pathname: p.page_script_hash
                                  for p in fm.navigation.app_pages}
                    self.page_hash = fm.navigation.page_script_hash or self.page_hash
                elif kind == "page_info_changed":
                    self.query_string = fm.page_info_changed.query_string
                elif kind == "script_finished":
                    status = fm.script_finished
                    if status == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                        continue
                    ok = status in (ForwardMsg.FINISHED_SUCCESSFULLY,
                                    ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
                    if not ok:
                        errors.append(f"script finished with status {status}")
                    break
        except asyncio.TimeoutError:
            errors.append(f"timeout after {self.timeout:.0f} s")
        except Exception as e:  # noqa: BLE001 - a closed socket is an error to report
            errors.append(f"{type(e).__name__}: {e}")
        seconds = time.perf_counter() - t0
        return Rerun(self.index, self.page_name or DEFAULT, action, seconds,
                     ok and not errors, charts, errors, at,
                     bool(fragment and FRAGMENT_RERUNS))

    # --- what a student does
    def type_sentence(self, text: str) -> None:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        if self.text_id is None:
            raise RuntimeError("no sentence box seen yet")
        self.states[self.text_id] = WidgetState(id=self.text_id, string_value=text)

    def click(self, wid: str, state) -> None:
        """Give widget `wid` a new state; the next rerun is its fragment's alone, if it has one."""
        self.states[wid] = state
        self.fragment = self.fragment_of.get(wid, "")

    def change_layer(self, rng: random.Random) -> bool:
        """Pick another value for this page's layer control (a select box, a slider or a row
        of buttons)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        for wid, (etype, w) in self.widgets.items():
            if "layer" not in w.label.lower():
                continue
            if etype == "button_group" and len(w.options) > 1:  # a segmented control
                ws = WidgetState(id=wid)
                ws.string_array_value.data.append(rng.choice([o.content for o in w.options]))
                self.click(wid, ws)
                return True
            if etype == "selectbox" and len(w.options) > 1:
                self.click(wid, WidgetState(id=wid, string_value=rng.choice(list(w.options))))
                return True
            if etype == "slider" and w.options:  # select_slider: formatted options
                ws = WidgetState(id=wid)
                ws.string_array_value.data.append(rng.choice(list(w.options)))
                self.click(wid, ws)
                return True
            if etype == "slider" and w.max > w.min:
                ws = WidgetState(id=wid)
                ws.double_array_value.data.append(float(rng.randint(int(w.min), int(w.max))))
                self.click(wid, ws)
                return True
        return False

    def open_tab(self, rng: random.Random) -> bool:
        """Click another tab of this page's (lazy) tab group, if it has one."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        if self.tabs is None or len(self.tabs[1]) < 2:
            return False
        wid, labels = self.tabs
        self.click(wid, WidgetState(id=wid, string_value=rng.choice(labels[1:])))
        return True

    def open_tab_named(self, start: str) -> bool:
        """Click the tab whose label starts with `start` (e.g. '2 ·'), if this page has it."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        if self.tabs is None:
            return False
        wid, labels = self.tabs
        label = next((x for x in labels if x.startswith(start)), None)
        if label is None:
            return False
        self.click(wid, WidgetState(id=wid, string_value=label))
        return True

    def go_to(self, name: str) -> None:
        """Switch page like the sidebar's navigation link (page-specific widgets dropped)."""
        self.page_hash, self.page_name = self.pages[name], name
        keep = {self.text_id} if self.text_id else set()
        self.states = {k: v for k, v in self.states.items() if k in keep}
        self.query_string = ""


async def student(url: str, index: int, sentence: str, steps: int, deadline: float,
                  timeout: float, results: list[Rerun], start_delay: float,
                  think: tuple[float, float]) -> None:
    rng = random.Random(index)
    await asyncio.sleep(start_delay)
    s = Session(url, index, timeout)
    try:
        await s.connect()
        results.append(await s.rerun("open"))
        s.type_sentence(sentence)
        results.append(await s.rerun("type"))
        pages = class_pages(s.pages)
        rng.shuffle(pages)
        done = 2
        while done < steps and time.time() < deadline:
            if done % 3 == 2 and pages:
                s.go_to(pages[(done // 3) % len(pages)])
                results.append(await s.rerun("page"))
            elif done % 3 == 0 and s.open_tab(rng):
                results.append(await s.rerun("tab"))
            elif s.change_layer(rng):
                results.append(await s.rerun("layer"))
            else:
                s.type_sentence(sentence + rng.choice(["", ".", " again", " today"]))
                results.append(await s.rerun("type"))
            done += 1
            await asyncio.sleep(rng.uniform(*think))  # a student reads, then clicks
    except Exception as e:  # noqa: BLE001
        results.append(Rerun(index, s.page_name, "connect", 0.0, False, 0, [repr(e)]))
    finally:
        await s.close()


def class_pages(pages) -> list[str]:
    """The url path names a student visits: all the app's, or those of --pages (file stems;
    the default page, served at "", is named by its file too)."""
    if ONLY_PAGES is None:
        return list(pages)
    return [p for p in pages if (p or DEFAULT) in ONLY_PAGES]


def class_sentences(n: int, shared: int, lecture: int = 0) -> list[str]:
    """The sentence each of n students types. By default every student has one of their own
    (the first ones get SENTENCES, the others numbered variants of them), except the last
    `shared` (at most n // 2), who type an earlier student's. lecture=K (1 to len(SENTENCES)):
    the class follows the teacher, each student typing one of the first K of SENTENCES (K=1:
    all "I saw a saw")."""
    if lecture:
        return [SENTENCES[i % lecture] for i in range(n)]
    shared = min(shared, n // 2)
    sentences = [SENTENCES[i % len(SENTENCES)] + ("" if i < len(SENTENCES) else f" #{i}")
                 for i in range(n - shared)]
    return sentences + [sentences[i] for i in range(shared)]


async def run_class(url: str, n: int, steps: int, duration: float, timeout: float,
                    shared: int, think: tuple[float, float], lecture: int = 0) -> list[Rerun]:
    results: list[Rerun] = []
    deadline = time.time() + duration
    sentences = class_sentences(n, shared, lecture)
    rng = random.Random(0)
    await asyncio.gather(*[
        student(url, i, sentences[i], steps, deadline, timeout, results, rng.uniform(0, 3),
                think)
        for i in range(n)
    ])
    return results


async def warm_up(url: str, timeout: float) -> list[Rerun]:
    """One visit of every page with the default sentence (model load, imports, caches)."""
    s = Session(url, -1, timeout)
    await s.connect()
    out = [await s.rerun("open")]
    if s.change_layer(random.Random(0)):  # the default page's layer: its fragment alone
        out.append(await s.rerun("layer"))
    for name in [p for p in s.pages if p]:  # "" is the default page, opened above
        s.go_to(name)
        out.append(await s.rerun("page"))
    await s.close()
    return out


async def fragment_walk(url: str, timeout: float) -> list[Rerun]:
    """One session visits every page (the sidebar's sentence as it opens), changes the page's
    layer and opens another of its tabs, where it has them: a rerun each. Each Rerun's
    `fragment` says whether only the st.fragment that drew the widget reran (`--walk`)."""
    s = Session(url, -2, timeout)
    await s.connect()
    out = [await s.rerun("open")]
    rng = random.Random(0)
    for name in s.pages:
        s.go_to(name)
        out.append(await s.rerun("page"))
        if s.change_layer(rng):
            out.append(await s.rerun("layer"))
        if s.open_tab(rng):
            out.append(await s.rerun("tab"))
    await s.close()
    return out


# ----------------------------------------------------------------------- report
def pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    v = sorted(values)
    k = min(len(v) - 1, max(0, round(q / 100 * (len(v) - 1))))
    return v[k]


def summary(results: list[Rerun]) -> dict:
    lat = [r.seconds for r in results if r.ok]
    by_page: dict[str, list[float]] = {}
    by_action: dict[str, list[float]] = {}
    for r in results:
        if r.ok:
            by_page.setdefault(r.page, []).append(r.seconds)
            by_action.setdefault(r.action, []).append(r.seconds)

    def stats(v: list[float]) -> dict:
        return {"n": len(v), "p50_s": round(pct(v, 50), 3), "p95_s": round(pct(v, 95), 3),
                "max_s": round(max(v), 3) if v else None}

    # Light reruns (a layer changed, a tab opened) in each third of the class's time: a tail
    # of first visits (a training, a corpus) shows in one third, a slow server in all three.
    first = min((r.at for r in results if r.at), default=0.0)
    light = [r for r in results if r.ok and r.action in ("layer", "tab")]
    by_third: dict[str, dict] = {}
    if light:  # a session that never connected has no send time (at = 0): left out
        sent = [r.at for r in results if r.at]
        t0, span = min(sent), (max(sent) - min(sent)) or 1.0
        thirds: list[list[float]] = [[], [], []]
        for r in light:
            thirds[min(2, int(3 * (r.at - t0) / span))].append(r.seconds)
        by_third = {name: stats(part) for name, part in zip(("first", "second", "last"),
                                                             thirds, strict=True)}
    return {
        "reruns": len(results), "ok": len(lat),
        "fragment_reruns": sum(r.fragment and r.ok for r in results),
        "errors": [f"session {r.session} {r.page} {r.action}: {e}" for r in results
                   for e in r.errors],
        "latency": stats(lat),
        "mean_s": round(statistics.fmean(lat), 3) if lat else None,
        "by_page": {k: stats(v) for k, v in sorted(by_page.items())},
        "by_action": {k: stats(v) for k, v in sorted(by_action.items())},
        "light_by_third": by_third,
        # every rerun sent: [seconds after the first was sent, latency, action, page, ok]
        "timeline": sorted([round(r.at - first, 3), round(r.seconds, 3), r.action, r.page,
                            r.ok] for r in results if r.at),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=30)
    ap.add_argument("--steps", type=int, default=12, help="reruns per session at most")
    ap.add_argument("--duration", type=float, default=240, help="seconds for the class, at most")
    ap.add_argument("--timeout", type=float, default=120, help="seconds one rerun may take")
    ap.add_argument("--shared", type=int, default=5,
                    help="sessions that type a sentence another session typed")
    ap.add_argument("--lecture", type=int, default=0, metavar="K",
                    help="the class follows the teacher: each student types one of the first K "
                         "sentences (1: everyone types \"I saw a saw\"); --shared is then unused")
    ap.add_argument("--think", type=float, nargs=2, default=(0.2, 1.0), metavar=("MIN", "MAX"),
                    help="seconds a student waits after each answer (uniform); the default is "
                         "a class clicking as fast as it can")
    ap.add_argument("--full-reruns", action="store_true",
                    help="rerun the whole page on every click, also for widgets inside a "
                         "fragment (how this tool measured at first)")
    ap.add_argument("--class-warm-up", action="store_true",
                    help="start the server as `make serve` does (ATTNVIZ_PRELOAD=class) and "
                         "begin once its class warm-up is done")
    ap.add_argument("--settle", type=float, default=20, help="seconds to wait after closing")
    ap.add_argument("--pages", nargs="+", metavar="STEM",
                    help="the class visits only these pages (file stems, e.g. layer_heads "
                         "explore); the warm-up still opens every page")
    ap.add_argument("--walk", action="store_true",
                    help="no class: one session visits every page, changes its layer and "
                         "opens another tab; the report lists each rerun and whether it reran "
                         "only its fragment")
    ap.add_argument("--json", type=Path, default=ROOT / "test-output" / "load.json")
    ap.add_argument("--url", help="load this running server (http://host:port) instead of "
                                  "starting one")
    ap.add_argument("--pid", type=int,
                    help="with --url: that server is this one process (no nginx in front); its "
                         "memory is read and its life checked as for a server started here")
    args = ap.parse_args(argv)
    if args.pid is not None and not args.url:
        ap.error("--pid goes with --url")
    if not 0 <= args.lecture <= len(SENTENCES):
        ap.error(f"--lecture takes 1 to {len(SENTENCES)} sentences (0: each student their own)")
    global FRAGMENT_RERUNS, ONLY_PAGES
    FRAGMENT_RERUNS = not args.full_reruns
    ONLY_PAGES = set(args.pages) if args.pages else None

    args.json.parent.mkdir(parents=True, exist_ok=True)
    if args.url and args.pid is None:
        return load_url(args)
    t_start = time.time()
    if args.url:  # one running process, its pid given
        proc, pid, url = None, args.pid, stream_url(args.url)
    else:
        port = free_port()
        url = f"ws://127.0.0.1:{port}/_stcore/stream"
        log = args.json.parent / "load_streamlit.log"
        if args.class_warm_up:
            os.environ["ATTNVIZ_PRELOAD"] = "class"
        proc = start_server(port, log)
        pid = proc.pid
        if args.class_warm_up:
            wait_for_class_warm_up(log)
    if args.walk:
        return walk(url, proc, args)
    sampler = MemorySampler(pid)
    sampler.start()
    try:
        rss_start = rss_mib(pid)
        warm = asyncio.run(warm_up(url, args.timeout))
        rss_warm = rss_mib(pid)
        t_class, cpu_class = time.time(), time.process_time()
        results = asyncio.run(run_class(url, args.sessions, args.steps, args.duration,
                                        args.timeout, args.shared, tuple(args.think),
                                        args.lecture))
        class_s, client_cpu = time.time() - t_class, time.process_time() - cpu_class
        t_closed = time.time()
        time.sleep(args.settle)
        rss_after = rss_mib(pid)
        alive = proc.poll() is None if proc is not None else Path(f"/proc/{pid}").exists()
    finally:
        sampler.stop()
        if proc is not None:  # a server started here
            serve.stop_server(proc)
    during = [m for t, m in sampler.samples if t_class <= t <= t_closed]
    report = {
        "machine": f"{os.cpu_count()} CPU cores, loadavg at end {os.getloadavg()[0]:.1f}",
        "sessions": args.sessions, "steps_per_session": args.steps, "think_s": args.think,
        "class_seconds": round(class_s, 1), "client_cpu_s": round(client_cpu, 1),
        "total_seconds": round(time.time() - t_start, 1),
        "warm_up": summary(warm),
        **summary(results),
        "server_alive": alive,
        "rss_mib": {"start": round(rss_start), "after_warm_up": round(rss_warm),
                    "peak": round(max(during, default=rss_warm)),
                    f"after_close_{args.settle:.0f}s": round(rss_after)},
    }
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    lat = report["latency"]
    print(f"{report['reruns']} reruns by {args.sessions} sessions in {class_s:.0f} s "
          f"({report['machine']}; this client's CPU {client_cpu:.1f} s); errors: "
          f"{len(report['errors'])}")
    print(f"rerun latency p50 {lat['p50_s']} s, p95 {lat['p95_s']} s, max {lat['max_s']} s")
    for k, v in report["by_page"].items():
        print(f"  {k:14s} n={v['n']:3d} p50 {v['p50_s']:6.2f} s  p95 {v['p95_s']:6.2f} s")
    for k, v in report["by_action"].items():
        print(f"  [{k}] n={v['n']:3d} p50 {v['p50_s']:6.2f} s  p95 {v['p95_s']:6.2f} s")
    print_thirds(report)
    r = report["rss_mib"]
    print(f"server RSS MiB: start {r['start']}, after warm-up {r['after_warm_up']}, "
          f"peak {r['peak']}, after close {rss_after:.0f}")
    for e in report["errors"][:20]:
        print("  ERROR", e)
    print(f"report: {args.json}")
    return 0 if not report["errors"] and alive else 1


def walk(url: str, proc: subprocess.Popen | None, args: argparse.Namespace) -> int:
    """--walk: every page's layer and tab changes, once each, and whether each reran only its
    fragment (a report of them all; 0 if every rerun was answered without an error). `proc`:
    the server started here, stopped at the end (None: a running one, left running)."""
    try:
        results = asyncio.run(fragment_walk(url, args.timeout))
    finally:
        if proc is not None:
            serve.stop_server(proc)
    report = {"reruns": [{"page": r.page, "action": r.action, "ok": r.ok,
                          "fragment": r.fragment, "seconds": round(r.seconds, 3),
                          "errors": r.errors} for r in results]}
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    for r in report["reruns"]:
        how = "fragment" if r["fragment"] else "whole page"
        print(f"  {r['page']:14s} {r['action']:6s} {how:10s} {r['seconds']:6.3f} s"
              + ("" if r["ok"] else f"  ERROR {r['errors']}"))
    print(f"report: {args.json}")
    return 0 if all(r.ok for r in results) else 1


def wait_for_class_warm_up(log: Path, timeout_s: float = 600) -> None:
    """Until the server's log says its class warm-up ended (attnviz.ui.preload)."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        text = log.read_text(errors="replace")
        if "class warm-up done" in text or "class warm-up failed" in text:
            print(next(line for line in text.splitlines() if "class warm-up" in line))
            return
        time.sleep(1)
    raise SystemExit(f"the server's class warm-up did not end in {timeout_s:.0f} s")


def print_thirds(report: dict) -> None:
    thirds = report.get("light_by_third") or {}
    if thirds:
        print("  light reruns (layer, tab) by third of the class: " + "; ".join(
            f"{k} n={v['n']} p50 {v['p50_s']} s p95 {v['p95_s']} s" for k, v in thirds.items()))


def stream_url(address: str) -> str:
    """The websocket address of the app served at `address` (http://host:port[/path])."""
    import urllib.parse

    parts = urllib.parse.urlsplit(address)
    scheme = "wss" if parts.scheme == "https" else "ws"
    return f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}/_stcore/stream"


def load_url(args: argparse.Namespace) -> int:
    """The class against a running server at args.url (no server started, no memory read)."""
    url = stream_url(args.url)
    t_start = time.time()
    warm, warmed, unchanged = [], set(), 0
    while unchanged < 4 and len(warm) < 400:  # warm every worker behind nginx: each new
        warm += asyncio.run(warm_up(url, args.timeout))  # session lands on a random one
        unchanged = 0 if WORKERS_SEEN.get(-1) not in warmed else unchanged + 1
        warmed.add(WORKERS_SEEN.get(-1))
    WORKERS_SEEN.clear()
    t_class, cpu_class = time.time(), time.process_time()
    results = asyncio.run(run_class(url, args.sessions, args.steps, args.duration,
                                    args.timeout, args.shared, tuple(args.think),
                                    args.lecture))
    class_s, client_cpu = time.time() - t_class, time.process_time() - cpu_class
    per_worker: dict[str, int] = {}
    for w in WORKERS_SEEN.values():
        per_worker[w] = per_worker.get(w, 0) + 1
    report = {
        "machine": f"{os.cpu_count()} CPU cores, loadavg at end {os.getloadavg()[0]:.1f}",
        "url": args.url, "sessions": args.sessions, "steps_per_session": args.steps,
        "think_s": args.think, "class_seconds": round(class_s, 1),
        "client_cpu_s": round(client_cpu, 1),
        "total_seconds": round(time.time() - t_start, 1), "sessions_per_worker": per_worker,
        "warm_up": summary(warm), **summary(results),
    }
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    lat = report["latency"]
    print(f"{report['reruns']} reruns by {args.sessions} sessions on {args.url} in {class_s:.0f} "
          f"s ({report['machine']}; this client's CPU {client_cpu:.1f} s); errors: "
          f"{len(report['errors'])}")
    print(f"rerun latency p50 {lat['p50_s']} s, p95 {lat['p95_s']} s, max {lat['max_s']} s")
    if per_worker:
        print("sessions per worker: " + ", ".join(f"{k}: {v}" for k, v in
                                                  sorted(per_worker.items())))
    for k, v in report["by_action"].items():
        print(f"  [{k}] n={v['n']:3d} p50 {v['p50_s']:6.2f} s  p95 {v['p95_s']:6.2f} s")
    print_thirds(report)
    for e in report["errors"][:20]:
        print("  ERROR", e)
    print(f"report: {args.json}")
    return 0 if not report["errors"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
