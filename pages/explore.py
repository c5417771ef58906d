"""All heads at once (after bertviz's model and head views): one mosaic of every layer x head,
one head enlarged with exact values, and token lines for several heads in colours.

Numbers: the cached Trace; what is shown of it: analysis.views (hiding [CLS]/[SEP], segment
filters including A->B and B->A, word level, the mean margins); figures: plotting.overview,
plotting.heatmaps, plotting.token_lines."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import views
from attnviz.engine import token_labels
from attnviz.export.html import Heading, Markdown
from attnviz.i18n import _
from attnviz.plotting.heatmaps import SQUARE_FROM, attention_heatmap
from attnviz.plotting.overview import mark_head, overview_mosaic, pick_head
from attnviz.plotting.token_lines import token_lines
from attnviz.ui.choices import choose_number
from attnviz.ui.render import render

ALL_LINES_MAX = 64  # tokens up to which "all tokens" is offered for the token lines
# Shown tokens up to which the mosaic outlines the open head. Moving the outline makes a new
# figure, which Streamlit sends and the browser draws again whole (2.3 MB at 512 tokens: a
# second of a head change's 2.7 s, bench overview_browser); past this the mosaic stays still.
OUTLINE_MAX = 24


def mosaic(t, hide: bool, renorm: bool, seg: str, words: bool):
    """The overview figure, built once per server for a trace and the view's options."""
    def build():
        w, toks, idx = views.shown_weights(t.weights, t.tokens, t.segments, hide, renorm, seg,
                                           words, t.word_pieces)
        return overview_mosaic(w, views.mean_maps(w), toks, idx)

    return ui.cached_figure(("ex_overview", t.key, hide, renorm, seg, words), build)


def open_head(t) -> tuple[int, int]:
    """The (layer, head) the page has open: its widgets' values, else the URL's, else 0."""
    def value(key: str, size: int) -> int:
        v = st.session_state.get(key, st.query_params.get(key, 0))
        try:
            return min(max(int(v), 0), size - 1)
        except (TypeError, ValueError):
            return 0
    return value("ex_layer", t.n_layers), value("ex_head", t.n_heads)


