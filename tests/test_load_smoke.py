"""The class-of-30 load tool (make load) in miniature: 3 sessions, a few reruns each, on
loopback. Checks that the tool itself works (connects, types, changes layers, tabs and pages,
reports latency and memory) and that the server answers every rerun without an error. The
latency figures are recorded in docs/performance.md from `make load`, never asserted here.
Run as its own process, as `make load` does (the suite may hold an event loop in this one).

Every tool here loads one server started for this module (the tools' --url and --pid): the
first class meets it cold, as `make load` does; `make load` starts a fresh server for each of
memory.py and heavy.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests import serve

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> list[str]:
    """One app server for the module; the tool's arguments that point it there."""
    port = serve.free_port()
    proc = serve.start_server(port, tmp_path_factory.mktemp("load_smoke") / "streamlit.log")
    yield ["--url", f"http://127.0.0.1:{port}", "--pid", str(proc.pid)]
    serve.stop_server(proc)


@pytest.mark.server
def test_a_small_class(tmp_path, server):
    out = tmp_path / "load.json"
    run = subprocess.run(
        [sys.executable, "tests/load/run_load.py", "--sessions", "3", "--steps", "9",
         "--duration", "90", "--shared", "1", "--think", "0", "0.1", "--settle", "1",
         "--json", str(out), *server], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(out.read_text())
    assert run.returncode == 0 and report["errors"] == [] and report["server_alive"], report
    assert report["ok"] == report["reruns"] >= 3 * 5
    assert {"open", "type", "page"} <= set(report["by_action"])
    # a layer or tab inside an st.fragment reruns that fragment alone, as in a browser
    assert report["warm_up"]["fragment_reruns"] == 1 and report["light_by_third"], report
    assert report["rss_mib"]["peak"] > report["rss_mib"]["start"] > 0


@pytest.mark.server
def test_a_class_on_the_all_heads_page_changes_layers_by_its_buttons(tmp_path, server):
    """The all-heads page's layer is a row of buttons (a segmented control): the tool clicks
    them as a student does (a layer rerun on that page, answered without an error)."""
    out = tmp_path / "load.json"
    run = subprocess.run(
        [sys.executable, "tests/load/run_load.py", "--sessions", "2", "--steps", "6",
         "--duration", "90", "--shared", "1", "--think", "0", "0.1", "--settle", "1",
         "--pages", "explore", "--json", str(out), *server],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(out.read_text())
    assert run.returncode == 0 and report["errors"] == [], report
    assert report["by_action"].get("layer", {}), report["by_action"]


# Pages whose layer, head or tab a student changes: each change redraws only the part of the
# page that depends on it (an st.fragment), not the sidebar and the page above it.
LIGHT_PAGES = {"layer_heads", "explore", "value_norms", "inside_score", "corpus_heads",
               "compare", "head_stats", "positions", "families", "images", "windows", "ablation"}


@pytest.mark.server
def test_every_layer_and_tab_change_reruns_only_its_fragment(tmp_path, server):
    """The walk (run_load --walk): one session visits every page, changes its layer and opens
    another tab. Every such rerun is answered without an error and reruns only its fragment,
    as a browser asks for it (BackMsg rerun_script.fragment_id)."""
    out = tmp_path / "walk.json"
    run = subprocess.run([sys.executable, "tests/load/run_load.py", "--walk", "--json", str(out),
                          *server], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    reruns = json.loads(out.read_text())["reruns"]
    assert run.returncode == 0 and all(r["ok"] for r in reruns), run.stdout[-3000:]
    light = [r for r in reruns if r["action"] in ("layer", "tab")]
    assert {r["page"] for r in light} == LIGHT_PAGES, run.stdout[-3000:]
    # All heads' layer and head rerun the whole page for a short input, by design: its mosaic
    # outlines the open head (pages/explore.py); past 24 tokens they are in its fragment
    assert [(r["page"], r["action"]) for r in light if not r["fragment"]] == [
        ("explore", "layer")], run.stdout[-3000:]
    assert not any(r["fragment"] for r in reruns if r["action"] in ("open", "page"))


def test_pages_narrows_the_class_to_the_named_pages(monkeypatch):
    sys.path.insert(0, str(ROOT / "tests" / "load"))
    import run_load

    served = ["", "step_by_step", "similarity", "explore"]
    assert run_load.class_pages(served) == served
    monkeypatch.setattr(run_load, "ONLY_PAGES", {run_load.DEFAULT, "explore"})
    assert run_load.class_pages(served) == ["", "explore"]


def test_a_lecture_class_types_the_teachers_sentences():
    """By default every student types a sentence of their own (a few repeat an earlier one);
    --lecture K: every student types one of the first K sentences (1: "I saw a saw")."""
    sys.path.insert(0, str(ROOT / "tests" / "load"))
    import run_load

    own = run_load.class_sentences(120, shared=5)
    assert len(own) == 120 and len(set(own)) == 115 and own[115:] == own[:5]
    assert run_load.class_sentences(120, shared=5, lecture=1) == ["I saw a saw"] * 120
    five = run_load.class_sentences(120, shared=5, lecture=5)
    assert set(five) == set(run_load.SENTENCES[:5]) and five.count(five[0]) == 24
    refused = subprocess.run(
        [sys.executable, "tests/load/run_load.py", "--lecture", "-1"], cwd=ROOT,
        capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "--lecture takes 1 to" in refused.stderr  # parsed, checked


@pytest.mark.slow
@pytest.mark.server
def test_the_memory_and_heavy_scenarios_run(tmp_path, server):
    """tests/load/memory.py and heavy.py in miniature, on the module's server (their --url and
    --pid; `make load` starts a fresh one for each; heavy.py's smaller links, --quick): they
    connect, walk and report (their goals are checked at full size by `make load`, not
    here)."""
    mem = tmp_path / "memory.json"
    run = subprocess.run(
        [sys.executable, "tests/load/memory.py", "--sessions", "2", "--tokens", "60", "--after",
         "2", "--json", str(mem), *server], cwd=ROOT, capture_output=True, text=True,
        timeout=600)
    assert mem.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(mem.read_text())
    assert report["errors"] == [] and report["server_alive"], report["errors"]
    assert report["ok"] == report["reruns"] == 2 * 7
    assert report["rss_mib"]["peak"] >= report["rss_mib"]["idle"] > 0
    heavy = tmp_path / "heavy.json"
    run = subprocess.run(
        [sys.executable, "tests/load/heavy.py", "--alone", "10", "--quick", "--json", str(heavy),
         *server],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert heavy.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    report = json.loads(heavy.read_text())
    assert run.returncode == 0 and report["server_alive"], run.stdout[-2000:]
    # the light session reran (a phase of a few seconds may end before its first slow rerun
    # does, on a loaded machine: the phases are summed here, sized by `make load`)
    assert report["light_alone"]["n"] + report["light_during_heavy"]["n"] > 0
    assert len(report["heavy_links"]) == 3
    # each link says whether its session read the heavy-work line's message; whether one
    # waits depends on whether the quick links' jobs overlap (the cost tab's may end before
    # the pasted paragraph's begins), so the line itself is tests/test_ui_worklist.py's
    assert all(isinstance(h["told_to_wait"], bool) and h["errors"] == []
               for h in report["heavy_links"]), report["heavy_links"]


@pytest.mark.server
def test_a_class_pages_timers_start_once_its_run_has_ended(server):
    """In class mode the teacher's count and a student's check are timers (st.fragment with
    run_every), started by the browser when the run sends them: each page sends them after
    every element of its main area (ui.classroom.watch, the lesson page's last call), so
    their first rerun never reaches the server as the page's run ends; a student's tap is a
    run of the page (no fragment run of its own that a check could meet as it ends)."""
    from attnviz.ui.classroom import COUNT_S, POLL_S

    run = subprocess.run([sys.executable, "tests/load/class_load.py", "--timers",
                          *server[:2]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    pages = json.loads(run.stdout.strip().splitlines()[-1])
    tap = pages.pop("tap")  # a student's answer is the page's radio: a tap reruns the page
    assert tap["fragment"] == "" and tap["whole"] and tap["errors"] == [], tap
    assert tap["after_timer"] == 0 and list(tap["timers"].values()) == [POLL_S], tap
    for name, page in pages.items():
        assert page["errors"] == [], (name, page)
        assert len(page["timers"]) == 1, (name, page)  # the count, the check
        assert page["after_timer"] == 0, (name, page)
    assert list(pages["teacher"]["timers"].values()) == [COUNT_S]
    assert list(pages["student"]["timers"].values()) == [POLL_S]
