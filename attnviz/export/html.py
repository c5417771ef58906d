"""A view of the app as HTML that needs no server and no network: figures (Plotly, with their
hover), the explanatory text, tables and the numbers behind them.

A view is a list of blocks (attnviz.views.blocks: Heading, Markdown, Tex, Code, Figure,
Table, Metric, Numbers; a plotly Figure may stand for a Figure block): attnviz.views makes
them, a Streamlit page draws them (ui.render) and this module writes them. Two ways to write it:

    page_html(view)                        one self-contained file: plotly.js inside it once,
                                           the numbers as data: links (the app's per-page
                                           "Download this view (HTML)")
    write_site(out_dir, views)             a static site: index.html, one page per view,
                                           plotly.min.js written ONCE beside them (pages load
                                           it by a relative path), numbers as .npz/.csv files

Plotly's JavaScript comes from the installed plotly package (never a CDN URL). Everything a
user typed is escaped: headings and table cells with html.escape, Markdown rendered by
markdown-it with raw HTML off (so `<script>` shows as text), TeX shown as its source, figure
JSON with `<`, `>` and `&` written as JSON escapes so it cannot close its <script> element.
Shown text loses its control characters (NUL and the like: `shown_text`), and a direction
override it leaves open is closed where its line ends, so it cannot turn the text after it
around; titles and settings sit in <bdi> (their direction isolated).

write_site writes only into a new folder, an empty one, or one it wrote before (it leaves a
PACK_MARK file there), unless asked to replace; each file is written beside its name and
renamed over it, so a link in the folder is replaced, never written through.
No Streamlit here: the app and the command line both call these functions.
"""

from __future__ import annotations

import base64
import html
import io
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from .. import i18n
from ..i18n import _
from ..views.blocks import (  # noqa: F401 - the blocks, named here too for export's readers
    Block,
    Code,
    Figure,
    Heading,
    Markdown,
    Metric,
    Numbers,
    Table,
    Tex,
    View,
)

INLINE = "inline"  # page_html's script_src: embed plotly.js in the page
MAX_TABLE_ROWS = 200  # a table longer than this shows its first rows (the file has them all)
MAX_ARRAY_CELLS = 400  # arrays up to this many values (1-D or 2-D) are also shown as tables
MAX_EMBEDDED_BYTES = 32 << 20  # numbers larger than this are not inlined as a data: link


PACK_MARK = ".attnviz-pack"  # the file write_site leaves in a folder it fills

# C0 controls but tab and newline, DEL, C1 controls: never shown, never written
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# the same characters as JSON escapes them (after an even number of backslashes)
_JSON_CONTROL = re.compile(r"(?<!\\)((?:\\\\)*)\\u00"
                           r"(?:0[0-8b-fB-F]|1[0-9a-fA-F]|7[fF]|[89][0-9a-fA-F])")
_OPENERS = {"\u202a": "\u202c", "\u202b": "\u202c", "\u202d": "\u202c", "\u202e": "\u202c",
            "\u2066": "\u2069", "\u2067": "\u2069", "\u2068": "\u2069"}


def _close_directions(line: str) -> str:
    """`line` with every embedding, override or isolate it opens and leaves open closed at its
    end (PDF U+202C, PDI U+2069), as the Unicode bidirectional algorithm pairs them."""
    if not any(c in line for c in _OPENERS):
        return line
    stack: list[str] = []
    for c in line:
        if c in _OPENERS:
            stack.append(c)
        elif c == "\u202c" and stack and _OPENERS[stack[-1]] == "\u202c":
            stack.pop()
        elif c == "\u2069" and "\u2069" in (_OPENERS[o] for o in stack):
            while stack and _OPENERS[stack.pop()] != "\u2069":
                pass
    return line + "".join(_OPENERS[o] for o in reversed(stack))


def shown_text(text: str) -> str:
    """Text as a page shows it: no control characters (NUL, escape, DEL...; tab and newline
    stay, a carriage return goes), and on each line the directions it opens closed."""
    return "\n".join(_close_directions(line) for line in _CONTROL.sub("", str(text)).split("\n"))


def _bdi(text: str) -> str:
    """Shown text, escaped, its direction isolated from what surrounds it."""
    return f"<bdi>{html.escape(shown_text(text))}</bdi>"


