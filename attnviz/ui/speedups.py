"""Per-rerun work of Streamlit and Plotly that gives the same answer every time, done once.

A GIL profile of a class of 120 on two workers (README, *Speed*, sixteenth stop) found two such
costs outside attnviz's own code:

- **The theme, read again for every rerun.** Every full rerun begins with a `new_session`
  message, and Streamlit fills its theme by calling `config.get_options_for_section` six times
  ("theme", "theme.light", "theme.dark" and their sidebars), each a scan of all ~200 config
  options: ~3% of a worker's GIL time. The theme cannot change while a server runs (theme
  options are not settable from a script, and this app watches no files), so `theme_once()`
  keeps each theme section's answer until an option is set (`config._set_option`, which
  every setting goes through) or the options are parsed again (a new table). Other sections
  are read as before. Each call gets its own copy.
- **A cached figure's JSON, made again for every chart drawn.** `st.plotly_chart` turns the
  figure into a dict (`to_dict`, a deep copy with every array base64-encoded) and that into
  JSON text (`plotly.io.to_json`, ~3%) on every rerun. A figure of the figure cache never
  changes (ui.figures.frozen), so its JSON is made once, with Plotly's own functions, and kept
  on the figure in a `ChartStandIn`: a stand-in for its dict that holds only the layout's width
  and height (which Streamlit reads for the chart's size) and the JSON (`json`).
  `charts_once()` makes `plotly.tools.return_figure_from_figure_or_data` hand that stand-in
  to st.plotly_chart's exact call, and `plotly.io.to_json` answer it with its JSON when asked
  for exactly what made it (no validation, no indentation, uids removed, the default
  engine: st.plotly_chart's call). Every other call gets Plotly's own answer. Only figures
  whose JSON is at most ui.figures.KEEP_JSON_MAX characters keep it, and not their dict too:
  with every figure's JSON kept (its dict too or not), a class pasting long text kept
  100-270 MiB more after closing (README, *Speed*, seventeenth stop); a bigger figure keeps
  its dict as before.

Both are installed once per process and can be undone (`undo`, for tests); neither changes a
byte that reaches the browser (tests/test_speedups.py).
"""

from __future__ import annotations

import functools
import threading

_lock = threading.Lock()
_undo: dict[str, tuple[object, str, object]] = {}  # name -> (module, attribute, original)


WIRE = "_attnviz_wire"  # a frozen figure's attribute: its ChartStandIn


class ChartStandIn(dict):
    """What st.plotly_chart gets for a cached figure in place of its to_dict(): the layout's
    width and height, and the figure's whole JSON as st.plotly_chart sends it (`json`, made
    by ui.figures.frozen with Plotly's own to_json). Never handed to anything else."""

    __slots__ = ("json",)


def wire(fig) -> ChartStandIn | None:
    """A frozen figure's ChartStandIn (ui.figures.frozen); None for anything else."""
    found = getattr(fig, "__dict__", None)
    return found.get(WIRE) if found is not None else None


def chart_json(fig) -> str:
    """The figure's JSON as st.plotly_chart sends it (plotly.io.to_json, no validation): kept
    for a frozen figure, made by Plotly for any other."""
    found = wire(fig)
    return found.json if found is not None else plotly_to_json()(fig, validate=False)


def theme_once() -> None:
    """streamlit.config.get_options_for_section keeps its answers for the theme's sections."""
    from streamlit import config

    with _lock:
        if "theme" in _undo:
            return
        original = config.get_options_for_section
        kept: dict[str, tuple[object, dict]] = {}

        @functools.wraps(original)
        def get_options_for_section(section: str) -> dict:
            if not section.startswith("theme"):
                return original(section)
            table = config._config_options  # None until parsed; a re-parse makes a new one
            found = kept.get(section)
            if table is None or found is None or found[0] is not table:
                answer = original(section)
                table = config._config_options
                if table is None:
                    return answer
                found = kept[section] = (table, answer)
            return dict(found[1])

        setter = config._set_option  # every way an option is set goes through it

        @functools.wraps(setter)
        def _set_option(*args, **kwargs):
            kept.clear()
            try:
                return setter(*args, **kwargs)
            finally:  # and again: a theme read while the value was being set is not kept
                kept.clear()

        config.get_options_for_section = get_options_for_section
        config._set_option = _set_option
        _undo["theme"] = (config, "get_options_for_section", original)
        _undo["theme setter"] = (config, "_set_option", setter)


def charts_once() -> None:
    """st.plotly_chart gets a frozen figure's ChartStandIn and plotly.io.to_json its JSON."""
    import plotly.io as pio
    import plotly.tools as tools

    with _lock:
        if "to_json" in _undo:
            return
        original = pio.to_json

        @functools.wraps(original)
        def to_json(fig, validate=True, pretty=False, remove_uids=True, engine=None):
            if (type(fig) is ChartStandIn and not validate and not pretty and remove_uids
                    and engine is None):
                return fig.json
            return original(fig, validate=validate, pretty=pretty, remove_uids=remove_uids,
                            engine=engine)

        as_figure = tools.return_figure_from_figure_or_data

        @functools.wraps(as_figure)
        def return_figure_from_figure_or_data(figure_or_data, *args, **kwargs):
            if not args and kwargs == {"validate_figure": True}:  # st.plotly_chart's call
                found = wire(figure_or_data)
                if found is not None:
                    return found
            return as_figure(figure_or_data, *args, **kwargs)

        pio.to_json = to_json
        tools.return_figure_from_figure_or_data = return_figure_from_figure_or_data
        _undo["to_json"] = (pio, "to_json", original)
        _undo["as_figure"] = (tools, "return_figure_from_figure_or_data", as_figure)


def plotly_to_json():
    """Plotly's own to_json, whether or not `charts_once` is installed."""
    import plotly.io as pio

    found = _undo.get("to_json")
    return found[2] if found is not None else pio.to_json


def install() -> None:
    theme_once()
    charts_once()


def undo() -> None:
    with _lock:
        for module, name, original in _undo.values():
            setattr(module, name, original)
        _undo.clear()
