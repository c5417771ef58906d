"""End-to-end fixtures: `streamlit run app.py` on loopback, driven by headless Chromium.

Chromium comes from Debian: `make test` installs it (and `fonts-noto-cjk`, without which
headless Chromium draws the Chinese pages' characters as boxes) through its `browser` step
where apt-get can; without one every e2e test skips and says why. Playwright's Python package
drives it through executable_path (no browser download). One server and one browser serve
the whole session (pytest-xdist runs every e2e test on one worker: tests/conftest.py).
Screenshots go to test-output/screenshots/ (the test run's output folder).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tests import serve

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "test-output" / "screenshots"
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")  # each worker's server logs on its own
SERVER_LOG = SHOTS.parent / f"streamlit{'_' + _WORKER if _WORKER else ''}.log"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROME_ARGS = serve.CHROME_ARGS
free_port = serve.free_port


NO_CHROMIUM = (f"no Chromium at {CHROMIUM}: `make browser` installs Debian's chromium (as "
               "root, with apt-get), or set CHROMIUM to a Chromium or Chrome binary")


def ensure_chromium() -> str:
    """The Chromium binary to drive (CHROMIUM, default Debian's /usr/bin/chromium);
    RuntimeError saying how to get one when it is missing. Installing it belongs to the
    Makefile (`make browser`), never to a test."""
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        raise RuntimeError(NO_CHROMIUM)
    return CHROMIUM


def start_server(port: int, log_path: Path) -> subprocess.Popen:
    try:
        return serve.start_server(port, log_path)
    except RuntimeError as e:
        pytest.fail(str(e))


@pytest.fixture(scope="session")
def app_server():
    """A running app on loopback for the whole e2e session, (its URL, its process); stopped by
    its PID at the end."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = start_server(port, SERVER_LOG)
    yield f"http://127.0.0.1:{port}", proc
    serve.stop_server(proc)


@pytest.fixture(scope="session")
def app_url(app_server) -> str:
    return app_server[0]


@pytest.fixture(scope="session")
def app_pid(app_server) -> int:
    return app_server[1].pid


@pytest.fixture(scope="session")
def playwright_driver():
    """Playwright's driver for the session, with the Chromium it drives (skips, saying how to
    get one, where there is none)."""
    try:
        exe = ensure_chromium()
    except RuntimeError as e:
        pytest.skip(str(e))
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p, exe


@pytest.fixture(scope="session")
def browser(playwright_driver):
    """One headless Chromium for the session, for tests that need a context of their own (a
    phone's touch screen, a locale, a route on every request, a hall's cookies)."""
    p, exe = playwright_driver
    b = p.chromium.launch(executable_path=exe, args=CHROME_ARGS)
    yield b
    b.close()


@pytest.fixture(scope="session")
def profile(playwright_driver, tmp_path_factory):
    """One Chromium profile on disk for the session's plain pages, as a student's browser is
    between two visits: its HTTP cache and compiled-code cache keep the app's scripts
    (Streamlit's frontend, plotly.js), so a page opened in it parses them once. Each page
    gets its own Streamlit session; cookies are cleared after each test (`profile_page`). No
    route may be set on it: a route turns Chromium's cache off (guard_outside only listens)."""
    p, exe = playwright_driver
    ctx = p.chromium.launch_persistent_context(
        tmp_path_factory.mktemp("chromium_profile"), executable_path=exe, args=CHROME_ARGS,
        viewport={"width": 1400, "height": 1000})
    for blank in ctx.pages:  # the window a persistent profile opens with
        blank.close()
    yield ctx
    ctx.close()


PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="session")
def phone_profile(playwright_driver, tmp_path_factory):
    """A profile on disk as `profile`, for pages on a phone: 390 x 844, touch, a mobile
    viewport (what a context fixes when it starts, and a tab cannot emulate). Its tabs come
    from `profile_page` as `profile`'s do."""
    p, exe = playwright_driver
    ctx = p.chromium.launch_persistent_context(
        tmp_path_factory.mktemp("chromium_phone_profile"), executable_path=exe,
        args=CHROME_ARGS, viewport=PHONE, is_mobile=True, has_touch=True)
    for blank in ctx.pages:
        blank.close()
    yield ctx
    ctx.close()


