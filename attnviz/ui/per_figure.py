"""Values read out of a plotly figure, kept once per figure object (ui.figures' summaries,
the figure's JSON: ui.live_chart sends it, ui.cache sizes the figure by it)."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable

import cachetools
import plotly.graph_objects as go
import plotly.io as pio

from ..i18n import language


class PerFigure:
    """Values read out of a figure, kept once per figure object and language: a figure of the
    figure cache is the same object on every rerun of every session, and reading it again
    (plotly's property objects, plotting.summary) would cost as much on every rerun.

    Held in a cachetools.LRUCache bounded by `max_size` (a count, or bytes with `size`), the
    least recently used dropped first; an entry also goes when its figure does. The key is the
    figure's identity (a weak reference checked on every read), which a library cache keyed by
    value cannot use: a plotly figure compares by content and is not hashable."""

    def __init__(self, max_size: int = 4096,
                 size: Callable[[object], int] = lambda value: 1) -> None:
        self._items: cachetools.LRUCache = cachetools.LRUCache(
            max_size, getsizeof=lambda item: min(size(item[1]), max_size))
        self._lock = threading.Lock()  # cachetools' caches are not thread-safe

    def get(self, fig: go.Figure, read: Callable[[go.Figure], object]):
        key = (id(fig), language())
        with self._lock:
            found = self._items.get(key)
        if found is not None and found[0]() is fig:
            return found[1]
        value = read(fig)

        def forget(ref, key=key) -> None:
            with self._lock:
                if self._items.get(key, (None,))[0] is ref:
                    del self._items[key]

        with self._lock:
            self._items[key] = (weakref.ref(fig, forget), value)
        return value

    def __contains__(self, fig_id: int) -> bool:
        with self._lock:
            return any(k[0] == fig_id for k in self._items)


JSON_BYTES = 256 * 2**20  # the figures' JSON kept (a figure's is made again once dropped)
_JSON = PerFigure(JSON_BYTES, size=lambda value: len(value[0]))


def figure_json(fig: go.Figure) -> tuple[bytes, int]:
    """The figure's JSON as UTF-8 (plotly.io.to_json without validation, as st.plotly_chart
    sends a figure) and its number of panels, made once per figure object (kept while it
    lives, up to JSON_BYTES of JSON in all): a figure of the figure cache
    (ui.figures.cached_figure) is the same read-only object on every rerun of every session, so
    a rerun that draws it again sends the bytes made the first time.

    The panels are the x axes its traces are drawn on: a heads grid drawn as one heatmap of
    blocks (plotting.common) counts as one, a figure of three side-by-side subplots as three."""
    return _JSON.get(fig, lambda f: (pio.to_json(f, validate=False).encode(), _panels(f)))


def _panels(fig: go.Figure) -> int:
    return max(1, len({getattr(trace, "xaxis", None) or "x" for trace in fig.data}))
