"""Inside one score (bertviz's neuron view, continued through the values): how one query
token's q meets every key k, becomes a weight, and mixes the values into the head's output.

Numbers: the cached Trace; what it shows: views.inside_score."""

import streamlit as st

from attnviz import ui
from attnviz.i18n import _
from attnviz.ui.render import render
from attnviz.views import inside_score as view


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    one_score(ctx)


def numbers_format(columns) -> dict:
    """Every column but the first shown with six decimals."""
    return {c: st.column_config.NumberColumn(format="%.6f") for c in list(columns)[1:]}


@ui.fragment  # layer, head, query and word level rerun only this part of the page
def one_score(ctx: ui.Context) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    labels = t.labels
    c1, c2, c3 = st.columns([1, 1, 2])
    layer = c1.selectbox(_("Layer"), range(t.n_layers), key="ins_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(t.n_heads), key="ins_head", bind="query-params")
    query = c3.selectbox(_("Query token"), range(t.n_tokens), index=view.default_query(t),
                         key="ins_query", bind="query-params", format_func=lambda i: labels[i])
    nb = view.steps(t, layer, head, query)
    render(view.sizes(t, nb, layer, head, query))
    # Built once per server for this trace, head and query (a rerun that changes none of them,
    # e.g. the word-level toggle, draws the cached figures)
    at = (t.key, layer, head, query)
    render(view.scores_heading())
    render(ui.cached_figure(("ins_scores", *at),
                            lambda: view.scores_figure(t, nb, *at[1:])), key="ins_scores")
    render(view.values_heading())
    render(ui.cached_figure(("ins_values", *at),
                            lambda: view.values_figure(t, nb, *at[1:])), key="ins_values")
    render(view.table_heading())
    table = view.table(t, nb)
    render(table, column_config=numbers_format(table.columns))
    render(view.output(t, nb))
    if st.toggle(_("Word level (the weights only)"), key="ins_words", bind="query-params",
                 help=_("q·k and the values belong to word pieces; only the weights merge into "
                        "words: summed over a word's keys, averaged over its queries.")):
        note, words = view.words(t, layer, head, query)
        render(note)
        render(words, column_config=numbers_format(words.columns))
    st.page_link("pages/explore.py", label=_("See layer {layer}, head {head} among all "
                                             "heads").format(layer=layer, head=head),
                 icon=":material/explore:",
                 query_params={"ex_layer": str(layer), "ex_head": str(head)})
    render(view.download(t, nb, layer, head, query), key="ins_download")


main()
