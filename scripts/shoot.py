"""Screenshots of chosen app URLs in headless Debian chromium, to look at a page as a student.

    python scripts/shoot.py --out /tmp/shots "lesson=/lesson?lesson_step=5" "heads=/?layer=3"
    python scripts/shoot.py --width 390 --height 844 --full-page "phone=/explore"

Starts `streamlit run app.py` on loopback (tests/serve.py), opens "/" first (a fresh server
can otherwise bypass the router), then each NAME=PATH, waits for the script to finish and the
charts to draw, and writes NAME.png. Optional: --click TEXT clicks a button or tab with that
text after loading (repeatable, applied to every URL), --scheme dark|light sets the browser's
preferred colour scheme. --model FOLDER types a checkpoint folder (or Hub id) into the sidebar
first and then reaches each page through the sidebar's links, so the session keeps the model
(a URL's query is then not applied; the server is started with ATTNVIZ_MODEL_ROOTS including
the folder's parent).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import ensure_chromium, wait_for_app  # noqa: E402
from tests.serve import CHROME_ARGS, free_port, start_server, stop_server  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("urls", nargs="+", help="NAME=PATH, e.g. lesson=/lesson?lesson_step=3")
    ap.add_argument("--out", type=Path, default=Path("/tmp/attnviz-shots"))
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--full-page", action="store_true")
    ap.add_argument("--click", action="append", default=[], help="text of a button/tab to click")
    ap.add_argument("--scheme", choices=["light", "dark"], default="light")
    ap.add_argument("--plots", action="store_true", help="wait for a chart on every page")
    ap.add_argument("--model", help="checkpoint folder or Hub id typed into the sidebar")
    args = ap.parse_args(argv)
    if args.model and Path(args.model).exists():
        parent = str(Path(args.model).resolve().parent)
        roots = os.environ.get("ATTNVIZ_MODEL_ROOTS")
        os.environ["ATTNVIZ_MODEL_ROOTS"] = os.pathsep.join(filter(None, [roots, parent]))

    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = start_server(port, args.out / "streamlit.log")
    base = f"http://127.0.0.1:{port}"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=ensure_chromium(), args=CHROME_ARGS)
            ctx = browser.new_context(viewport={"width": args.width, "height": args.height},
                                      color_scheme=args.scheme)
            page = ctx.new_page()
            page.goto(base + "/")
            wait_for_app(page, plots=False)
            if args.model:
                page.get_by_text("Model and device").first.click()
                box = page.locator("input[aria-label='Checkpoint folder or Hub id']")
                box.fill(args.model)
                box.press("Enter")
                page.wait_for_timeout(1500)
                wait_for_app(page, plots=False)
            for item in args.urls:
                name, _, path = item.partition("=")
                if args.model:  # keep the session: follow the sidebar's link to the page
                    route = (path or "/").split("?")[0].strip("/")
                    page.locator(f"[data-testid=stSidebarNav] a[href$='/{route}']").first.click()
                    page.wait_for_timeout(800)
                else:
                    page.goto(base + (path or "/"))
                wait_for_app(page, plots=args.plots)
                for text in args.click:
                    page.get_by_text(text, exact=True).first.click()
                    page.wait_for_timeout(500)
                    wait_for_app(page, plots=False)
                page.wait_for_timeout(1200)  # let Plotly finish drawing
                target = args.out / f"{name}.png"
                if args.full_page:  # Streamlit scrolls inside its main section, not the page
                    tall = page.evaluate("Math.max(...[...document.querySelectorAll("
                                         "'section, [data-testid=stMain]')].map(e => "
                                         "e.scrollHeight))")
                    page.set_viewport_size({"width": args.width,
                                            "height": max(args.height, min(int(tall), 12000))})
                    page.wait_for_timeout(800)
                page.screenshot(path=str(target))
                page.set_viewport_size({"width": args.width, "height": args.height})
                print(target)
            browser.close()
    finally:
        stop_server(proc)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
