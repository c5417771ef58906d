"""The blocks a view is made of, and the View itself (after bertviz: a view takes data, it
does not run models or draw widgets).

A view is a list of blocks: Heading, Markdown, Tex, Code, Figure, Table, Metric, Numbers (a
plotly Figure may stand for a Figure block), in the order shown. The modules of
attnviz.views make them; three renderers take the same list:

    ui.render(blocks)                      a Streamlit page (pages/*.py)
    export.html.page_html(View(...))       one self-contained HTML file ("Download this view")
    export.html.write_site(out, views)     the lesson pack (attnviz.export.site)

Plain values only: no Streamlit, no HTML here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Heading:
    """A title or heading; `text` is inline Markdown (as st.title/st.header take it).
    `level`: 1 the page's title (st.title), 2 a header, 3 a subheader; written one level
    below the file's own <h1> (the view's title): <h2>, <h3>, <h4>."""

    text: str
    level: int = 2


@dataclass(frozen=True)
class Markdown:
    """Markdown text; `style` is "" (body), "caption", "info", "warning", "error" or "success"."""

    text: str
    style: str = ""


@dataclass(frozen=True)
class Tex:
    """A displayed formula, shown as its TeX source (no math renderer is loaded offline)."""

    source: str


@dataclass(frozen=True)
class Code:
    text: str


@dataclass(frozen=True)
class Figure:
    """A Plotly figure as its JSON (plotly.io.to_json: {"data": [...], "layout": {...}}).

    `app_template`: the spec carries Streamlit's theme template, whose placeholder colours
    only Streamlit's frontend fills in: it is left out (plotly.js's defaults apply)."""

    spec: str
    config: dict = field(default_factory=dict)
    app_template: bool = False


@dataclass(frozen=True)
class Table:
    """Equal-length columns {header: values}. On a page, `formats` gives a column's number
    format ({header: "%.4f"}) and `widths` its width ({header: "small" | "medium" |
    "large"}); a file shows every number with 6 significant digits."""

    columns: dict
    formats: dict = field(default_factory=dict)
    widths: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Metric:
    """One number with its label (st.metric on a page), written as a one-cell table."""

    label: str
    value: str
    help: str = ""


@dataclass(frozen=True)
class Numbers:
    """A page's numbers: named arrays (an .npz) or equal-length columns (a .csv); `make`
    returns the dict and is called only when the file is written."""

    label: str
    make: Callable[[], dict]
    file_name: str
    kind: str = "npz"  # "npz" | "csv"


Block = Heading | Markdown | Tex | Code | Figure | Table | Metric | Numbers


@dataclass
class View:
    """One page of the export: a title, a line of settings, the blocks in the order shown."""

    title: str
    blocks: list = field(default_factory=list)
    settings: dict = field(default_factory=dict)  # shown as "name: value" (e.g. sentence)
    slug: str = "view"  # the site's file name (letters, digits, '-')