def open_clicked() -> None:
    points = ui.clicked_points("ex_overview")
    if points:
        layer, head = pick_head(points[0])
        if layer is not None:
            st.session_state["ex_layer"] = layer
        if head is not None:
            st.session_state["ex_head"] = head


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(Heading(_("All heads, token lines"), 1))
    render(Markdown(_(
        "Every tile is one head's softmax weights $w_{ij}$: rows are **queries** $i$ (who "
        "looks), columns are **keys** $j$ (who is looked at). The last column is the mean over "
        "the heads of a layer, the last row the mean over all layers. **Click a tile** (near "
        "its centre; the hover says which) to open that head below: in a short input the open "
        "head is outlined."
    )))
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    o1, o2, o3 = st.columns(3)
    hide = o1.toggle(_("Hide [CLS] and [SEP]"), key="ex_hide", bind="query-params")
    renorm = o2.toggle(_("Renormalise rows"), key="ex_renorm", bind="query-params",
                       help=_("Rescale each shown row to sum to 1 over the keys still shown."))
    words = o3.toggle(_("Word level"), key="ex_words", bind="query-params",
                      help=_("Merge word pieces into words: attention to a word is the sum over "
                             "its pieces, attention from a word the mean (Clark et al. 2019)."))
    seg = "all"
    if ctx.text_pair:
        seg = st.radio(_("Pairs shown (sentence A, sentence B)"), views.SEGMENT_FILTERS,
                       key="ex_seg", horizontal=True, bind="query-params",
                       format_func=lambda f: _(views.FILTER_LABELS[f]),
                       help=_("A->B: queries in sentence A reading keys in B; B->A: the "
                              "reverse; across: both directions."))
    if hide or seg != "all":
        render(Markdown(_("Rows **are renormalised**: each shown row sums to 1 over the shown "
                          "keys.") if renorm else
                        _("Rows are **not** renormalised: these are the model's own weights, "
                          "so a row sums to less than 1 where keys are hidden."), "caption"))
    with st.spinner(_("Drawing every head...")):
        fig = mosaic(t, hide, renorm, seg, words)
        n_shown = int(fig.layout.meta["tokens"])
        if n_shown <= OUTLINE_MAX:
            shown = open_head(t)
            fig = ui.cached_figure(("ex_overview_marked", t.key, hide, renorm, seg, words, shown),
                                   lambda: mark_head(fig, *shown))
    render(fig, key="ex_overview", on_select=open_clicked, selection_mode="points")
    if n_shown > OUTLINE_MAX:
        render(Markdown(_("{n} tokens shown: past {max} the open head is not outlined here "
                          "(moving the outline would send and draw the whole mosaic again at "
                          "every head change); its layer and head are named above its enlarged "
                          "view below.").format(n=n_shown, max=OUTLINE_MAX), "caption"))
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
    w, toks, idx = ui.cached("results", ("ex_shown", *shown), lambda: views.shown_weights(
        t.weights[layer], t.tokens, t.segments, hide, renorm, seg, words, t.word_pieces))
    labels = token_labels(toks, idx)
    # Past ALL_LINES_MAX tokens "all tokens" is not offered: every token's lines would form a
    # wall that hides each line; long inputs start on the first word.
    long = len(toks) > ALL_LINES_MAX
    kept = st.session_state.get("ex_token")
    if "ex_token" in st.session_state and ((kept is None and long) or
                                           (kept is not None and kept >= len(toks))):
        del st.session_state["ex_token"]  # not an option for this sentence: back to the default
    pick = e2.selectbox(_("Token lines for one query token"),
                        [*([] if long else [None]), *range(len(toks))],
                        index=min(1 if hide else 2, len(toks) - 1) if long else 0, key="ex_token",
                        format_func=lambda i: _("all tokens") if i is None else labels[i])
    if long:
        render(Markdown(_("{n} tokens: lines are drawn for one query token at a time (all "
                          "tokens at once only up to {max}).").format(n=len(toks),
                                                                     max=ALL_LINES_MAX),
                        "caption"))
    # Past SQUARE_FROM tokens one head gets the page's width (square cells), lines below it.
    left, right = ((st.container(), st.container()) if len(toks) > SQUARE_FROM
                   else st.columns(2))
    with left:
        one = _("Layer {layer}, head {head}").format(layer=layer, head=head)
        render(ui.cached_figure(("ex_one", *shown, head), lambda: attention_heatmap(
            w[head], toks, "weights", one, indices=idx, zmax=float(w[head].max()))),
            key="ex_one")
    with right:
        heads = [head] + [h for h in extra if h != head]
        render(ui.cached_figure(("ex_lines", *shown, tuple(heads), pick), lambda: token_lines(
            w[heads], heads, toks, idx, query=pick,
            title=_("Layer {layer}: token lines (opacity = weight)").format(layer=layer))),
            key="ex_lines")
    if ctx.text_pair:
        shares = views.segment_shares(t.weights[layer, head], t.segments)
        render(Markdown(_("Share of this head's weight, averaged over its queries: {shares}")
                        .format(shares=_(", ").join(f"{_(views.FILTER_NAMES[k])} {float(v):.1%}"
                                                    for k, v in shares.items())), "caption"))
    st.page_link("pages/inside_score.py",
                 label=_("Inside one score: layer {layer}, head {head}").format(
                     layer=layer, head=head),
                 icon=":material/biotech:",
                 query_params={"ins_layer": str(layer), "ins_head": str(head)})
    ui.download_arrays(
        _("Download this head's shown weights (.npz)"),
        {"tokens": np.array(toks), "indices": idx, "weights": w[head],
         "layer_mean": w.mean(axis=0), "hidden_special": hide, "renormalised": renorm,
         "segment_filter": seg, "word_level": words},
        file_name=f"attnviz_layer{layer}_head{head}.npz", key="ex_download",
    )


main()