# ------------------------------------------------------------------ plotly.js
def plotly_js_path() -> Path:
    """plotly.min.js shipped inside the installed plotly package."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():  # pragma: no cover - a broken plotly install
        raise FileNotFoundError(f"plotly.min.js not found in {path.parent}")
    return path


def plotly_js() -> str:
    return plotly_js_path().read_text(encoding="utf-8")


# A figure's toolbar, in the app (ui.figures.PLOT_CONFIG) and in a file: PNG, shown on hover
FIGURE_CONFIG = {"displayModeBar": "hover", "displaylogo": False,
                 "toImageButtonOptions": {"format": "png", "scale": 2},
                 "modeBarButtonsToAdd": ["toImage"]}


def figure_spec(fig) -> str:
    """A plotly Figure as the JSON a Figure block carries."""
    import plotly.io as pio

    return pio.to_json(fig, validate=False)


def figure_block(fig) -> Figure:
    """A plotly Figure as a Figure block: its JSON without its template (the app's theme, or
    plotly's default where no app runs: plotly.js's defaults apply in the file either way),
    with the app's toolbar."""
    return Figure(figure_spec(fig), dict(FIGURE_CONFIG), app_template=True)


# ------------------------------------------------------------------ numbers
def npz_bytes(arrays: dict) -> bytes:
    """Named arrays (and token lists) as the bytes of one compressed .npz file."""
    buf = io.BytesIO()
    np.savez_compressed(buf, **{k: np.asarray(v) for k, v in arrays.items()})
    return buf.getvalue()


def csv_text(columns: dict) -> str:
    """Equal-length columns {name: values} as CSV text with a header row (numbers in %.6g)."""
    names = list(columns)
    fmt = lambda v: f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)  # noqa: E731
    rows = zip(*(columns[n] for n in names), strict=True)
    text = "\n".join([",".join(names), *(",".join(fmt(v) for v in row) for row in rows)]) + "\n"
    return _CONTROL.sub("", text)


# ------------------------------------------------------------------ text
def _math_rule(state, silent: bool) -> bool:
    """Inline `$...$` and `$$...$$`: kept as TeX source (an unescaped '$' opens it)."""
    src, pos = state.src, state.pos
    if src[pos] != "$":
        return False
    delim = "$$" if src.startswith("$$", pos) else "$"
    start = pos + len(delim)
    end = src.find(delim, start)
    while end != -1 and src[end - 1] == "\\":
        end = src.find(delim, end + 1)
    if end == -1 or end == start:
        return False
    if not silent:
        token = state.push("math_inline", "", 0)
        token.content = src[start:end]
        token.markup = delim
    state.pos = end + len(delim)
    return True


def _markdown():
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")
    md.inline.ruler.before("escape", "math", _math_rule)
    md.add_render_rule("math_inline", lambda self, tokens, idx, options, env: (
        f'<span class="tex">{html.escape(tokens[idx].content)}</span>'))
    return md


_MD = None


_ICON = re.compile(r"(?<![\\\w]):material/[a-z_]+:")  # Streamlit's icon shortcodes


def markdown_html(text: str, inline: bool = False) -> str:
    """Markdown as HTML with raw HTML shown as text (markdown-it, html off; links only to
    the safe schemes markdown-it allows). Streamlit's `:material/name:` icons are left out."""
    global _MD
    if _MD is None:
        _MD = _markdown()
    text = shown_text(_ICON.sub("", text))
    return _MD.renderInline(text) if inline else _MD.render(text)


def _cell(value) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{value:.6g}"
    return shown_text(str(value))


def slug(text: str) -> str:
    """Letters, digits and '-' from `text` (lower case), for a file name."""
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:60] or "view"


# ------------------------------------------------------------------ one block
def _table_html(columns: dict, note: str = "") -> str:
    names = list(columns)
    values = [list(np.asarray(columns[n]).tolist()) if isinstance(columns[n], np.ndarray)
              else list(columns[n]) for n in names]
    rows = max((len(v) for v in values), default=0)
    shown = min(rows, MAX_TABLE_ROWS)
    head = "".join(f"<th>{html.escape(shown_text(n))}</th>" for n in names)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(_cell(v[r]) if r < len(v) else '')}</td>"
                         for v in values) + "</tr>" for r in range(shown))
    more = ('<p class="caption">' + _("First {shown} of {rows} rows{note}.").format(
        shown=shown, rows=rows, note=note) + "</p>" if shown < rows else "")
    return f'<div class="table"><table><tr>{head}</tr>{body}</table>{more}</div>'


def _array_tables(arrays: dict) -> str:
    """Small 1-D/2-D arrays as tables; every array's name, shape and dtype in a list."""
    out, items = [], []
    for name, value in arrays.items():
        a = np.asarray(value)
        items.append(f"<li><code>{html.escape(str(name))}</code> "
                     f"{html.escape(str(a.dtype))} {html.escape(str(tuple(a.shape)))}</li>")
        if a.size and a.size <= MAX_ARRAY_CELLS and a.ndim in (1, 2):
            cols = ({str(name): a} if a.ndim == 1 else
                    {f"{name}[:, {j}]": a[:, j] for j in range(a.shape[1])})
            out.append(_table_html(cols))
    return f'<ul class="arrays">{"".join(items)}</ul>' + "".join(out)


