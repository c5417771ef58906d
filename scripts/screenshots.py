"""Screenshots of every page in headless Debian chromium: the assets', or the whole check.

By default: each page of the router's PAGES with the sentence given (default "I saw a
saw"), waited on until the script finished and the Plotly figures are drawn, saved as
assets/screenshots/<page>.png (the visible window, 1400x1000):

    .venv/bin/python scripts/screenshots.py [--text "I saw a saw"] [--out assets/screenshots]

The check (--matrix, `make screenshots`): every page in each window size (a phone 390x844, a
laptop or projector 1280x720, a desktop 1400x1000), each theme (the browser's preferred
colour scheme, which the app follows) and each language (the `lang` URL parameter), saved as
OUT/<width>x<height>/<theme>/<lang>/<page>.png, plus one contact sheet per size,
OUT/sheets/<width>x<height>.png: every page (rows) in every theme and language (columns) on
one image, so a person can look at everything in three pictures. OUT/report.txt lists what a
picture cannot show well: a page that scrolls sideways (wider than the window), an error box
on a page, a page that never finished drawing.

    .venv/bin/python scripts/screenshots.py --matrix --out /tmp/attnviz-check
        [--sizes 390x844,1280x720,1400x1000] [--themes light,dark] [--langs en,zh]
        [--pages lesson,explore] [--full-page]

--languages: the pictures in Chinese and in the dark theme (LANGUAGE_SHOTS), into
assets/screenshots/ (or --out).

--full-page captures the page's length (up to FULL_PAGE_SCREENS windows) instead of its window.
It needs only the project's venv (`make setup`: playwright, Pillow through streamlit) and a
Chromium (tests/e2e/conftest.ensure_chromium)."""

from __future__ import annotations

import argparse
import sys
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.e2e.conftest import ensure_chromium, wait_for_app  # noqa: E402
from tests.pages_list import existing_pages, url_path  # noqa: E402
from tests.serve import CHROME_ARGS, free_port, start_server, stop_server  # noqa: E402

SIZES = ((390, 844), (1280, 720), (1400, 1000))  # phone, laptop or projector, desktop
THEMES = ("light", "dark")
LANGS = ("en", "zh")
FULL_PAGE_SCREENS = 4  # a --full-page shot is at most this many windows tall
PAGES_PER_ROW = {"wide": 1, "phone": 2}  # pages side by side on a contact sheet's row
CELL_WIDTH = {"wide": 360, "phone": 195}  # px of one picture on a contact sheet
# The English and Chinese pictures (--languages): (file, page stem, window, theme,
# language, full page, size saved as (scaled), or the height it is cropped to). Each under
# 300 KB.
LANGUAGE_SHOTS = (
    ("lesson_zh_dark.png", "lesson", (1366, 768), "dark", "zh", False, (1366, 768), 0),
    ("heads_dark.png", "layer_heads", (1920, 1080), "dark", "en", False, (1366, 768), 0),
    ("head_stats_zh.png", "head_stats", (1366, 768), "light", "zh", False, (1366, 768), 0),
    ("phone_zh.png", "lesson", (390, 844), "light", "zh", True, (390, 1060), 1060),
)
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
    ap.add_argument("--languages", action="store_true",
                    help="the English and Chinese, light and dark pictures "
                         "(LANGUAGE_SHOTS) into --out (default assets/screenshots)")
    args = ap.parse_args(argv)
    if args.languages:
        return language_shots(args.out or ROOT / "assets" / "screenshots", args.text)

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
    for size in dict.fromkeys(size for size, _theme, _lang in shots):
        variants = {f"{theme} · {lang}": group for (sz, theme, lang), group in shots.items()
                    if sz == size}
        print(contact_sheet(variants, out / "sheets" / f"{size}.png", size,
                            phone=int(size.split("x")[0]) < 700))
    for (size, theme, lang), group in shots.items():
        lines += [f"{size} {theme} {lang} {s.page}: {p}" for s in group for p in s.problems]
    (out / "report.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{sum(len(g) for g in shots.values())} screenshots in {out}; "
          f"{len(lines)} problems listed in {out / 'report.txt'}")
    return 0


