"""`python -m attnviz html` writes a lesson pack that opens from disk in headless Chromium with
every request that is not a file:// one aborted: every page draws every figure, and no page
tries to reach anything outside its folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.conftest import SHOTS

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def pack(tmp_path_factory) -> Path:
    from tests import lesson_trained

    lesson_trained.sweeps()  # as the lesson_kept fixture (function-scoped): kept before the run
    out = tmp_path_factory.mktemp("pack")
    run = subprocess.run([sys.executable, "-m", "attnviz", "html", "--text", "I saw a saw",
                          "--out", str(out)], cwd=ROOT, capture_output=True, text=True,
                         timeout=1800)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "[1/" in run.stdout and "wrote" in run.stdout  # progress, then the summary
    return out


def test_every_page_draws_every_figure_offline(browser, pack):
    ctx = browser.new_context(viewport={"width": 1300, "height": 900})
    outside: list[str] = []

    def route(r):
        if r.request.url.startswith("file://"):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()

    ctx.route("**/*", route)
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto((pack / "index.html").as_uri())
    links = page.eval_on_selector_all("ol.contents a", "as => as.map(a => a.href)")
    assert len(links) >= 20 and all(u.startswith("file://") for u in links)
    figures_seen = 0
    for url in links:
        page.goto(url)
        n = page.locator("script.attnviz-figure").count()
        if n:
            page.wait_for_function(
                "n => [...document.querySelectorAll('.figure')].filter("
                "d => d.querySelector('.plotly .main-svg')).length === n", arg=n,
                timeout=60_000, polling=250)
        assert page.locator(".figure").count() == n, url
        figures_seen += n
        name = url.rsplit("/", 1)[1]
        if name in ("heads-of-layer-0.html", "step-by-step-3-similarity.html"):
            page.screenshot(path=str(SHOTS / f"html_export_{name}.png"), full_page=True)
    assert figures_seen >= 40
    assert outside == [] and errors == []
    ctx.close()
