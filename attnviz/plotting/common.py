"""Helpers every figure uses: safe token labels and the shared colour scales.

Two traps handled here once for the whole project:
- Plotly merges repeated categories ("I saw a saw" would show 3 columns, not 4), so axes
  use one unique label per position ('saw #2', 'saw #4'); as tick text a repeated token
  keeps that label, a token seen once shows bare.
- Plotly renders <b>, <br>, <a> in labels, so every token is HTML-escaped and shows as typed.

Every figure is made by `figure()` (below), which skips plotly's property validation unless
ATTNVIZ_VALIDATE_FIGURES=1 (the tests set it).
"""

from __future__ import annotations

import copy
import functools
import html
import inspect
import json
import os
import re

import numpy as np

from attnviz.engine.trace import token_labels

# Colour scales are perceptually uniform (equal steps in value look like equal steps in
# lightness), so a pattern in a heatmap is in the numbers, not in the scale.
SCORES_SCALE = "Balance"  # diverging (cmocean): q.k negative blue, positive red, 0 near white
VALUES_SCALE = "PuOr"  # diverging (ColorBrewer, colour-blind safe), distinct from the scores
WEIGHTS_SCALE = "Viridis"  # sequential: softmax weights lie in [0, 1]
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13)

# The one categorical palette (token lines, heads, taggers, modes, behaviours): Okabe & Ito's
# colour-blind safe set (Okabe and Ito 2008, "Color Universal Design"), its black left out so
# every colour reads on a light and on a dark background. Anything that tells categories
# apart by colour also tells them apart by a line dash, a marker or a label (DASHES, MARKERS).
OKABE_ITO: tuple[str, ...] = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#D55E00",  # vermillion
    "#56B4E9",  # sky blue
    "#CC79A7",  # reddish purple
    "#F0E442",  # yellow
)
NEUTRAL = "#999999"  # grey: "other", "mixed", a baseline; readable on white and on dark grey
DASHES: tuple[str, ...] = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
PATTERNS: tuple[str, ...] = ("", "/", ".", "x", "-", "+")  # bar fills, a cue besides colour
MARKERS: tuple[str, ...] = ("circle", "square", "diamond", "triangle-up", "x", "cross",
                            "star")


# The other fixed colours of the figures, here so that no plotting module invents its own.
ON_IMAGE = "#FFFFFF"  # outlines drawn over a picture or a dark heatmap
IMAGE_BACKGROUND = "#D9D9D9"  # behind pictures and masked cells, in both themes
CELL_TEXT = "#1A1A1A"  # text on the pale table fills below, whatever the theme's text colour
TABLE_FILLS = {  # pale tints: right = the palette's blue, wrong = its orange (plus bold text)
    "right": "#CDE4F4", "wrong": "#F9D9B0", "neutral": "#EEF1F6", "header": "#DDE3EE"}
MASK_SCALE = [[0.0, "#EEF1F6"], [0.5, "#EEF1F6"], [0.5, OKABE_ITO[0]], [1.0, OKABE_ITO[0]]]
ACCURACY_SCALE = "Blues"  # sequential (ColorBrewer) for shares in percent
ORDERED_SHADES = ("#FDD0A2", "#FD8D3C", "#D94801", "#7F2704")  # an ordered series (Oranges)
INFLUENCE_SCALE = "Magma"  # sequential, perceptually uniform (log influence)
DISTANCE_SCALE = "Magma_r"  # sequential: 0 (no change) light, large distances dark
STAT_SCALE = "Cividis"  # sequential, perceptually uniform and colour-blind safe


def category_colour(i: int) -> str:
    """The i-th categorical colour (cycling through OKABE_ITO)."""
    return OKABE_ITO[int(i) % len(OKABE_ITO)]


def category_dash(i: int) -> str:
    """The i-th line dash: with category_colour(i), a second cue besides colour."""
    return DASHES[int(i) % len(DASHES)]


def category_marker(i: int) -> str:
    """The i-th marker symbol: with category_colour(i), a second cue besides colour."""
    return MARKERS[int(i) % len(MARKERS)]


