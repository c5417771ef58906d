"""Class mode under load (`make load CLASS=1`): a teacher and 120 students on `make serve
WORKERS=2`, every one a websocket session speaking Streamlit's protocol as a browser tab does
(as tests/load/run_load.py does, for the same reason: 121 Chromium tabs would take the CPU
from the servers being measured).

The teacher's session opens the lesson, presses "Start a class", then moves through the
lesson's steps: Next (the class follows), and on a step with a question, after the students
had time to answer, Answer (the reveal). Each student's session opens the join link
(`/lesson?class=CODE`) and does what the browser does for an `st.fragment(run_every=...)`:
asks for that fragment's rerun every interval the server named (ForwardMsg auto_rerun), which
reruns the whole page when the class moved. On a step with a question the student thinks
(--think, uniform), then taps a choice (a rerun of the page).

Measured: teacher click -> student's new step (the time from the teacher's Next being sent to
the first message that puts the student's page on the new step: the query string
`lesson_step=N`), and answer accepted (the tap sent -> its fragment's run finished with no
refusal), p50/p95/max; errors (exception elements, error boxes, refusals, timeouts). Goals:
p95 follow <= 2 s, p95 answer <= 1 s, no errors. Also said: the follow per step and, when
this tool starts the servers, the workers' CPU seconds (from /proc) from each Next to the
last student on the new step, per student who followed.

    .venv/bin/python tests/load/class_load.py [--students 120] [--url http://127.0.0.1:8501]

Without --url it starts `scripts/serve.py --workers 2` on a free port, begins once both
workers' class warm-up has ended, and stops it after.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.load.run_load import pct, stream_url, wait_for_class_warm_up  # noqa: E402
from tests.serve import free_port  # noqa: E402

LESSON = "lesson"


@dataclass
class Tab:
    """One browser tab on the lesson page, as the server sees it."""

    url: str
    name: str
    timeout: float = 60.0
    ws: object = None
    query: str = ""
    page_hash: str = ""
    page_name: str = ""
    buttons: dict[str, str] = field(default_factory=dict)  # label -> widget id
    radios: dict[str, tuple[list[str], str]] = field(default_factory=dict)  # id -> (options,
    # fragment)
    autos: dict[str, float] = field(default_factory=dict)  # fragment id -> interval (s)
    texts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    worker: str = ""
    states: dict[str, object] = field(default_factory=dict)
    on_query: object = None  # called with each new query string as it arrives
    pages: dict[str, str] = field(default_factory=dict)  # url path name -> page hash
    whole: bool = False  # the last run drew the whole page (not a fragment alone)
    # elements of the page's main area that the last whole run sent after its first timer
    # (auto_rerun), other than the timed fragment's own: the browser starts a timer when it
    # gets it, so a timer sent before the run's end can ask for a rerun as the run ends
    # (ui.classroom's docstring)
    after_timer: int = 0

    async def connect(self) -> None:
        import websockets

        self.ws = await websockets.connect(self.url, subprotocols=["streamlit"],
                                           max_size=None, open_timeout=60,
                                           ping_interval=None)
        if self.ws.response is not None:
            self.worker = self.ws.response.headers.get("X-Attnviz-Worker", "")

    @property
    def step(self) -> int | None:
        m = re.search(r"lesson_step=(\d+)", self.query)
        return int(m.group(1)) if m else None

    async def run(self, fragment: str = "", auto: bool = False) -> tuple[float, bool]:
        """Send a rerun (of `fragment` alone when given); read until the script finished.
        (seconds, ok)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        cs = msg.rerun_script
        cs.query_string, cs.page_script_hash, cs.page_name = (self.query, self.page_hash,
                                                              self.page_name)
        cs.widget_states.widgets.extend(self.states.values())
        if fragment:
            cs.fragment_id = fragment
            cs.is_auto_rerun = auto
        else:
            self.buttons, self.radios, self.texts = {}, {}, []
        t0 = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        errors: list[str] = []
        page_buttons: dict[str, str] = {}  # this run's, kept when it drew the whole page
        page_radios: dict[str, tuple[list[str], str]] = {}
        ok, timed, late = False, False, 0
        try:
            while True:
                fm = ForwardMsg()
                fm.ParseFromString(await asyncio.wait_for(self.ws.recv(), self.timeout))
                kind = fm.WhichOneof("type")
                if kind == "page_info_changed":
                    self.query = fm.page_info_changed.query_string
                    if self.on_query:
                        self.on_query(self)
                elif kind == "navigation":
                    self.page_hash = fm.navigation.page_script_hash or self.page_hash
                    self.pages = {p.url_pathname: p.page_script_hash
                                  for p in fm.navigation.app_pages}
                elif kind == "auto_rerun":  # a run names all its timed fragments anew
                    if not timed:
                        self.autos, timed = {}, True
                    self.autos[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
                elif kind == "delta":
                    if (timed and fm.metadata.delta_path[:1] == [0]
                            and fm.delta.fragment_id not in self.autos):
                        late += 1  # the main area's, not the timed fragment's own
                    if fm.delta.WhichOneof("type") != "new_element":
                        continue
                    el = fm.delta.new_element
                    etype = el.WhichOneof("type")
                    if etype == "exception":
                        errors.append(f"exception {el.exception.type}: {el.exception.message}")
                    elif etype == "alert":
                        if el.alert.format == el.alert.ERROR:
                            errors.append(f"error box: {el.alert.body[:100]}")
                        elif el.alert.format == el.alert.WARNING:
                            errors.append(f"warning: {el.alert.body[:100]}")
                    elif etype == "button":
                        self.buttons[el.button.label] = el.button.id
                        page_buttons[el.button.label] = el.button.id
                    elif etype == "radio":
                        self.radios[el.radio.id] = page_radios[el.radio.id] = (
                            list(el.radio.options), fm.delta.fragment_id)
                    elif etype == "markdown":
                        self.texts.append(el.markdown.body)
                elif kind == "script_finished":
                    if fm.script_finished == ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                        timed, late = False, 0  # the run that follows draws it all again
                        continue
                    ok = fm.script_finished in (ForwardMsg.FINISHED_SUCCESSFULLY,
                                                ForwardMsg.FINISHED_FRAGMENT_RUN_SUCCESSFULLY)
                    self.whole = fm.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY
                    if self.whole:
                        self.after_timer = late
                        # the whole page was drawn (a fragment's st.rerun() included): its
                        # widgets are the page's now, the earlier step's radio is gone
                        self.buttons, self.radios = page_buttons, page_radios
                    if not ok:
                        errors.append(f"script finished with status {fm.script_finished}")
                    break
        except asyncio.TimeoutError:
            errors.append(f"timeout after {self.timeout:.0f} s")
        except Exception as e:  # noqa: BLE001 - a closed socket is an error to report
            errors.append(f"{type(e).__name__}: {e}")
        self.errors += [f"{self.name}: {e}" for e in errors]
        return time.perf_counter() - t0, ok and not errors

    async def open_lesson(self, query: str = "") -> None:
        """Open /lesson?query as a browser does (app.py's router picks the page by name)."""
        self.page_name, self.query = LESSON, query
        await self.run()

    async def click(self, label: str) -> tuple[float, bool]:
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        wid = self.buttons[label]
        self.states[wid] = WidgetState(id=wid, trigger_value=True)
        try:
            return await self.run()
        finally:
            self.states.pop(wid, None)  # a trigger fires once


@dataclass
class Measures:
    clicks: dict[int, float] = field(default_factory=dict)  # step -> teacher's Next sent
    follow: list[float] = field(default_factory=list)  # the step's first message
    by_step: dict[int, list[float]] = field(default_factory=dict)  # step -> its follows
    drawn: list[float] = field(default_factory=list)  # the step's whole page drawn
    answers: list[float] = field(default_factory=list)
    code: str = ""
    done: bool = False
    late: int = 0  # answers tapped after the reveal (refused, as the page says)


async def teacher(url: str, m: Measures, steps: int, answer_s: float, ready: asyncio.Event,
                  joined: asyncio.Event) -> Tab:
    t = Tab(url, "teacher", timeout=180)
    await t.connect()
    await t.open_lesson()
    await t.click("Start a class")
    m.code = re.search(r"class=([2-9A-Z]{4}-[2-9A-Z]{4})", t.query).group(1)
    ready.set()
    await joined.wait()
    from attnviz.classroom import questions

    for _ in range(steps):
        if "Answer ▶" in t.buttons:  # a question asked before: reveal it first
            await t.click("Answer ▶")
            await asyncio.sleep(3)
        nxt = (t.step or 1) + 1
        m.clicks[nxt] = time.perf_counter()
        await t.click("Next ▶")
        await asyncio.sleep(answer_s if questions.question(nxt) else 6)
    m.done = True
    return t


async def student(url: str, k: int, m: Measures, think: tuple[float, float],
                  ready: asyncio.Event, seated: list[int]) -> Tab:
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    rng = random.Random(k)
    await ready.wait()
    await asyncio.sleep(rng.uniform(0, 10))  # a hall arriving
    s = Tab(url, f"student {k}", timeout=60)
    seen: set[int] = set()

    def on_query(tab: Tab) -> None:
        step = tab.step
        if step and step not in seen:
            seen.add(step)
            if step in m.clicks:
                m.follow.append(time.perf_counter() - m.clicks[step])
                m.by_step.setdefault(step, []).append(m.follow[-1])

    s.on_query = on_query
    await s.connect()
    await s.open_lesson(f"class={m.code}")
    seen.add(s.step or 1)
    seated.append(k)
    answered: set[int] = set()
    while not m.done:
        interval = min(s.autos.values(), default=1.0)
        await asyncio.sleep(interval)
        watch = next(iter(s.autos), "")
        before = s.step
        if watch:
            await s.run(watch, auto=True)
        step = s.step
        if step != before and step in m.clicks:
            m.drawn.append(time.perf_counter() - m.clicks[step])
        if s.radios and step not in answered and step is not None:
            await asyncio.sleep(rng.uniform(*think))
            if s.step != step or not s.radios:
                continue
            wid, (options, frag) = next(iter(s.radios.items()))
            # what the browser sends for a radio: the option shown, as text
            s.states[wid] = WidgetState(id=wid, string_value=rng.choice(options))
            before_errors = len(s.errors)
            seconds, ok = await s.run(frag)
            late = [e for e in s.errors[before_errors:] if "moved on" in e]
            if late:  # tapped after the reveal: the class's refusal, not a server error
                m.late += 1
                s.errors = s.errors[:before_errors]
            elif ok:
                m.answers.append(seconds)
            answered.add(step)
    await s.ws.close()
    return s


async def run_class(url: str, n: int, steps: int, think: tuple[float, float],
                    answer_s: float) -> tuple[Measures, list[Tab], Tab]:
    m = Measures()
    ready, joined = asyncio.Event(), asyncio.Event()
    seated: list[int] = []

    async def wait_seated() -> None:
        while len(seated) < n:
            await asyncio.sleep(0.5)
        joined.set()

    tasks = [student(url, k, m, think, ready, seated) for k in range(n)]
    results = await asyncio.gather(teacher(url, m, steps, answer_s, ready, joined),
                                   wait_seated(), *tasks)
    return m, results[2:], results[0]


def start_hall(port: int) -> subprocess.Popen:
    """`scripts/serve.py --workers 2` on `port`, once both workers have ended their class
    warm-up (attnviz.ui.preload.warm_class): a teacher starts the server before the class,
    and the warm-up's work would otherwise share the cores with the class's first steps."""
    logs = ROOT / "test-output" / "class_load_logs"
    logs.mkdir(parents=True, exist_ok=True)
    for old in logs.glob("*.log"):  # serve.py appends: a line of an earlier run would count
        old.unlink()
    proc = subprocess.Popen([sys.executable, "scripts/serve.py", "--workers", "2", "--port",
                             str(port), "--logs", str(logs)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    ready = threading.Event()

    def read() -> None:
        for line in proc.stdout:
            if "behind nginx" in line:
                ready.set()

    threading.Thread(target=read, daemon=True).start()
    if not ready.wait(300):
        proc.kill()
        raise SystemExit("serve.py did not start")
    for worker in ("worker1.log", "worker2.log"):
        wait_for_class_warm_up(logs / worker)
    return proc


def worker_pids(root: int) -> list[int]:
    """The processes under `root` (serve.py) that run a worker (scripts/run_app.py)."""
    parent: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    under, todo = set(), [root]
    while todo:
        p = todo.pop()
        kids = [k for k, v in parent.items() if v == p and k not in under]
        under.update(kids)
        todo += kids
    found = []
    for pid in under:
        try:
            if b"run_app.py" in Path(f"/proc/{pid}/cmdline").read_bytes():
                found.append(pid)
        except OSError:
            continue
    return found


def cpu_seconds(pids: list[int], children: bool = False) -> float:
    """User + system CPU seconds the processes used so far (those still running), with their
    reaped children's when `children`."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(f) for f in fields[11:15 if children else 13])  # utime stime cu cs
    return total / os.sysconf("SC_CLK_TCK")


class CpuTimeline:
    """The workers' CPU seconds, sampled every `every` s in a thread: [(perf_counter, s)]."""

    def __init__(self, root: int, every: float = 0.5):
        self.root, self.every, self.samples = root, every, []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        pids = worker_pids(self.root)
        while not self.stop.is_set():
            self.samples.append((time.perf_counter(), cpu_seconds(pids)))
            self.stop.wait(self.every)

    def __enter__(self) -> CpuTimeline:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()


def burst_cpu(samples: list[tuple[float, float]], clicks: dict[int, float],
              by_step: dict[int, list[float]]) -> dict:
    """The workers' CPU seconds from each teacher's Next to the last student on that step,
    and that per student who followed (ms): what one follow costs, the other students'
    checks in that time included. {step: {"cpu_s", "per_follow_ms", "seconds"}}."""
    import numpy as np

    if len(samples) < 2:
        return {}
    ts, cs = np.array([t for t, _c in samples]), np.array([c for _t, c in samples])
    out = {}
    for step, follows in sorted(by_step.items()):
        t0 = clicks[step]
        t1 = t0 + max(follows)
        used = float(np.interp(t1, ts, cs) - np.interp(t0, ts, cs))
        out[step] = {"cpu_s": round(used, 2), "per_follow_ms": round(used / len(follows) * 1e3, 1),
                     "seconds": round(t1 - t0, 2)}
    return out


async def timers(url: str) -> dict:
    """A teacher starts a class and a student joins it, each page drawn once; then the
    teacher moves to step 2 (a question), the student's page follows, and the student taps a
    choice: each run's timers (fragment id -> interval) and the elements of
    its main area sent after the first of them; the tap's fragment ("" for the page's)."""
    t = Tab(url, "teacher", timeout=180)
    await t.connect()
    await t.open_lesson()
    await t.click("Start a class")
    code = re.search(r"class=([2-9A-Z]{4}-[2-9A-Z]{4})", t.query).group(1)
    s = Tab(url, "student", timeout=180)
    await s.connect()
    await s.open_lesson(f"class={code}")
    pages = {tab.name: {"timers": dict(tab.autos), "after_timer": tab.after_timer,
                        "errors": list(tab.errors)} for tab in (t, s)}
    from streamlit.proto.WidgetStates_pb2 import WidgetState

    if "Answer ▶" in t.buttons:  # step 1's own question, revealed on the teacher's page
        await t.click("Answer ▶")
    await t.click("Next ▶")  # step 2 asks the class
    await s.run(next(iter(s.autos)), auto=True)  # the student's check: the page follows
    wid, (options, fragment) = next(iter(s.radios.items()))  # a tap
    s.states[wid] = WidgetState(id=wid, string_value=options[0])
    await s.run(fragment)
    pages["tap"] = {"fragment": fragment, "whole": s.whole, "timers": s.autos,
                    "after_timer": s.after_timer, "errors": s.errors}
    for tab in (t, s):
        await tab.ws.close()
    return pages


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=120)
    ap.add_argument("--steps", type=int, default=4, help="teacher's Next clicks")
    ap.add_argument("--think", type=float, nargs=2, default=(3.0, 12.0),
                    metavar=("MIN", "MAX"), help="seconds a student reads before answering")
    ap.add_argument("--answer-time", type=float, default=20.0,
                    help="seconds the teacher leaves for answers before the reveal")
    ap.add_argument("--url", help="a running `make serve` (else one is started here)")
    ap.add_argument("--json", type=Path, default=ROOT / "test-output" / "class_load.json")
    ap.add_argument("--timers", action="store_true",
                    help="print each page's timers and what it sent after them (JSON), "
                         "on --url, and stop")
    args = ap.parse_args(argv)
    if args.timers:
        print(json.dumps(asyncio.run(timers(stream_url(args.url)))))
        return 0
    proc = None
    if args.url:
        url = stream_url(args.url)
    else:
        port = free_port()
        proc = start_hall(port)
        url = f"ws://127.0.0.1:{port}/_stcore/stream"
    try:
        asyncio.run(warm(url))
        load_start = os.getloadavg()[0]  # the machine is shared: said beside the figures
        t0, client0 = time.time(), time.process_time()
        with CpuTimeline(proc.pid if proc is not None else -1) as cpu:
            m, students, t = asyncio.run(run_class(url, args.students, args.steps,
                                                   tuple(args.think), args.answer_time))
        seconds, client_cpu = time.time() - t0, time.process_time() - client0
    finally:
        if proc is not None:
            proc.send_signal(signal.SIGINT)
            proc.wait(60)
    errors = [e for s in [t, *students] for e in s.errors]
    workers: dict[str, int] = {}
    for s in students:
        workers[s.worker] = workers.get(s.worker, 0) + 1

    def stats(v: list[float]) -> dict:
        return {"n": len(v), "p50_s": round(pct(v, 50), 3), "p95_s": round(pct(v, 95), 3),
                "max_s": round(max(v), 3) if v else None}

    report = {"machine": f"{os.cpu_count()} CPU cores, loadavg at start {load_start:.1f}, "
                         f"at end {os.getloadavg()[0]:.1f}",
              "students": args.students, "teacher_steps": args.steps, "think_s": args.think,
              "class_seconds": round(seconds, 1), "students_per_worker": workers,
              "follow": stats(m.follow), "follow_drawn": stats(m.drawn),
              "answer": stats(m.answers), "answers_after_the_reveal": m.late,
              "follow_by_step": {k: stats(v) for k, v in sorted(m.by_step.items())},
              "workers_cpu_s": round(cpu.samples[-1][1] - cpu.samples[0][1], 1)
              if proc is not None and cpu.samples else None,
              "follow_burst_cpu": burst_cpu(cpu.samples, m.clicks, m.by_step)
              if proc is not None else {},
              "load_client_cpu_s": round(client_cpu, 1),
              "errors": errors[:50], "n_errors": len(errors)}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    f, a = report["follow"], report["answer"]
    print(f"class of {args.students} in {seconds:.0f} s ({report['machine']}); students per "
          f"worker {workers}; errors {len(errors)}")
    print(f"teacher click -> student's step: n={f['n']} p50 {f['p50_s']} s p95 {f['p95_s']} s "
          f"max {f['max_s']} s")
    d = report["follow_drawn"]
    print(f"teacher click -> student's step drawn whole: n={d['n']} p50 {d['p50_s']} s p95 "
          f"{d['p95_s']} s max {d['max_s']} s")
    print(f"answer accepted: n={a['n']} p50 {a['p50_s']} s p95 {a['p95_s']} s max {a['max_s']} s")
    for k, v in report["follow_by_step"].items():
        print(f"  step {k}: follow p50 {v['p50_s']} s p95 {v['p95_s']} s max {v['max_s']} s")
    for k, v in report["follow_burst_cpu"].items():
        print(f"  step {k}: workers' CPU from the Next to the last follow {v['cpu_s']} s in "
              f"{v['seconds']} s, {v['per_follow_ms']} ms per follow")
    print(f"workers' CPU over the class {report['workers_cpu_s']} s; the load client used "
          f"{client_cpu:.1f} CPU s")
    for e in errors[:20]:
        print("  ERROR", e)
    print(f"report: {args.json}")
    good = not errors and f["p95_s"] <= 2.0 and a["p95_s"] <= 1.0
    return 0 if good else 1


async def warm(url: str) -> None:
    """Open the lesson a few times so that both workers have loaded the model and the
    lesson's first steps (a class does not start on a cold server)."""
    for _ in range(4):
        t = Tab(url, "warm-up", timeout=600)
        await t.connect()
        await t.open_lesson()
        for _ in range(4):
            if "Answer ▶" in t.buttons:
                await t.click("Answer ▶")
            await t.click("Next ▶")
        await t.ws.close()


if __name__ == "__main__":
    raise SystemExit(main())