class _Writer:
    """Renders blocks; `files` collects the numbers' files a site writes beside its page."""

    def __init__(self, embed_numbers: bool, stem: str):
        self.embed = embed_numbers
        self.stem = stem
        self.files: dict[str, bytes] = {}
        self.figures = 0

    def block(self, b) -> str:
        if isinstance(b, Heading):
            level = min(max(int(b.level), 1), 3) + 1  # the view's title is the <h1>
            return f"<h{level}>{markdown_html(b.text, inline=True)}</h{level}>"
        if isinstance(b, Markdown):
            body = markdown_html(b.text)
            return f'<div class="{b.style or "text"}">{body}</div>' if b.style else body
        if isinstance(b, Tex):
            return f'<pre class="tex">{html.escape(shown_text(b.source))}</pre>'
        if isinstance(b, Code):
            return f"<pre><code>{html.escape(shown_text(b.text))}</code></pre>"
        if isinstance(b, Figure):
            self.figures += 1
            config = {**b.config, "displaylogo": False, "responsive": True}
            spec = b.spec
            if b.app_template:
                fig = json.loads(spec)
                fig.get("layout", {}).pop("template", None)
                spec = json.dumps(fig)
            payload = f'{{"figure": {spec}, "config": {json.dumps(config)}}}'
            payload = _JSON_CONTROL.sub(r"\1", _CONTROL.sub("", payload))
            payload = (payload.replace("&", "\\u0026").replace("<", "\\u003c")
                       .replace(">", "\\u003e"))
            return f'<script type="application/json" class="attnviz-figure">{payload}</script>'
        if isinstance(b, Table):
            return _table_html(b.columns)
        if isinstance(b, Metric):
            return _table_html({b.label: [b.value]})
        if isinstance(b, Numbers):
            return self.numbers(b)
        if hasattr(b, "to_plotly_json"):  # a plotly Figure
            return self.block(figure_block(b))
        raise TypeError(f"not a block: {type(b).__name__}")

    def numbers(self, b: Numbers) -> str:
        try:
            data = b.make()
        except Exception as err:  # noqa: BLE001 - a view is still written without them
            return ('<p class="warning">' + html.escape(_("{label}: not available ({error}).")
                    .format(label=b.label, error=type(err).__name__)) + "</p>")
        payload = (npz_bytes(data) if b.kind == "npz" else csv_text(data).encode())
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", b.file_name) or f"numbers.{b.kind}"
        shown = _array_tables(data) if b.kind == "npz" else _table_html(data)
        label = html.escape(b.label.replace("(.npz)", "").replace("(.csv)", "").strip())
        if not self.embed:
            name = f"{self.stem}_{name}"
            self.files[name] = payload
            link = f'<a href="{html.escape(name)}" download>{html.escape(name)}</a>'
        elif len(payload) <= MAX_EMBEDDED_BYTES:
            mime = "application/octet-stream" if b.kind == "npz" else "text/csv"
            href = f"data:{mime};base64,{base64.b64encode(payload).decode()}"
            link = f'<a href="{href}" download="{html.escape(name)}">{html.escape(name)}</a>'
        else:
            link = html.escape(_("{name} ({mib} MiB: too large to embed; download it from "
                                 "the app)").format(name=name, mib=len(payload) >> 20))
        return (f'<div class="numbers"><p><b>{label}</b>: {link} '
                + _("({n} bytes)").format(n=f"{len(payload):,}") + f"</p>{shown}</div>")


# ------------------------------------------------------------------ pages
# The page's style and the script that draws its figures: files of their own (export/page/).
PAGE = Path(__file__).parent / "page"
STYLE = (PAGE / "page.css").read_text(encoding="utf-8")
DRAW = (PAGE / "page.js").read_text(encoding="utf-8")


def footer_text() -> str:
    """The line under every exported page, in the current language."""
    return _("Exported by attnviz: opens without a server or a network. Figures keep their "
             "hover; their toolbar saves a PNG.")


def _settings_html(settings: dict) -> str:
    if not settings:
        return ""
    items = " · ".join(f"{html.escape(shown_text(k))}: <span>{_bdi(v)}</span>"
                       for k, v in settings.items())
    return f'<p class="settings">{items}</p>'