def language_shots(out: Path, text: str) -> int:
    """LANGUAGE_SHOTS: each shot in its own window, theme and language, scaled (LANCZOS) or
    cropped to its saved size, written as an optimised PNG."""
    import tempfile

    from PIL import Image

    pages = {Path(p).stem: p for p in existing_pages()}
    with tempfile.TemporaryDirectory() as tmp:
        for name, stem, size, theme, lang, full, saved, crop in LANGUAGE_SHOTS:
            folder = Path(tmp) / Path(name).stem
            ((shot,),) = shoot([pages[stem]], folder, [size], [theme], [lang], text, flat=True,
                               full_page=full).values()
            with Image.open(shot.path) as im:
                im = im.convert("RGB")
                if crop:
                    im = im.crop((0, 0, im.width, min(crop, im.height)))
                elif im.size != saved:
                    im = im.resize(saved, Image.Resampling.LANCZOS)
                im.save(out / name, optimize=True)
            print(out / name, "" if not shot.problems else shot.problems)
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


def contact_sheet(variants: dict[str, list[Shot]], target: Path, title: str,
                  phone: bool) -> Path:
    """Every picture of one window size on one image: a row per page (PAGES_PER_ROW pages
    side by side on a phone sheet), a column per variant (theme · language), each picture
    scaled to CELL_WIDTH px and named; a picture with a problem is named in red."""
    from PIL import Image, ImageDraw, ImageFont

    cell_w = CELL_WIDTH["phone" if phone else "wide"]
    per_row = PAGES_PER_ROW["phone" if phone else "wide"]
    names = list(variants)
    pages = list(dict.fromkeys(s.page for group in variants.values() for s in group))
    found = {(v, s.page): s for v, group in variants.items() for s in group}
    thumbs: dict[tuple[str, str], Image.Image] = {}
    for key, shot in found.items():
        with Image.open(shot.path) as im:
            im = im.convert("RGB")
            thumbs[key] = im.resize((cell_w, max(1, round(im.height * cell_w / im.width))),
                                    Image.Resampling.LANCZOS)
    label_h, pad, head, gap = 20, 6, 56, 14
    cols = per_row * len(names)
    rows = [pages[i:i + per_row] for i in range(0, len(pages), per_row)]
    row_h = [max((thumbs[k].height for p in row for v in names if (k := (v, p)) in thumbs),
                 default=0) for row in rows]
    width = cols * (cell_w + pad) + (per_row - 1) * gap + pad
    sheet = Image.new("RGB", (width, head + sum(h + label_h + pad for h in row_h) + pad),
                      "#808080")
    draw = ImageDraw.Draw(sheet)
    font = ImageFont.load_default(size=13)
    draw.text((pad, 6), title, fill="#000000", font=ImageFont.load_default(size=18))
    for j in range(per_row):
        for i, name in enumerate(names):
            x = pad + j * (len(names) * (cell_w + pad) + gap) + i * (cell_w + pad)
            draw.text((x, 34), name, fill="#000000", font=font)
    y = head
    for row, h in zip(rows, row_h, strict=True):
        for j, page in enumerate(row):
            for i, name in enumerate(names):
                x = pad + j * (len(names) * (cell_w + pad) + gap) + i * (cell_w + pad)
                shot = found.get((name, page))
                if shot is None:
                    continue
                bad = bool(shot.problems)
                draw.text((x, y + 3), page + (" (!)" if bad else ""),
                          fill="#B00000" if bad else "#000000", font=font)
                sheet.paste(thumbs[(name, page)], (x, y + label_h))
        y += h + label_h + pad
    target.parent.mkdir(parents=True, exist_ok=True)
    sheet.save(target, optimize=True)
    return target

if __name__ == "__main__":
    raise SystemExit(main())
