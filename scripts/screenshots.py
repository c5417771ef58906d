"""Regenerate the README screenshots: every page of app.py, in headless Debian chromium.

Starts `streamlit run app.py` on loopback, opens each page of app.py's PAGES that exists with
the sentence given (default "I saw a saw"), waits until the script finished and the Plotly
figures are drawn, and saves assets/screenshots/<page>.png (the visible window, 1400x1000).

    .venv/bin/python scripts/screenshots.py [--text "I saw a saw"] [--out assets/screenshots]
"""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import ensure_chromium, wait_for_app  # noqa: E402
from tests.pages_list import existing_pages, url_path  # noqa: E402
from tests.serve import CHROME_ARGS, free_port, start_server, stop_server  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--text", default="I saw a saw")
    ap.add_argument("--out", type=Path, default=ROOT / "assets" / "screenshots")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    proc = start_server(port, args.out / ".streamlit.log")
    query = "?" + urllib.parse.urlencode({"text": args.text})
    saved = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=ensure_chromium(), args=CHROME_ARGS)
            ctx = browser.new_context(viewport={"width": args.width, "height": args.height},
                                      device_scale_factor=1)
            page = ctx.new_page()
            # "/" first: on a fresh server a direct sub-page link can bypass app.py (v1 pages).
            page.goto(f"http://127.0.0.1:{port}/{query}")
            wait_for_app(page, plots=True)
            for path in existing_pages():
                page.goto(f"http://127.0.0.1:{port}{url_path(path)}{query}")
                wait_for_app(page, plots=True)
                page.wait_for_timeout(1000)  # let Plotly finish its transitions
                target = args.out / f"{Path(path).stem}.png"
                page.screenshot(path=str(target))
                saved.append(target)
                print(f"{path} -> {target.relative_to(ROOT)}")
            browser.close()
    finally:
        stop_server(proc)
        (args.out / ".streamlit.log").unlink(missing_ok=True)
    print(f"{len(saved)} screenshots in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
