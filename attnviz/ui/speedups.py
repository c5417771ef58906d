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
  figure into JSON text on every rerun (`plotly.io.to_json`, ~3%). A figure of the figure
  cache never changes (ui.figures.frozen), so its JSON is made once, with Plotly's own
  `to_json`, and kept with its dict (`FrozenDict.json`); `to_json_once()` makes
  `plotly.io.to_json` answer with it when it is asked for exactly what made it (that dict,
  no validation, no indentation, uids removed, the default engine: st.plotly_chart's call),
  and asks Plotly for everything else.

Both are installed once per process and can be undone (`undo`, for tests); neither changes a
byte that reaches the browser (tests/test_speedups.py).
"""

from __future__ import annotations

import functools
import threading

_lock = threading.Lock()
_undo: dict[str, tuple[object, str, object]] = {}  # name -> (module, attribute, original)


class FrozenDict(dict):
    """A cached figure's `to_dict()`, with the JSON `st.plotly_chart` sends for it (`json`,
    made by ui.figures.frozen with Plotly's own to_json)."""

    __slots__ = ("json",)


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


def to_json_once() -> None:
    """plotly.io.to_json answers a FrozenDict with the JSON kept in it."""
    import plotly.io as pio

    with _lock:
        if "to_json" in _undo:
            return
        original = pio.to_json

        @functools.wraps(original)
        def to_json(fig, validate=True, pretty=False, remove_uids=True, engine=None):
            if (type(fig) is FrozenDict and not validate and not pretty and remove_uids
                    and engine is None):
                return fig.json
            return original(fig, validate=validate, pretty=pretty, remove_uids=remove_uids,
                            engine=engine)

        pio.to_json = to_json
        _undo["to_json"] = (pio, "to_json", original)


def plotly_to_json():
    """Plotly's own to_json, whether or not `to_json_once` is installed."""
    import plotly.io as pio

    found = _undo.get("to_json")
    return found[2] if found is not None else pio.to_json


def install() -> None:
    theme_once()
    to_json_once()


def undo() -> None:
    with _lock:
        for module, name, original in _undo.values():
            setattr(module, name, original)
        _undo.clear()
