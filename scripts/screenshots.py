"""Screenshots of every page in headless Debian chromium: the README's, or the whole check.

README (as before): each page of the router's PAGES with the sentence given (default "I saw a
saw"), waited on until the script finished and the Plotly figures are drawn, saved as
assets/screenshots/<page>.png (the visible window, 1400x1000):

    .venv/bin/python scripts/screenshots.py [--text "I saw a saw"] [--out assets/screenshots]

The check (--matrix): every page in each theme (the browser's preferred colour scheme, which
the app follows), each language (the `lang` URL parameter) and each window size, saved as
OUT/<width>x<height>/<theme>/<lang>/<page>.png, plus one contact sheet per (size, theme,
language), OUT/sheets/<width>x<height>_<theme>_<lang>.png: all pages on one image, so a person
can look at everything in a few pictures. OUT/report.txt lists what a picture cannot show well:
a page that scrolls sideways (wider than the window), an error box on a page, a page that never
finished drawing.

    .venv/bin/python scripts/screenshots.py --matrix --out /tmp/attnviz-check
        [--sizes 1400x1000,1280x720,390x844] [--themes light,dark] [--langs en,zh]
        [--pages lesson,explore] [--full-page]

--full-page captures the page's length (up to FULL_PAGE_SCREENS windows) instead of its window.
"""

from __future__ import annotations

import argparse
import math
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import ensure_chromium, wait_for_app  # noqa: E402
from tests.pages_list import existing_pages, url_path  # noqa: E402
from tests.serve import CHROME_ARGS, free_port, start_server, stop_server  # noqa: E402

SIZES = ((1400, 1000), (1280, 720), (390, 844))
THEMES = ("light", "dark")
LANGS = ("en", "zh")
FULL_PAGE_SCREENS = 4  # a --full-page shot is at most this many windows tall
SHEET_COLUMNS = 7  # pictures per row of a contact sheet
CELL_WIDTH = {"wide": 400, "phone": 200}  # px of one picture on a contact sheet
PAGE_WAIT_MS = 90_000  # a page that has not drawn by then is reported and shot as it is

# Streamlit scrolls inside its main section, not the document: both are measured.
SIDEWAYS = """() => {
  const main = document.querySelector('[data-testid=stMain]');
  const doc = document.scrollingElement;
  return Math.max(main ? main.scrollWidth - main.clientWidth : 0,
                  doc.scrollWidth - window.innerWidth);
}"""
TALL = ("Math.max(...[...document.querySelectorAll('section, [data-testid=stMain]')]"
        ".map(e => e.scrollHeight))")
ERRORS = ("[...document.querySelectorAll(\"[data-testid='stException'], "
          "[data-testid='stAlertContentError']\")].map(e => e.innerText.slice(0, 200))")


@dataclass
class Shot:
    page: str  # the page file's stem
    path: Path
    problems: list[str]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--text", default="I saw a saw")
    ap.add_argument("--out", type=Path, default=None,
                    help="folder (default assets/screenshots, or /tmp/attnviz-check with "
                         "--matrix)")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--matrix", action="store_true",
                    help="every page x theme x language x size, with contact sheets")
    ap.add_argument("--sizes", default=",".join(f"{w}x{h}" for w, h in SIZES))
    ap.add_argument("--themes", default=",".join(THEMES))
    ap.add_argument("--langs", default=",".join(LANGS))
    ap.add_argument("--pages", default="", help="page stems to shoot (default: all)")
    ap.add_argument("--full-page", action="store_true")
    args = ap.parse_args(argv)

    pages = existing_pages()
    if args.pages:
        wanted = set(args.pages.split(","))
        pages = [p for p in pages if Path(p).stem in wanted]
    if not args.matrix:
        out = args.out or ROOT / "assets" / "screenshots"
        shots = shoot(pages, out, [(args.width, args.height)], ["light"], ["en"], args.text,
                      flat=True, full_page=args.full_page)
        print(f"{len(shots)} screenshots in {out}")
        return 0
    out = args.out or Path("/tmp/attnviz-check")
    sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
    themes, langs = args.themes.split(","), args.langs.split(",")
    shots = shoot(pages, out, sizes, themes, langs, args.text, flat=False,
                  full_page=args.full_page)
    lines = []
    for (size, theme, lang), group in shots.items():
        sheet = contact_sheet(group, out / "sheets" / f"{size}_{theme}_{lang}.png",
                              f"{size} · {theme} · {lang}", phone=int(size.split("x")[0]) < 700)
        print(sheet)
        lines += [f"{size} {theme} {lang} {s.page}: {p}" for s in group for p in s.problems]
    (out / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{sum(len(g) for g in shots.values())} screenshots in {out}; "
          f"{len(lines)} problems listed in {out / 'report.txt'}")
    return 0


