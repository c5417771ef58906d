"""Head statistics after Clark et al. 2019 ("What Does BERT Look At?") for the sentence in the
box, in either their exact conventions or attnviz's, and attention rollout and attention flow
(Abnar & Zuidema 2020) next to the raw attention of a layer.

Numbers: analysis.head_stats, analysis.rollout and analysis.flow (through ui.flow, with a
progress bar) on the cached Trace's weights, computed once per server; what it shows:
views.head_stats."""

import functools

import streamlit as st

from attnviz import ui
from attnviz.analysis.head_stats import CONVENTIONS
from attnviz.i18n import _
from attnviz.ui.flow import flow_of
from attnviz.ui.flow import prepare as prepare_flow
from attnviz.ui.live_chart import clicked_cell, selected_row
from attnviz.ui.render import render
from attnviz.views import head_stats as view


def stats_of(t, conventions: str, words: bool) -> dict:
    """{statistic: [layers, heads]} of a trace, once per server."""
    return ui.cached("results", ("head_stats", t.key, conventions, words),
                     lambda: view.stats_of(t, conventions, words))


def maps_of(t, layer: int, words: bool) -> dict:
    """Raw (mean of the layer's heads), rollout and (up to flow.MAX_TOKENS) flow, [n, n]."""
    if t.holds_weights:
        return ui.cached("results", ("hs_maps", t.key, layer, words),
                         lambda: view.maps_of(t, layer, words, flow_of(t, layer)))
    return ui.with_progress(  # a long decoder input: rolled out a layer at a time
        "results", ("hs_maps", t.key, layer, words), _("Rolling out the layers:"),
        lambda progress: view.maps_of(t, layer, words, flow_of(t, layer), progress))


def pick_cell(n_layers: int, n_heads: int) -> None:
    """A click on the map opens that head (a click event of another shape: nothing)."""
    cell = clicked_cell("hs_map", n_layers, n_heads)
    if cell is not None:
        st.session_state["hs_layer"], st.session_state["hs_head"] = cell


def pick_row(n_layers: int, n_heads: int) -> None:
    """A selected row of the table opens its head (a selection of another shape: nothing)."""
    row = selected_row(st.session_state.get("hs_table"), n_layers * n_heads)
    if row is not None:
        st.session_state["hs_layer"], st.session_state["hs_head"] = divmod(row, n_heads)


def statistics_tab(t, words: bool) -> None:
    conv = st.radio(_("Conventions (clark: as in Clark et al.'s code, number for number)"),
                    list(CONVENTIONS), key="hs_conv", horizontal=True, bind="query-params")
    render(view.conventions_note(t, conv))
    stats = stats_of(t, conv, words)
    c1, c2, c3 = st.columns([1, 1, 3])
    layer = c1.selectbox(_("Layer"), range(t.n_layers), key="hs_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(t.n_heads), key="hs_head", bind="query-params")
    with c3:
        st.page_link("pages/explore.py", label=_(
            "Open layer {layer}, head {head} in All heads").format(layer=layer, head=head),
                     icon=":material/explore:",
                     query_params={"ex_layer": str(layer), "ex_head": str(head)})
        st.page_link("pages/inside_score.py", label=_(
            "Open layer {layer}, head {head} inside one score").format(layer=layer, head=head),
                     icon=":material/biotech:",
                     query_params={"ins_layer": str(layer), "ins_head": str(head)})
    # Built once per server for this trace, these choices and head: a rerun draws the cached
    # figures
    render(ui.cached_figure(("hs_map", t.key, conv, words, layer, head),
                            lambda: view.stats_figure(view.shown(t, stats), layer, head)),
           key="hs_map", on_select=functools.partial(pick_cell, t.n_layers, t.n_heads),
           selection_mode="points")
    box = st.expander(_("{head} on this sentence").format(head=view.one_head_title(layer, head)),
                      expanded=t.n_tokens <= 40)
    render(ui.cached_figure(("hs_one", t.key, words, layer, head),
                            lambda: view.one_head_figure(t, words, layer, head)),
           where=box, key="hs_one")
    table = view.stats_table(view.shown(t, stats))
    n_layers, n_heads = t.n_layers, t.n_heads
    render(table, key="hs_table", on_select=lambda: pick_row(n_layers, n_heads),
           selection_mode="single-row", height=280,
           column_config={c: st.column_config.NumberColumn(format="%.4f")
                          for c in view.names().values()})
    render(view.table_note())
    render(view.stats_download(t, conv, words, stats), key="hs_download")


def flow_tab(t, words: bool) -> None:
    render(view.flow_intro())
    upto = st.select_slider(_("Up to layer"), options=list(range(t.n_layers)),
                            value=t.n_layers - 1, key="hs_roll", bind="query-params")
    maps = maps_of(t, upto, words)
    if "flow" not in maps:
        render(view.flow_missing(t, upto))
    render(ui.cached_figure(("hs_rollout", t.key, upto, words),
                            lambda: view.maps_figure(t, maps, upto, words)), key="hs_rollout")
    render(view.maps_notes(t, maps))
    render(view.maps_download(t, maps, upto, words), key="hs_download_flow")


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    t = ui.trace_or_message(ctx, streams=True)
    if t is None:
        return
    prepare_flow(t)  # the flow tab's worker processes start while the statistics show
    tabs_view(ctx)
    render(view.caveat())


@ui.fragment  # word level, the tabs, layer, head and a click on the map rerun only this part
def tabs_view(ctx: ui.Context) -> None:
    t = ctx.trace()  # from the cache: the fragment keeps no trace of its own between reruns
    words = st.toggle(_("Word level"), key="hs_words", bind="query-params",
                      help=_("Merge word pieces into words: attention to a word is the sum over "
                             "its pieces, attention from a word the mean (Clark et al.)."))
    tabs = st.tabs([_(tab) for tab in view.TABS], key="hs_tab", on_change="rerun",
                   bind="query-params")  # labels (and so hs_tab in a URL) in the language
    for tab, draw in zip(tabs, (statistics_tab, flow_tab), strict=True):
        if tab.open:
            with tab:
                draw(t, words)


main()