def escape(text: str) -> str:
    """Token text as Plotly must receive it to show it literally."""
    return html.escape(str(text), quote=False).replace("\n", "\\n")


def axis_labels(tokens: list[str], indices=None) -> list[str]:
    """One unique, escaped category per token: '<token> #<index>' (engine.token_labels).

    `indices`: each token's place in the sentence when only some tokens are shown."""
    return token_labels([escape(t) for t in tokens], indices)


def tick_labels(tokens: list[str], max_ticks: int = 60,
                indices=None) -> tuple[list[str], list[str]]:
    """(tickvals, ticktext) for a category axis of unique labels, thinned for long inputs.

    A token that occurs more than once shows its unique label ('saw #2', 'saw #4'), so the
    two 'saw' rows of "I saw a saw" read apart; a token that occurs once shows bare. Thinned
    ticks name their index too ('#27 the'), so they are not read as the next row.
    """
    labels = axis_labels(tokens, indices)
    indices = list(range(len(tokens))) if indices is None else list(indices)
    step = max(1, -(-len(tokens) // max_ticks))
    idx = range(0, len(tokens), step)
    seen: dict[str, int] = {}
    for t in tokens:
        seen[t] = seen.get(t, 0) + 1
    if step == 1:
        text = [labels[i] if seen[tokens[i]] > 1 else escape(tokens[i]) for i in idx]
    else:
        text = [f"#{int(indices[i])} {escape(tokens[i])}" for i in idx]
    return [labels[i] for i in idx], text


def block_reduce(matrix, max_size: int):
    """Max-pool a 2-D array into at most max_size x max_size blocks (for overviews only)."""
    import numpy as np

    n_r, n_c = matrix.shape
    f_r, f_c = -(-n_r // max_size), -(-n_c // max_size)
    if f_r == 1 and f_c == 1:
        return matrix, 1
    pad_r, pad_c = (-n_r) % f_r, (-n_c) % f_c
    m = np.pad(matrix, ((0, pad_r), (0, pad_c)), constant_values=np.nan)
    m = m.reshape(m.shape[0] // f_r, f_r, m.shape[1] // f_c, f_c)
    return np.nanmax(m, axis=(1, 3)), max(f_r, f_c)


# plotly validates every property of a figure it builds, object by object (a class of 30 spent
# ~17% of the server's GIL time there). Our figures are built from our own dicts and arrays:
# validation only catches programming errors, which the tests catch with it switched on (read
# once, at import: tests/conftest.py sets it). Off, `figure()` builds the same figure without
# it: tests/test_plotting_validation.py checks that every figure's JSON is byte-identical.
VALIDATE = os.environ.get("ATTNVIZ_VALIDATE_FIGURES") == "1"
_SUBPLOT = re.compile(r"^([a-z]+)(\d+)$")  # a layout's numbered subplot: xaxis2, coloraxis3


def figure(data=None, layout=None, **kwargs):
    """go.Figure(data=data, layout=layout), validated only when VALIDATE.

    Without validation plotly stores the dicts as given, so what validation would change is
    done here (`_canonical`): nested dicts in plotly's own key order; None values, empty
    objects and empty lists of objects left out; a title given as text made {"text": ...}; a
    colour scale given by name made its list of stops; a magic-underscore key in a nested dict
    (fill_color in a table's cells) made a nested dict (plotly expands those of a trace's or
    the layout's top level itself). Everything else must already be what validation leaves as
    it is (a string where plotly wants one, an angle in [-180, 180)...): the byte-identity test
    (tests/test_plotting_validation.py) names any figure that is not.

    Later changes to a figure built without validation: plotly still checks property names
    (update_layout, add_annotation, add_shape, add_trace, update_traces, fig.layout.x = ...)
    and values set on nested objects (fig.layout.xaxis.tickangle = ...), not values set
    directly on the layout or a trace (fig.layout.height = "tall", update_layout(height=...)).
    """
    import plotly.graph_objects as go

    if VALIDATE:
        return go.Figure(data=data, layout=layout, **kwargs)
    traces = [_canonical_trace(t) for t in (data or ())]
    return _with_layout(traces, _canonical(layout or {}, go.Layout, subplots=True), kwargs)


def _with_layout(traces: list, layout: dict, kwargs: dict):
    """go.Figure(data=traces, layout=layout, _validate=False), the layout stored as the dict
    it is (a copy of its containers) with the default template after it, as plotly stores it.

    Without validation plotly still makes an object of every part of the layout (each axis,
    annotation and colour axis of a grid) and deep-copies the layout and the default template
    (about 3.6 KB of JSON) into every figure: 6.5 ms of the 8-panel head-statistics figure,
    3.8 ms of it for the layout and 0.7 ms for the template. Here the parts are made when
    first read, by plotly's own lazy path (BasePlotlyType.__getitem__); only the layout's
    numbered subplots (xaxis2, coloraxis2, ...) are registered as plotly's constructor does,
    and a magic-underscore key (xaxis_range) is set through plotly's path setter.
    The traces are stored the same way, as the dicts plotly keeps (`_data`, arrays copied),
    and their objects (fig.data) are made when first read (Figure._data_objs): plotly made an
    object of every trace and deep-copied its properties (build + to_dict of the 91 test
    figures 104 -> 72 ms). A trace with a magic-underscore key (marker_color) at its top level
    is left to plotly's constructor.
    tests/test_plotting_validation.py checks that every figure's JSON is byte for byte the
    validated one, also after update_layout, add_annotation, add_shape and trace changes."""
    import plotly.graph_objects as go
    import plotly.io as pio

    if any((m := _SUBPLOT.match(key)) and m.group(2) == "1" for key in layout):  # xaxis1:
        # plotly renames it xaxis; left to plotly
        return go.Figure(data=traces, layout=layout, _validate=False, **kwargs)
    lazy = all(isinstance(t, dict) and not any("_" in k for k in t) for t in traces)
    fig = _lean_class()(data=None if lazy else traces, _validate=False, **kwargs)
    if lazy and traces:  # the trace objects are made when first read (Figure._data_objs)
        fig._data = [{**_containers_copied(t), "type": t.get("type", "scatter")}
                     for t in traces]
        fig._data_defaults = [{} for _ in traces]
        fig._data_objs = None
    outer = fig._layout_obj
    numbered = {k: v for k, v in layout.items() if outer._subplot_re_match(k)}
    known = {k: v for k, v in layout.items() if k in outer._valid_props}
    # plotly's order: its named properties, then path keys (xaxis_range: set through its
    # path setter, which nests them), then the numbered subplots, then the template
    fig._layout.update(_containers_copied(known))
    for key, value in layout.items():
        if key not in known and key not in numbered:
            outer[key] = value
    for key in numbered:
        match = outer._subplot_re_match(key)
        part = outer._subplotid_validators[match.group(1)].data_class(_parent=outer,
                                                                       plotly_name=key)
        part._plotly_name = key
        outer._valid_props.add(key)
        outer._compound_props[key] = part
        outer._subplotid_props.add(key)
    fig._layout.update(_containers_copied(numbered))
    if "template" not in layout and pio.templates.default is not None:
        fig._layout["template"] = _default_template(pio.templates.default)
    return fig


def __getattr__(name: str):
    """common.Figure, the lean figure class, made when first asked for (it subclasses plotly's
    go.Figure, which this module imports only when a figure is built): pickle finds it here."""
    if name == "Figure":
        return _lean_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@functools.cache
def _lean_class():
    """go.Figure that leaves the default template to `_with_layout` (plotly would copy the
    registered template object into the layout's objects first) and whose to_dict() copies
    only containers (`_wire`)."""
    import plotly.graph_objects as go

    class Figure(go.Figure):
        """go.Figure as `_with_layout` builds it. Streamlit's st.plotly_chart draws it (it
        takes any go.Figure); st.write, which looks for plotly's own class by name, does not."""

        def __init__(self, *args, **kwargs) -> None:
            self._building = True  # the template is added by _with_layout, after the layout
            super().__init__(*args, **kwargs)
            self._building = False

        def _initialize_layout_template(self) -> None:
            if not getattr(self, "_building", False):  # a layout assigned later: plotly's way
                super()._initialize_layout_template()

        # The trace objects (fig.data) are made when first asked for: `_with_layout` stores
        # the traces as the dicts plotly would keep (its `_data`), which is all that to_dict,
        # Streamlit and the summaries read. Plotly's own methods reach them through this
        # property and get them made as its constructor makes them.
        @property
        def _data_objs(self):
            objs = self.__dict__.get("_lean_data_objs")
            if objs is None:
                objs = self._make_trace_objects()
            return objs

        @_data_objs.setter
        def _data_objs(self, value) -> None:
            self.__dict__["_lean_data_objs"] = value

        def _make_trace_objects(self) -> tuple:
            """What go.Figure's constructor makes of its traces, for the dicts in `_data`
            (objects made from copies, then reading and writing the figure's own dicts)."""
            objs = self._data_validator.validate_coerce(
                [copy.deepcopy(d) for d in self._data], _validate=False)
            for index, trace in enumerate(objs):
                trace._parent = self
                trace._orphan_props.clear()
                trace._trace_ind = index
            self.__dict__["_lean_data_objs"] = objs
            return objs

        def to_dict(self) -> dict:
            """What go.Figure.to_dict() gives (a deep copy, arrays as plotly.js typed-array
            specs), made without deep-copying leaves or testing every number and string for
            being an array: the 8-panel head-statistics figure 3.5 -> ~1 ms."""
            out = {"data": [_wire(t) for t in self._data], "layout": _wire(self._layout)}
            frames = [_wire(f._props) for f in self._frame_objs]
            if frames:
                out["frames"] = frames
            return out

    Figure.__name__ = Figure.__qualname__ = "Figure"
    return Figure


_SCALARS = frozenset({str, int, float, bool, type(None)})
_SKIPPED = frozenset({"geojson", "layer", "layers", "range"})  # plotly's is_skipped_key


@functools.cache
def _plotly_arrays():
    """plotly's array helpers and its table of dtypes plotly.js reads as typed arrays, looked
    up once (this module imports plotly only when a figure is built)."""
    from _plotly_utils import utils
    from _plotly_utils.basevalidators import is_homogeneous_array

    return utils, is_homogeneous_array


def _typed_array(a):
    """plotly's to_typed_array_spec of a non-empty numpy array whose dtype plotly.js reads
    (its plotlyjsShortTypes, or int64, narrowed as plotly does), without its generic conversion
    (narwhals' look at every array cost ~0.15 ms an array: most of a figure's to_dict)."""
    import base64

    pu, _ = _plotly_arrays()
    dtype = str(a.dtype)
    if dtype == "int64":
        top, low = a.max(), a.min()
        for name, lo, hi in (("int8", pu.int8min, pu.int8max), ("int16", pu.int16min,
                             pu.int16max), ("int32", pu.int32min, pu.int32max)):
            if top <= hi and low >= lo:
                a, dtype = a.astype(name), name
                break
        else:
            return pu.to_typed_array_spec(a)  # too wide for plotly.js: plotly's own answer
    spec = {"dtype": pu.plotlyjsShortTypes[dtype],
            "bdata": base64.b64encode(np.ascontiguousarray(a)).decode("ascii")}
    if a.ndim > 1:
        spec["shape"] = str(a.shape)[1:-1]
    return spec


def _wire(value):
    """plotly's deepcopy + convert_to_base64 of a figure's dict or list: a dict's numpy
    arrays (not those of its keys in _SKIPPED) as typed-array specs, containers copied,
    other leaves shared (immutable, or arrays inside lists, which plotly leaves as arrays)."""
    pu, is_homogeneous_array = _plotly_arrays()
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if type(item) in _SCALARS:
                out[key] = item
            elif key in _SKIPPED:
                out[key] = copy.deepcopy(item)
            elif isinstance(item, (dict, list, tuple)):
                out[key] = _wire(item)
            elif type(item) is np.ndarray and item.size and (
                    str(item.dtype) == "int64" or str(item.dtype) in pu.plotlyjsShortTypes):
                out[key] = _typed_array(item)
            elif is_homogeneous_array(item):
                out[key] = pu.to_typed_array_spec(item)
            else:
                out[key] = copy.deepcopy(item)
        return out
    if set(map(type, value)) <= _SCALARS:
        return list(value) if isinstance(value, list) else value
    items = [_wire(x) if isinstance(x, (dict, list, tuple)) else copy.deepcopy(x)
             for x in value]
    return items if isinstance(value, list) else type(value)(items)


class Template(dict):
    """The default template as a figure's layout holds it: a dict, with the JSON bytes it was
    decoded from (`source`, one object per template), by which ui.cache.footprint sizes every
    copy of a template once instead of walking its ~150 small dicts for every new figure
    (~0.2 ms, most of sizing a 12-head grid)."""

    __slots__ = ("source",)


def _default_template(name) -> dict:
    """The default template's JSON as a new dict (decoded from bytes made once per template
    object: ~0.03 ms instead of a 0.3 ms deep copy)."""
    import orjson
    import plotly.io as pio

    template = name if not isinstance(name, str) else pio.templates[name]
    made = _TEMPLATES.get(id(template))
    if made is None or made[0] is not template:  # kept with its object: ids are reused
        made = (template, orjson.dumps(template.to_plotly_json(),
                                       option=orjson.OPT_SERIALIZE_NUMPY))
        _TEMPLATES[id(template)] = made
    out = Template(orjson.loads(made[1]))
    out.source = made[1]
    return out


_TEMPLATES: dict[int, tuple] = {}  # id(template object) -> (it, its JSON)


def _containers_copied(value):
    """`value` with its dicts, lists and numpy arrays copied (other leaves are immutable) and
    plotly objects as their dicts (validated already), as the figure's own."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, dict):
        return {k: _containers_copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_containers_copied(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, _plotly_object()):
        return _containers_copied(value.to_plotly_json())
    return value


@functools.cache
def _plotly_object() -> type:
    from plotly.basedatatypes import BasePlotlyType

    return BasePlotlyType


def _canonical_trace(trace):
    if not isinstance(trace, dict):  # a trace object: already validated when it was built
        return trace
    return _canonical(trace, _trace_class(trace.get("type", "scatter")))


@functools.cache
def _trace_class(name: str):
    from plotly.validator_cache import ValidatorCache

    return ValidatorCache.get_validator("", "data").get_trace_class(name)


def _canonical(d: dict, cls, top: bool = True, subplots: bool = False) -> dict:
    """`d` (the properties of a plotly object of class `cls`) as validation would store them:
    its keys in the order of cls's constructor, then unknown keys as given (subplot axes;
    magic underscores such as fill_color, which below the top level are made nested dicts here,
    as validation does); None values left out; nested objects the same way."""
    rank = _rank(cls)
    end = len(rank)
    out = {}
    for key in sorted((k for k, v in d.items() if v is not None),
                      key=lambda k: rank.get(k, end)):
        value = d[key]
        if subplots and key not in rank and isinstance(value, dict):
            numbered = _SUBPLOT.match(key)  # xaxis2, coloraxis2: as their first one's class
            if numbered and numbered.group(1) in rank:
                kind = _kind(cls, numbered.group(1))
                if kind is not None and kind[0] == "object":
                    value = _canonical(value, kind[1], top=False)
                    if value:
                        out[key] = value
                    continue
        if key not in rank:
            head, _sep, rest = key.partition("_")
            kind = _kind(cls, head) if head in rank else None
            if not top and rest and kind is not None and kind[0] == "object":
                # what validation makes of fill_color: fill={"color": ...}, after the named
                # properties, merged into the object when it is given too
                nested = _canonical({rest: value}, kind[1], top=False)
                out[head] = {**out.get(head, {}), **nested}
                continue
        else:
            kind = _kind(cls, key)
            if kind is not None:
                how, arg = kind
                if how == "object":
                    if isinstance(value, (str, int, float)) and key == "title":
                        value = {"text": value}  # what TitleValidator does
                    if isinstance(value, dict):
                        value = _canonical(value, arg, top=False)
                        if not value:  # validation leaves an empty object out
                            continue
                elif how == "objects":
                    if isinstance(value, (list, tuple)):
                        if not value:  # and an empty list of objects
                            continue
                        value = [_canonical(v, arg, top=False) if isinstance(v, dict) else v
                                 for v in value]
                elif how == "colorscale" and isinstance(value, str):
                    value = _named_scale(arg, value)
        out[key] = value
    return out


@functools.cache
def _rank(cls) -> dict[str, int]:
    """{property: its place in cls's constructor} for a plotly class: its constructor sets its
    properties in its signature's order."""
    names = [p for p in inspect.signature(cls.__init__).parameters
             if p not in ("self", "arg", "kwargs")]
    return {n: i for i, n in enumerate(names)}


@functools.cache
def _kind(cls, name: str) -> tuple | None:
    """How to canonicalise property `name` of a plotly class: ("object", class), ("objects",
    class), ("colorscale", validator) or None (a plain value). Looked up per property used:
    the layout's ~100 validators all at once cost ~175 ms of a fresh server's first figure."""
    from _plotly_utils.basevalidators import (
        ColorscaleValidator,
        CompoundArrayValidator,
        CompoundValidator,
    )
    from plotly.validator_cache import ValidatorCache

    v = ValidatorCache.get_validator(cls._path_str, name)
    if isinstance(v, CompoundValidator):
        return ("object", v.data_class)
    if isinstance(v, CompoundArrayValidator):
        return ("objects", v.data_class)
    if isinstance(v, ColorscaleValidator):
        return ("colorscale", v)
    return None


_SCALES: dict[str, list] = {}


def _named_scale(validator, name: str) -> list:
    """A colour scale's name as validation stores it: its list of [position, colour]."""
    if name not in _SCALES:
        _SCALES[name] = validator.validate_coerce(name)
    return _SCALES[name]


class Grid:
    """Subplots built as plain dicts and made a figure once, by `figure()`.

    plotly's make_subplots plus add_trace(row=, col=) and update_xaxes(row=, col=) search the
    whole grid and re-dispatch the layout on every call, which costs several times more than
    building the same figure from one dict (README, Speed). Usage:

        g = Grid(rows=1, cols=2, subplot_titles=["a", "b"])
        g.add(dict(type="heatmap", z=m), row=1, col=2)  # a dict (or a trace object)
        g.xaxis(1, 2).update(type="category")      # the axis' layout dict, edited in place
        fig = g.figure(title="...")                 # layout keywords merged at the top level
    """

    def __init__(self, rows: int = 1, cols: int = 1, **subplot_args) -> None:
        import copy

        self.rows, self.cols = rows, cols
        self.layout = copy.deepcopy(_grid_layout(rows, cols, subplot_args))
        self.traces: list = []

    def ref(self, row: int = 1, col: int = 1) -> str:
        """The axis suffix of a subplot ('' for the first, then '2', '3'...): its traces use
        x{ref}/y{ref}, its layout xaxis{ref}/yaxis{ref}, shapes xref=f"x{ref}"."""
        if not (1 <= row <= self.rows and 1 <= col <= self.cols):
            raise ValueError(f"no subplot at row {row}, col {col}")
        i = (row - 1) * self.cols + col  # make_subplots numbers axes row by row
        return "" if i == 1 else str(i)

    def add(self, trace, row: int = 1, col: int = 1):
        sub = self.ref(row, col)
        spec = trace if isinstance(trace, dict) else trace.to_plotly_json()
        self.traces.append({**spec, "xaxis": f"x{sub}", "yaxis": f"y{sub}"})
        return self

    def xaxis(self, row: int = 1, col: int = 1) -> dict:
        return self.layout.setdefault(f"xaxis{self.ref(row, col)}", {})

    def yaxis(self, row: int = 1, col: int = 1) -> dict:
        return self.layout.setdefault(f"yaxis{self.ref(row, col)}", {})

    def figure(self, **layout):
        return figure(data=self.traces, layout={**self.layout, **layout})


def _grid_layout(rows: int, cols: int, args: dict) -> dict:
    """make_subplots' layout as a dict, computed once per grid shape (read-only: copy it).

    Subplot titles often name the sentence or a number, so a layout cached with them missed
    for nearly every figure (make_subplots was 5.6% of a class's server time). It is cached
    with stand-in titles (the same ones empty: those get no annotation) and the real titles
    are put into the copy's annotations."""
    titles = args.get("subplot_titles")
    if not titles:
        return _grid_layout_of(rows, cols, json.dumps(args, sort_keys=True, default=_plain))
    marks = [f"\x00{i}" if t else "" for i, t in enumerate(titles)]
    base = _grid_layout_of(rows, cols, json.dumps({**args, "subplot_titles": marks},
                                                  sort_keys=True, default=_plain))
    real = {m: t for m, t in zip(marks, titles, strict=True) if m}
    notes = [{**a, "text": real[a["text"]]} if a.get("text") in real else a
             for a in base.get("annotations", ())]
    return {**base, "annotations": notes}


def _plain(value):
    """NumPy scalars as Python numbers (for the JSON key)."""
    return value.item()


@functools.lru_cache(maxsize=256)  # thread-safe; keyed on the grid's shape and arguments
def _grid_layout_of(rows: int, cols: int, args_json: str) -> dict:
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    layout = make_subplots(rows=rows, cols=cols, figure=go.Figure(_validate=VALIDATE),
                           **json.loads(args_json)).layout.to_plotly_json()
    # The default template rides along as a big dict: every figure gets the same default
    # when it is built (plotly's, or `_with_layout`'s decoded copy), not copied from here.
    layout.pop("template", None)
    return layout


# Room for labels, reserved up front. Plotly's automargin draws a figure, measures its labels,
# and when they need more margin than the layout gives, draws the whole figure a second time
# (for a 512 x 512 heatmap that second pass is as long as the first). A margin that already
# holds the labels is drawn once; automargin stays on, so a label longer than estimated still
# gets its room (one more pass), never clipped.
_EM_NARROW = 0.66  # an upper estimate of a Latin character's width, in em (digits ~0.56)
_EM_WIDE = 1.05  # a CJK (East Asian wide or full-width) character
TICK_PAD = 8  # px between an axis and its tick labels, tick length included
TITLE_ROOM = 24  # px of an axis title beside its tick labels (one line of FONT)
LEGEND_ROW = 32  # px of one row of a horizontal legend below a figure


def text_width(text: str, size: float = FONT["size"]) -> float:
    """An upper estimate of `text`'s width in px at font size `size` (px): the sum over its
    characters of 0.66 em (1.05 em for a wide CJK character). HTML entities of escaped labels
    count as their source characters (an over-estimate)."""
    import unicodedata

    return size * sum(_EM_WIDE if unicodedata.east_asian_width(c) in "WF" else _EM_NARROW
                      for c in text)


def label_room(labels, angle: float = 0.0, size: float = FONT["size"], titled: bool = True,
               across: bool = True) -> int:
    """px a category axis's tick labels (and its title when `titled`) take from the figure's
    edge: for labels beside the axis (`across`: a y axis's, or an x axis's rotated by
    `angle` degrees) the longest label's extent w|cos a| + h|sin a| (h = one line), for
    unrotated x labels one line; plus TICK_PAD and TITLE_ROOM."""
    import math

    longest = max((text_width(str(t), size) for t in labels), default=0.0)
    a = math.radians(angle)
    if across:  # y axis: the label's run is horizontal (angle 0)
        extent = longest * abs(math.cos(a)) + size * abs(math.sin(a))
    else:  # x axis: the run is vertical only as far as the label is rotated
        extent = longest * abs(math.sin(a)) + size * abs(math.cos(a))
    return int(math.ceil(extent + TICK_PAD + (TITLE_ROOM if titled else 0)))


def colorbar_room(title: str, ticks: str = "0.00", size: float = FONT["size"],
                  thickness: int = 12) -> int:
    """px a vertical colour bar on the right takes: its offset and pads (60 px), then the
    wider of its title (Plotly writes it above the bar) and the bar with tick labels like
    `ticks`."""
    return int(60 + max(text_width(title, size), thickness + TICK_PAD + text_width(ticks, size)))