def shoot(pages: list[str], out: Path, sizes, themes, langs, text: str, flat: bool,
          full_page: bool) -> dict[tuple[str, str, str], list[Shot]]:
    """Screenshots of `pages` for every (size, theme, language); one server, one browser."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = out / ".streamlit.log"
    proc = start_server(port, log)
    base = f"http://127.0.0.1:{port}"
    shots: dict[tuple[str, str, str], list[Shot]] = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=ensure_chromium(), args=CHROME_ARGS)
            for width, height in sizes:
                for theme in themes:
                    ctx = browser.new_context(viewport={"width": width, "height": height},
                                              color_scheme=theme, device_scale_factor=1)
                    page = ctx.new_page()
                    # "/" first: on a fresh server a direct sub-page link can bypass app.py.
                    page.goto(f"{base}/?" + urllib.parse.urlencode({"text": text}))
                    wait_for_app(page, plots=False)
                    for lang in langs:
                        query = "?" + urllib.parse.urlencode({"text": text, "lang": lang})
                        folder = out if flat else out / f"{width}x{height}" / theme / lang
                        folder.mkdir(parents=True, exist_ok=True)
                        group = shots.setdefault((f"{width}x{height}", theme, lang), [])
                        for path in pages:
                            target = folder / f"{Path(path).stem}.png"
                            problems = []
                            page.goto(base + url_path(path) + query)
                            try:
                                wait_for_app(page, timeout_ms=PAGE_WAIT_MS, plots=True)
                            except PlaywrightError:
                                problems.append("did not finish drawing in "
                                                f"{PAGE_WAIT_MS // 1000} s")
                            page.wait_for_timeout(1000)  # let Plotly finish its transitions
                            wide = int(page.evaluate(SIDEWAYS))
                            if wide > 1:
                                problems.append(f"scrolls sideways by {wide} px")
                            problems += [f"error box: {e!r}" for e in page.evaluate(ERRORS)]
                            capture(page, target, width, height, full_page)
                            group.append(Shot(Path(path).stem, target, problems))
                            note = "; ".join(problems)
                            print(f"{target}" + (f"  ({note})" if note else ""))
                    ctx.close()
            browser.close()
    finally:
        stop_server(proc)
        log.unlink(missing_ok=True)
    return shots


def capture(page, target: Path, width: int, height: int, full_page: bool) -> None:
    """The window, or (full_page) the page's length up to FULL_PAGE_SCREENS windows."""
    if full_page:
        tall = int(page.evaluate(TALL))
        page.set_viewport_size({"width": width,
                                "height": max(height, min(tall, FULL_PAGE_SCREENS * height))})
        page.wait_for_timeout(800)
    page.screenshot(path=str(target))
    if full_page:
        page.set_viewport_size({"width": width, "height": height})


def contact_sheet(shots: list[Shot], target: Path, title: str, phone: bool) -> Path:
    """All pictures of one (size, theme, language) on one image: a grid of SHEET_COLUMNS
    columns, each picture scaled to CELL_WIDTH px and named (a problem marks it in red)."""
    from PIL import Image, ImageDraw, ImageFont

    cell_w = CELL_WIDTH["phone" if phone else "wide"]
    images = [Image.open(s.path).convert("RGB") for s in shots]
    thumbs = [im.resize((cell_w, max(1, round(im.height * cell_w / im.width))),
                        Image.Resampling.LANCZOS) for im in images]
    cols = min(SHEET_COLUMNS, max(1, len(thumbs)))
    rows = math.ceil(len(thumbs) / cols)
    label_h, pad, head = 22, 8, 34
    row_h = [max((t.height for t in thumbs[r * cols:(r + 1) * cols]), default=0)
             for r in range(rows)]
    sheet = Image.new("RGB", (cols * (cell_w + pad) + pad,
                              head + sum(h + label_h + pad for h in row_h) + pad), "#808080")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=14)
    draw.text((pad, 8), title, fill="#000000", font=ImageFont.load_default(size=18))
    y = head
    for r in range(rows):
        for c in range(cols):
            i = r * cols + c
            if i >= len(thumbs):
                break
            x = pad + c * (cell_w + pad)
            bad = bool(shots[i].problems)
            draw.text((x, y + 3), shots[i].page + (" (!)" if bad else ""),
                      fill="#B00000" if bad else "#000000", font=font)
            sheet.paste(thumbs[i], (x, y + label_h))
        y += row_h[r] + label_h + pad
    target.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(target, optimize=True)
    return target


if __name__ == "__main__":
    raise SystemExit(main())