@contextlib.contextmanager
def profile_page(profile, viewport: dict | None = None, color_scheme: str | None = None):
    """A new tab in the session's profile (`profile`), `viewport` (default 1400x1000) and
    `color_scheme` emulated for it alone; closed, and the profile's cookies cleared, after."""
    pg = profile.new_page()
    try:
        if viewport:
            pg.set_viewport_size(viewport)
        if color_scheme:
            pg.emulate_media(color_scheme=color_scheme)
        yield pg
    finally:
        pg.close()
        profile.clear_cookies()


@pytest.fixture
def page(profile):
    with profile_page(profile) as pg:
        yield pg


@pytest.fixture
def tab(profile):
    """tab(viewport=None, color_scheme=None): a new page in the session's profile
    (profile_page), closed with the test."""
    with contextlib.ExitStack() as stack:
        yield lambda viewport=None, color_scheme=None: stack.enter_context(
            profile_page(profile, viewport, color_scheme))


LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def outside(url: str) -> bool:
    """Whether a request to `url` would leave this machine (data:, blob: and about: stay)."""
    parts = urlparse(url)
    return parts.scheme not in ("data", "blob", "about") and parts.hostname not in LOOPBACK


def guard_outside(page, abort: bool = False) -> list[str]:
    """From now on, every request `page` attempts to a host other than the loopback server
    (websockets included) is added to the list returned. With `abort`, a route on `page`'s
    whole context also aborts them before they leave (a route turns the context's cache off:
    for a context of the test's own, never the shared `profile`)."""
    attempted: list[str] = []

    def guard(route):
        if outside(route.request.url):
            route.abort()
        else:
            route.continue_()

    if abort:
        page.context.route("**/*", guard)
    page.on("websocket", lambda ws: attempted.append(ws.url) if outside(ws.url) else None)
    page.on("request", lambda r: attempted.append(r.url) if outside(r.url) else None)
    return attempted


def wait_for_app(page, timeout_ms: int = 120_000, plots: bool = True) -> None:
    """Wait until the script finished running and (optionally) a Plotly chart is drawn."""
    page.wait_for_selector("[data-testid='stApp']", timeout=timeout_ms)
    # The router (app.py) draws the sidebar on every run: its sentence box, or on a class
    # student's lesson the language switch alone (ui.sidebar.students_lesson).
    page.wait_for_selector("[data-testid='stSidebar'] textarea, "
                           "[data-testid='stSidebar'] .st-key-lang", timeout=timeout_ms)
    page.wait_for_timeout(500)
    page.wait_for_selector("[data-testid='stApp'][data-test-script-state='notRunning']",
                           timeout=timeout_ms)
    if plots:
        page.wait_for_selector(".js-plotly-plot .main-svg", timeout=timeout_ms)


def drawn_charts(page, selector: str = ".js-plotly-plot", at_least: int = 1,
                 timeout_ms: int = 120_000) -> int:
    """How many charts `selector` finds once it finds `at_least` (or the time is up): charts
    are drawn in place by the browser after the script's run ends (ui.live_chart), so a test
    waits for them instead of counting at once."""
    loc = page.locator(selector)
    deadline = time.monotonic() + timeout_ms / 1000
    while (n := loc.count()) < at_least and time.monotonic() < deadline:
        page.wait_for_timeout(250)
    return n


def page_errors(page) -> list[str]:
    """Texts of any Streamlit exception or error boxes on the page."""
    return [e.inner_text() for e in page.query_selector_all(
        "[data-testid='stException'], [data-testid='stAlertContentError']")]


def screenshot(page, name: str) -> Path:
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def set_sentence(page, text: str) -> None:
    """Type into the sidebar's sentence box and apply it (Ctrl+Enter commits a text area)."""
    box = page.locator("[data-testid='stSidebar'] textarea").first
    box.fill(text)
    box.press("Control+Enter")
    page.wait_for_timeout(700)
