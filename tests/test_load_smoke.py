"""The class-of-30 load tool (make load) in miniature: 3 sessions, a few reruns each, on
loopback. Checks that the tool itself works (connects, types, changes layers, tabs and pages,
reports latency and memory) and that the server answers every rerun without an error. The
latency figures are recorded in the README from `make load`, never asserted here."""

import json

from tests.load import run_load


def test_a_small_class(tmp_path):
    out = tmp_path / "load.json"
    rc = run_load.main(["--sessions", "3", "--steps", "9", "--duration", "90", "--shared", "1",
                        "--think", "0", "0.1", "--settle", "1", "--json", str(out)])
    report = json.loads(out.read_text())
    assert rc == 0 and report["errors"] == [] and report["server_alive"]
    assert report["ok"] == report["reruns"] >= 3 * 5
    assert {"open", "type", "page"} <= set(report["by_action"])
    assert report["rss_mib"]["peak"] > report["rss_mib"]["start"] > 0