def page_html(view: View, script_src: str = INLINE, nav: str = "",
              files: dict[str, bytes] | None = None) -> str:
    """The view as one HTML document.

    script_src=INLINE embeds plotly.js once and the numbers as data: links (one file);
    otherwise it is the relative path of plotly.min.js and the numbers' files are added to
    `files` ({file name: bytes}) for the caller to write beside the page.
    """
    embed = script_src == INLINE
    w = _Writer(embed_numbers=embed, stem=view.slug)
    body = "\n".join(w.block(b) for b in view.blocks)
    if files is not None:
        files.update(w.files)
    if embed:  # plotly.min.js holds no "</script" (checked by the tests)
        script = f"<script>{plotly_js()}</script>"
    else:
        script = f'<script src="{html.escape(script_src)}"></script>'
    title = html.escape(shown_text(view.title).replace("\n", " "))
    lang = "zh-Hans" if i18n.language() == "zh" else i18n.language()
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{title} · attnviz</title>\n<style>{STYLE}</style>\n{script}\n</head>\n"
            f"<body>\n{nav}\n<h1><bdi>{title}</bdi></h1>\n{_settings_html(view.settings)}\n{body}\n"
            f"<footer>{html.escape(footer_text())}</footer>\n"
            f"<script>{DRAW}</script>\n</body></html>\n")


def _nav(views: Sequence[View], i: int) -> str:
    links = [f'<a href="index.html">{html.escape(_("Contents"))}</a>']
    if i > 0:
        links.append(f'<a href="{views[i - 1].slug}.html">◀ {_bdi(views[i - 1].title)}</a>')
    if i + 1 < len(views):
        links.append(f'<a href="{views[i + 1].slug}.html">{_bdi(views[i + 1].title)} ▶</a>')
    return "<nav>" + "".join(links) + "</nav>"


def unique_slugs(views: Iterable[View]) -> None:
    """Give each view a distinct file-safe slug (from its title when it has none)."""
    seen: set[str] = set()
    for v in views:
        base = slug(v.slug if v.slug != "view" else v.title)
        name, n = base, 2
        while name in seen or name == "index":
            name, n = f"{base}-{n}", n + 1
        seen.add(name)
        v.slug = name


def check_out_dir(out_dir: Path | str, replace: bool = False) -> Path:
    """The folder a site may be written to, else ValueError saying why: a name that is not
    empty, not a link, not a file; new, empty, written by write_site before (PACK_MARK), or
    `replace` given (its files of the site's names are then replaced, others kept)."""
    text = str(out_dir)
    if not text.strip():
        raise ValueError("the output folder's name is empty")
    out = Path(text).expanduser()
    if out.is_symlink():
        raise ValueError(f"{out} is a link: attnviz does not write through links (name the "
                         "folder itself)")
    if out.exists():
        if not out.is_dir():
            raise ValueError(f"{out} is a file, not a folder")
        mark = out / PACK_MARK
        ours = mark.is_file() and not mark.is_symlink()
        if not (ours or replace) and any(out.iterdir()):
            raise ValueError(f"{out} holds files attnviz did not write: name a new or empty "
                             "folder, or pass --replace to write over them")
    return out


def write_file(path: Path, data: bytes) -> Path:
    """`data` written beside `path` and renamed over it: a link at `path` is replaced, never
    written through (nor is anything else the name pointed to)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(tmp, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_site(out_dir: Path | str, views: Sequence[View], title: str,
               intro: Sequence[str] = (), settings: dict | None = None,
               replace: bool = False) -> list[Path]:
    """index.html, one page per view and plotly.min.js (once) in `out_dir`; the paths written.

    `intro`: Markdown paragraphs on the index page (escaped like any Markdown here).
    `out_dir` is checked first (check_out_dir; `replace`: write over a folder's files).
    """
    out = check_out_dir(out_dir, replace)
    out.mkdir(parents=True, exist_ok=True)
    mark = write_file(out / PACK_MARK, b"written by attnviz (python -m attnviz html)\n")
    unique_slugs(views)
    written = [write_file(out / "plotly.min.js", plotly_js_path().read_bytes())]
    for i, v in enumerate(views):
        files: dict[str, bytes] = {}
        page = page_html(v, "plotly.min.js", _nav(views, i), files)
        written.append(write_file(out / f"{v.slug}.html", page.encode("utf-8")))
        for name, data in files.items():
            written.append(write_file(out / name, data))
    items = "".join(f'<li><a href="{v.slug}.html">{_bdi(v.title)}</a></li>' for v in views)
    index = View(title, [Markdown(p) for p in intro], settings or {}, "index")
    doc = page_html(index, "plotly.min.js").replace(
        "<footer>", f'<ol class="contents">{items}</ol>\n<footer>', 1)
    write_file(out / "index.html", doc.encode("utf-8"))
    return [out / "index.html", *written, mark]
