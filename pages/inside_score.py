"""Inside one score (bertviz's neuron view, continued through the values): how one query
token's q meets every key k, becomes a weight, and mixes the values into the head's output.

Numbers: analysis.views.inside_score on the cached Trace's queries, keys and values
(analysis.words for the word-level weights); figures: plotting.neuron."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis.views import inside_score
from attnviz.analysis.words import merge_tokens, word_attention, word_groups
from attnviz.export.html import Heading, Markdown, Table
from attnviz.i18n import _
from attnviz.plotting.common import axis_labels
from attnviz.plotting.neuron import score_steps, value_steps
from attnviz.ui.render import render
from attnviz.ui.text import literal


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(Heading(_("Inside one score"), 1))
    render(Markdown(_(
        "For one head and one **query** token $i$: multiply $q^i$ with each **key** $k^j$ "
        "component by component ($q^i \\circ k^j$), add up the components "
        "($s_j = q^i \\cdot k^j$), divide by $\\sqrt{d}$, and take the softmax over the keys: "
        "$w_j$. Then the head's **output** for token $i$ is $o^i = \\sum_j w_j v^j$."
    )))
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    one_score(ctx)


@ui.fragment  # layer, head, query and word level rerun only this part of the page
def one_score(ctx: ui.Context) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    labels = t.labels
    c1, c2, c3 = st.columns([1, 1, 2])
    layer = c1.selectbox(_("Layer"), range(t.n_layers), key="ins_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(t.n_heads), key="ins_head", bind="query-params")
    query = c3.selectbox(_("Query token"), range(t.n_tokens), index=min(1, t.n_tokens - 1),
                         key="ins_query", bind="query-params", format_func=lambda i: labels[i])

    nb = inside_score(t.queries[layer, head], t.keys[layer, head], t.values[layer, head], query,
                      t.scale, t.mask)
    d = t.head_dim
    diff = float(np.abs(nb["output"] - t.outputs[layer, head, query]).max())
    render(Markdown(_("d = {d} · 1/√d = {scale:.4f} · {n} keys · the output matches the "
                      "engine's recorded output to {diff:.1e}").format(
        d=d, scale=t.scale, n=t.n_tokens, diff=diff), "caption"))

    title = _("Layer {layer}, head {head}, query {query}").format(
        layer=layer, head=head, query=axis_labels(t.tokens)[query])  # escaped
    # Built once per server for this trace, head and query (a rerun that changes none of them,
    # e.g. the word-level toggle, draws the cached figures)
    at = (t.key, layer, head, query)
    render(Heading(_("1 · From q and k to the weights"), 3))
    render(ui.cached_figure(("ins_scores", *at), lambda: score_steps(
        nb, t.tokens, query, title=title)), key="ins_scores")
    render(Heading(_("2 · From the weights and the values to the output"), 3))
    render(ui.cached_figure(("ins_values", *at), lambda: value_steps(
        nb, t.tokens, query, title=title)), key="ins_values")

    render(Heading(_("The numbers, one row per key"), 3))
    weight = _("weight")
    table = {
        _("key"): labels, "q·k": nb["scores"], f"q·k/√{d}": nb["scaled"], weight: nb["weights"],
        "|w v|": np.linalg.norm(nb["weighted"], axis=1),
    }
    render(Table(table), column_config={
        c: st.column_config.NumberColumn(format="%.6f") for c in list(table)[1:]})
    render(Markdown(_("Output $o^i$ ({d} numbers):").format(d=d) + " `"
                    + " ".join(f"{x:+.4f}" for x in nb["output"]) + "`"))
    if st.toggle(_("Word level (the weights only)"), key="ins_words", bind="query-params",
                 help=_("q·k and the values belong to word pieces; only the weights merge into "
                        "words: summed over a word's keys, averaged over its queries.")):
        groups = word_groups(t.word_pieces)
        word = next(u for u, g in enumerate(groups) if query in g)
        row = word_attention(t.weights[layer, head], groups)[word]
        names = merge_tokens(t.tokens, groups)
        render(Markdown(_("The word {word} ({n} piece(s)) reads:").format(
            word=literal(names[word]), n=len(groups[word])), "caption"))
        # a word carries its first piece's number, as every label does (saw #2; [CLS] #0)
        number = [labels[g[0]].rsplit(" #", 1)[1] for g in groups]
        render(Table({_("word"): [f"{w} #{k}" for w, k in zip(names, number, strict=True)],
                      weight: row}), column_config={
            weight: st.column_config.NumberColumn(format="%.6f")})

    st.page_link("pages/explore.py", label=_("See layer {layer}, head {head} among all "
                                             "heads").format(layer=layer, head=head),
                 icon=":material/explore:",
                 query_params={"ex_layer": str(layer), "ex_head": str(head)})
    ui.download_arrays(
        _("Download these numbers (.npz)"),
        {"tokens": np.array(t.tokens), "layer": layer, "head": head, "query": query, **nb},
        file_name=f"attnviz_inside_l{layer}_h{head}_q{query}.npz", key="ins_download",
    )


main()
