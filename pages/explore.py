"""All heads at once (after bertviz's model and head views): one mosaic of every layer x head,
one head enlarged with exact values, and token lines for several heads in colours.

Numbers: the cached Trace; what it shows: views.explore."""

import functools

import streamlit as st

from attnviz import ui
from attnviz.analysis import views
from attnviz.i18n import _
from attnviz.plotting.overview import pick_head
from attnviz.ui.choices import choose_number
from attnviz.ui.live_chart import index_in
from attnviz.ui.render import render
from attnviz.views import explore as view


def open_head(t) -> tuple[int, int]:
    """The (layer, head) the page has open: its widgets' values, else the URL's, else 0."""
    def value(key: str, size: int) -> int:
        v = st.session_state.get(key, st.query_params.get(key, 0))
        try:
            return min(max(int(v), 0), size - 1)
        except (TypeError, ValueError):
            return 0
    return value("ex_layer", t.n_layers), value("ex_head", t.n_heads)


def open_clicked(n_layers: int, n_heads: int) -> None:
    """A click on a mosaic cell opens its head (a margin, or a click event of another shape:
    what it does not name stays as it is)."""
    points = ui.clicked_points("ex_overview")
    if points:
        layer, head = pick_head(points[0])
        if index_in(layer, n_layers) is not None:
            st.session_state["ex_layer"] = layer
        if index_in(head, n_heads) is not None:
            st.session_state["ex_head"] = head


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    t = ui.trace_or_message(ctx, streams=True)
    if t is None:
        return
    # switches from the left, only those that act: [CLS]/[SEP] to hide (SmolLM2 adds none),
    # rows to renormalise where keys can be left out (hidden, or dropped by a pair's filter)
    columns, special = iter(st.columns(3)), view.has_special(t)
    hide = special and next(columns).toggle(_("Hide [CLS] and [SEP]"), key="ex_hide",
                                            bind="query-params")
    renorm = (special or bool(ctx.text_pair)) and next(columns).toggle(
        _("Renormalise rows"), key="ex_renorm", bind="query-params",
        help=_("Rescale each shown row to sum to 1 over the keys still shown."))
    words = next(columns).toggle(_("Word level"), key="ex_words", bind="query-params",
        help=_("Merge word pieces into words: attention to a word is the sum over its pieces, "
               "attention from a word the mean (Clark et al. 2019)."))
    seg = "all"
    if ctx.text_pair:
        seg = st.radio(_("Pairs shown (sentence A, sentence B)"), views.SEGMENT_FILTERS,
                       key="ex_seg", horizontal=True, bind="query-params",
                       format_func=lambda f: _(views.FILTER_LABELS[f]),
                       help=_("A->B: queries in sentence A reading keys in B; B->A: the "
                              "reverse; across: both directions."))
    render(view.renorm_note(hide, renorm, seg))
    options = (t.key, hide, renorm, seg, words)
    if t.holds_weights:
        with st.spinner(_("Drawing every head...")):
            fig = ui.cached_figure(("ex_overview", *options),
                                   lambda: view.mosaic(t, hide, renorm, seg, words))
    else:  # a long decoder input: every layer's weights computed again, one at a time
        parts = ui.with_progress("results", ("ex_tiles", *options), _("Drawing every head..."),
                                 lambda progress: view.streamed_parts(t, hide, renorm, seg,
                                                                      words, progress))
        fig = ui.cached_figure(("ex_overview", *options), lambda: view.parts_mosaic(*parts))
    n_shown = view.shown_tokens(fig)
    if n_shown <= view.OUTLINE_MAX:
        shown = open_head(t)
        fig = ui.cached_figure(("ex_overview_marked", *options, shown),
                               lambda: view.outlined(fig, *shown))
    render(fig, key="ex_overview",
           on_select=functools.partial(open_clicked, t.n_layers, t.n_heads),
           selection_mode="points")
    render(view.outline_note(n_shown))
    if n_shown > view.OUTLINE_MAX:
        # The mosaic stays as it is, so layer and head are chosen inside the fragment below:
        # a head change reruns that part only, not the page with its mosaic.
        one_head(ctx, hide, renorm, seg, words, None, None)
    else:
        # Layer and head rerun the whole page (the mosaic outlines the open head) in one run;
        # inside the fragment they would cost a fragment run and then the page's run.
        one_head(ctx, hide, renorm, seg, words, *choose_head(t))


def choose_head(t) -> tuple[int, int]:
    """Layer and head (bound to the URL), their values: rows of buttons (one click), or
    select boxes for a model with many (ui.choices)."""
    c1, c2 = st.columns([2, 5])
    return (choose_number(c1, _("Layer"), t.n_layers, "ex_layer"),
            choose_number(c2, _("Head"), t.n_heads, "ex_head"))


@ui.fragment
def one_head(ctx: ui.Context, hide: bool, renorm: bool, seg: str, words: bool,
             layer: int | None, head: int | None) -> None:
    """Token and line choices rerun only this part of the page; so do layer and head when the
    page passes None for them (it has no outline to move) and they are chosen here."""
    t = ctx.trace()
    if layer is None or head is None:
        layer, head = choose_head(t)
    e1, e2 = st.columns([3, 2])
    extra = e1.multiselect(_("More heads as lines, in colours"), range(t.n_heads), key="ex_more",
                           bind="query-params", placeholder=_("Choose heads"))
    shown = (t.key, layer, hide, renorm, seg, words)  # what the figures below are made of
    w, toks, idx = (ui.cached("results", ("ex_shown", *shown), lambda: view.shown(
        t, t.weights[layer], hide, renorm, seg, words)) if t.holds_weights else view.shown(
        t, t.layer_weights(layer), hide, renorm, seg, words))  # a long input's: not cached
    labels = view.labels(toks, idx)
    options, default = view.line_choices(len(toks), hide, bool(t.request.causal))
    # A key per number of shown tokens (another sentence's list is a new widget the browser
    # shows at its default), bound to the URL: a link opens the same query token's lines.
    pick = e2.selectbox(_("Token lines for one query token"), options, index=default,
                        key=view.token_key(len(toks)), bind="query-params",
                        format_func=lambda i: _("all tokens") if i is None else labels[i])
    render(view.lines_note(len(toks)))
    left, right = (st.columns(2) if view.side_by_side(len(toks))
                   else (st.container(), st.container()))
    pieces = view.pieces_of(t, idx, words)
    render(ui.cached_figure(("ex_one", *shown, head),
                            lambda: view.one_head(w, toks, idx, layer, head, pieces)),
           where=left, key="ex_one")
    heads = [head] + [h for h in extra if h != head]
    fig = ui.cached_figure(("ex_lines", *shown, tuple(heads), pick),
                           lambda: view.lines(w, toks, idx, layer, heads, pick, pieces))
    render(fig, where=right, key="ex_lines")
    render(view.focus_note(fig, heads, labels, pick), where=right)
    render(view.shares(t, layer, head, bool(ctx.text_pair)))
    st.page_link("pages/inside_score.py",
                 label=_("Inside one score: layer {layer}, head {head}").format(
                     layer=layer, head=head),
                 icon=":material/biotech:",
                 query_params={"ins_layer": str(layer), "ins_head": str(head)})
    render(view.download(w, toks, idx, layer, head, hide, renorm, seg, words), key="ex_download")


main()
