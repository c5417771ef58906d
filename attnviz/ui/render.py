"""Drawing a view's blocks on a Streamlit page, and recording them for "Download this view
(HTML)".

A view is described outside Streamlit (attnviz.views.blocks: Heading, Markdown, Tex, Code,
Figure, Table, Metric, Numbers, and plotly Figures): functions in attnviz.views build it from
a trace and the page's choices, the HTML export writes it to files, and a page draws it here:

    ui.render(view)                          # every block of a View (or a list), in order
    ui.render(blocks, keys=("a", "b"))       # a list whose figures take the keys a and b
    ui.render(Markdown("**text**"))          # one block
    ui.render(fig, key="grid_w")             # a plotly Figure (ui.show_figure)
    ui.render(block, where=column)           # inside a column or a tab
    ui.render(Table(columns), column_config=...)   # other arguments go to st.dataframe
    ui.render(Table(columns), static=True)         # st.table
    ui.render(Metric(label, value), where=column)  # st.metric

Each block drawn is also added to the session's recorded view (ui.recorder.record), so the
page's HTML file holds exactly what was drawn, made from the same objects. Widgets are not
blocks: a page draws them with st as usual, and they are not in the file.

Figures: ui.show_figure, which `render(fig)` calls, records the figure it draws
(recorder.record_figure), so a figure is in the view once however it is drawn.
Numbers: ui.download_arrays and ui.download_csv record their own Numbers block.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import pandas
import plotly.graph_objects as go
import streamlit as st

from ..views import blocks
from . import recorder
from .downloads import download_arrays, download_csv
from .figures import show_figure

_STYLES = {"info": "info", "warning": "warning", "error": "error", "success": "success"}


def render(item, where=None, key: str | None = None, keys: Sequence[str] = (), **kwargs):
    """Draw `item` (a View, a list of blocks, one block or a plotly Figure) in `where`
    (st, a column, a tab, a container; default: the page) and record what was drawn. For a
    figure, `key` and the other arguments go to ui.show_figure; its return value is returned.
    For a Table, `key` and the other arguments go to st.dataframe (column_config...; by
    default made from the Table's formats and widths; hide_index=True unless given), or with
    static=True it is an st.table. In a list, the figures take `keys` in order."""
    where = st if where is None else where
    if isinstance(item, blocks.View):
        item = item.blocks
    if isinstance(item, list | tuple):
        figure_keys = iter(keys)
        for block in item:
            figure = isinstance(block, go.Figure | blocks.Figure)
            render(block, where, key=next(figure_keys, None) if figure else None)
        return None
    if isinstance(item, go.Figure):
        with _inside(where):
            return show_figure(item, key=key, **kwargs)
    if isinstance(item, blocks.Heading):
        if item.level <= 1:
            where.title(item.text)
        elif item.level == 2:
            where.header(item.text)
        else:
            where.subheader(item.text)
    elif isinstance(item, blocks.Markdown):
        if item.style == "caption":
            where.caption(item.text)
        elif item.style in _STYLES:
            getattr(where, _STYLES[item.style])(item.text)
        else:
            where.markdown(item.text)
    elif isinstance(item, blocks.Tex):
        where.latex(item.source)
    elif isinstance(item, blocks.Code):
        where.code(item.text, language=None)
    elif isinstance(item, blocks.Metric):
        where.metric(item.label, item.value, help=item.help or None)
    elif isinstance(item, blocks.Table):
        if "column_config" not in kwargs and (item.formats or item.widths):
            kwargs["column_config"] = column_config(item)
        static = kwargs.pop("static", False)
        if getattr(item, "phone_by_column", False) and len(item.columns) > 2:
            _by_column(item.columns, where, kwargs)
        elif static:
            where.table(pandas.DataFrame(item.columns))
        else:
            kwargs.setdefault("hide_index", True)
            where.dataframe(pandas.DataFrame(item.columns), key=key, **kwargs)
    elif isinstance(item, blocks.Figure):
        return render(go.Figure(json.loads(item.spec)), where, key, **kwargs)
    elif isinstance(item, blocks.Numbers):
        with _inside(where):
            offer = download_arrays if item.kind == "npz" else download_csv
            offer(item.label, item.make() if item.kind == "csv" else item.make,
                  item.file_name, key=key)
        return None  # the download records its own Numbers block
    else:
        raise TypeError(f"cannot render {type(item).__name__}")
    recorder.record(item)
    return None


def column_config(table: blocks.Table) -> dict:
    """st.dataframe's column_config from a Table's formats and widths."""
    out = {}
    for name in dict.fromkeys([*table.formats, *table.widths]):
        width = table.widths.get(name)
        out[name] = (st.column_config.NumberColumn(format=table.formats[name], width=width)
                     if name in table.formats else st.column_config.TextColumn(width=width))
    return out


# A table shown one column at a time on a phone: the whole table in one container, the
# columns in another, and a screen's width (the page's phone width, 640 px) shows one of them
# (ui.style's "phone", on every page).


def _by_column(columns: dict, where, kwargs: dict) -> None:
    """The table whole (a laptop) and, for a phone, each column after the first in a table of
    its own beside the first column (the rows' names): no column off the screen's edge."""
    headers = list(columns)
    name = hashlib.sha1(json.dumps([headers, [str(v) for v in columns[headers[0]]]],
                                   ensure_ascii=False).encode()).hexdigest()[:12]
    config = dict(kwargs.pop("column_config", None) or {})
    box = where.container(key=f"attnviz_table_columns_{name}")
    for header in headers[1:]:
        box.dataframe(pandas.DataFrame({headers[0]: columns[headers[0]], header: columns[header]}),
                      hide_index=True, column_config={
                          k: v for k, v in config.items() if k in (headers[0], header)} or None,
                      **kwargs)
    # the whole table last: the page's last table, as it is where no phone can see it
    where.container(key=f"attnviz_table_whole_{name}").dataframe(
        pandas.DataFrame(columns), hide_index=True, column_config=config or None, **kwargs)


class _inside:
    """`with where:` for a column, tab or container; nothing for st itself."""

    def __init__(self, where):
        self.where = where

    def __enter__(self):
        if self.where is not st:
            self.where.__enter__()

    def __exit__(self, *exc):
        if self.where is not st:
            return self.where.__exit__(*exc)
        return False
