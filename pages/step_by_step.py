"""Self-attention step by step in the notation of Hung-yi Lee's self-attention lecture: vectors,
q k v, scores, weights, outputs, multi-head, additive similarity.

Numbers: analysis.walkthrough (toy numbers from a seed, or one head of the model recomputed
from its weights and checked against the cached Trace); what it shows: views.step_by_step."""

import plotly.graph_objects as go
import streamlit as st

from attnviz import ui
from attnviz.i18n import _
from attnviz.ui.render import render
from attnviz.views import step_by_step as view
from attnviz.views.blocks import Table


def draw(blocks: list, keys, static: bool = False) -> None:
    """Render the blocks, giving the figures their keys in order; a Table is shown with its
    index (as st.dataframe shows a dict), or as an st.table (`static`)."""
    keys = iter(keys)
    for block in blocks:
        if isinstance(block, Table):
            render(block, hide_index=None, static=static)
        else:
            render(block, key=next(keys) if isinstance(block, go.Figure) else None)


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    c1, c2 = st.columns([1, 4])
    # The URL holds the shown option (?sbs_mode=real in English, the Chinese name in Chinese);
    # ui.urlstate reads either in either language. Steps are numbers, named in the captions.
    mode = c1.radio(_("Numbers"), list(view.MODES), key="sbs_mode", bind="query-params",
                    format_func=lambda m: _(view.MODES[m]),
                    captions=[_("small, to redo on paper"), _("a head of the sidebar's model")])
    step = c2.radio(_("Step"), list(view.STEPS), key="sbs_step", bind="query-params",
                    horizontal=True, captions=[_(v) for v in view.STEPS.values()])
    box = st.container(horizontal=True)
    if mode == "toy":
        if not ui.require_text(ctx):
            return
        m = box.slider(_("m (input size)"), 2, 8, 4, key="sbs_m", bind="query-params")
        d_k = box.slider(_("d_k (query/key size)"), 2, 8, 3, key="sbs_dk", bind="query-params")
        p = box.slider(_("p (value size)"), 2, 8, 3, key="sbs_p", bind="query-params")
        seed = box.number_input(_("Random seed"), 0, 10_000, 0, key="sbs_seed",
                                bind="query-params", help=_("Chooses the toy's numbers."))
        walk = view.wt.toy_walkthrough(ctx.text, m, d_k, p, int(seed))
        render(view.toy_cut(walk))
        real = None
    else:
        t = ui.trace_or_message(ctx)
        refusal = [] if t is None else view.real_refusal(ctx.model)
        if t is None or refusal:
            render(refusal)
            return
        layer = box.selectbox(_("Layer"), range(t.n_layers), key="sbs_layer", bind="query-params")
        head = box.selectbox(_("Head"), range(t.n_heads), key="sbs_head", bind="query-params")
        walk = view.wt.real_walkthrough(ctx.model, t, layer, head)
        render(view.real_check(walk, t, layer, head))
        real, seed = (ctx.model, t, layer), 0
    # Tokens are chosen by the number their labels carry (I #1, saw #2; [CLS] #0 where a start
    # token leads): a number past a new, shorter sentence goes back to the first token's.
    first = view.first_number(walk)
    # a decoder's real mode opens on the last token (it sees every key), BERT on the first
    start = view.default_query(walk, real is not None and bool(real[1].request.causal))
    for k, default in (("sbs_query", start), ("sbs_key", first)):
        if not first <= st.session_state.get(k, default) < walk.n + first:
            st.session_state[k] = default
    i = box.number_input(_("Query token #"), first, walk.n - 1 + first, start, key="sbs_query",
                         bind="query-params", help=_(
                             "The number of the token that looks, as its label gives it (I #1, "
                             "saw #2): the row of the score matrix.")) - first
    render(view.query_note(walk, i))
    render(view.step_heading(step))
    extra = show_step(step, walk, i, mode, int(seed), real)
    render(view.download(walk, mode, step, extra), key="sbs_download")


def show_step(step: int, walk, i: int, mode: str, seed: int, real: tuple | None) -> dict:
    """Draw one step for query i; returns the extra numbers it adds to the download.

    `real` is (model, trace, layer) in real mode, None in toy mode."""
    keys = view.figure_keys(step, walk)
    if step == 1:
        draw(view.vectors(walk, mode), keys)
    elif step == 2:
        draw(view.projections(walk, mode), keys)
    elif step == 3:
        first = view.first_number(walk)
        j = st.number_input(_("Key token #"), first, walk.n - 1 + first,
                            view.default_key(walk) + first, key="sbs_key",
                            bind="query-params") - first
        draw(view.similarity(walk, i, j, mode), keys[:1])
        rows = st.radio(_("Rows of the score matrix are"), list(view.ROWS), horizontal=True,
                        key="sbs_conv", bind="query-params",
                        format_func=lambda r: _(view.ROWS[r]),
                        captions=[_("A^T = Q^T K: how attnviz draws scores"),
                                  _("A = K^T Q: the lecture's layout")])
        draw(view.scores(walk, rows, mode), keys[1:])
    elif step == 4:
        temp = st.select_slider(_("Temperature T"), view.TEMPERATURES, value=1.0,
                                key="sbs_temp", bind="query-params")
        blocks, extra = view.temperature(walk, i, temp, mode)
        draw(blocks, keys)
        return extra
    elif step == 5:
        draw(view.softmax(walk, i), keys)
    elif step == 6:
        draw(view.weighted_sum(walk, i), keys)
    elif step == 7:
        return multihead_step(walk, seed, real)
    elif step == 8:
        blocks, extra = view.additive(walk, seed, mode)
        draw(blocks, keys)
        return extra
    return {}


def multihead_step(walk, seed: int, real: tuple | None) -> dict:
    """Step 7: multi-head attention, its shapes, the heads' weights and W^O; returns the
    extra numbers it adds to the download."""
    render(view.multihead_intro(walk))
    if real is None:
        h = st.radio(_("Heads h"), view.heads_choices(walk), horizontal=True, key="sbs_heads",
                     bind="query-params")
        mh = view.toy_multihead(walk, h, seed)
        keys = view.FIGURES[7]
    else:  # BERT's layer, or a decoder's (RoPE, shared key/value heads: decoder_multihead)
        model, t, layer = real
        mh = (view.wt.real_multihead if walk.kv_head is None
              else view.wt.decoder_multihead)(model, t, layer)
        keys = ["s7_h", "s7_O"]
    blocks, extra = view.multihead(walk, mh, seed, lambda: ui.with_progress(
        "results", ("sbs_heads_trend", " ".join(walk.tokens)), _("Measuring over 40 seeds:"),
        lambda p: view.heads_trend(walk, p)), real)
    draw(blocks, keys, static=True)
    return extra


main()
