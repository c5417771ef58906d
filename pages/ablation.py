"""Switch it off and see: positions and heads removed (zero or mean ablation), the effect on a
measure as a layer x head map, and activation patching between two sentences.

Numbers: analysis.ablation on the engine's one eager pass with an intervention
(engine.intervene); what it shows: views.ablation."""

import plotly.graph_objects as go
import streamlit as st

from attnviz import ui
from attnviz.engine.request import TraceRequest
from attnviz.i18n import _, language
from attnviz.ui.render import render
from attnviz.views import ablation as view

MEASURES = tuple(view.MEASURE_NAMES)
MODES = tuple(view.MODE_NAMES)
SHOWN = "abl_shown"  # the later layers' head shown: session state and link (shown_choice)


def draw(blocks: list, name: str) -> None:
    """Render a view's blocks, each figure under its own key (name and its place), so it is
    drawn in place and laid out again on a phone (ui.show_figure, ui.phone_layout)."""
    for k, block in enumerate(blocks):
        render(block, key=f"ablfig_{name}_{k}" if isinstance(block, go.Figure) else None)


def progress_of(p):
    """analysis' (done, total) as the progress bar's (fraction, message)."""
    return lambda done, total: p(done / total, f"{done}/{total}")


def run_map(name: str, key: tuple, label: str, make) -> None:
    """A view's blocks computed once per key (`make(progress)`, a bar while it runs), drawn;
    what the model or text cannot show, in plain words."""
    try:
        draw(ui.with_progress("results", key, label, make, quick=True), name)
    except ValueError as e:
        render(view.message(e))


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    ctx = ui.context()
    render(view.intro())
    t = ui.trace_or_message(ctx)
    if t is None:
        return
    model, request = ctx.model, ctx.request
    maps = request  # what the maps run on: the text, or its first MAX_TOKENS tokens if asked
    if t.n_tokens > view.MAX_TOKENS:
        render(view.long_text(t.n_tokens))
        cut = st.toggle(_("Compute the maps on the first {n} tokens").format(n=view.MAX_TOKENS),
                        key="abl_first", bind="query-params")
        maps = view.first_tokens(t) if cut else None
    if maps is not None:
        maps_view(model, maps)
    one_head_view(ctx)
    if request.text is None or maps is None:
        return
    render(view.patching_heading())
    corrupted = st.text_input(_("Corrupted sentence (same number of tokens)"),
                              value="I saw a dog", key="abl_corrupted", bind="query-params",
                              max_chars=20_000)  # the sidebar sentence's cap (ui.boxes)
    other = TraceRequest(corrupted, **request.options())
    other = other if maps is request else view.for_maps(model, other)  # its first tokens
    run_map("patch", ("ablation_patch", model.key, maps, other, language(), "body"),
            _("Patching each head and token..."), lambda p: view.patching_parts(
                model, maps, other, progress_of(p), heading=False))
    if getattr(model, "n_decoder_layers", 0):  # BART: the decoder's heads too
        run_map("patch_decoder", ("ablation_patch_decoder", model.key, maps, other, language()),
                _("Patching each decoder head..."),
                lambda p: view.decoder_patching_parts(model, maps, other, progress_of(p)))


def maps_view(model, request: TraceRequest) -> None:
    """The lesson's view (BERT's two saws) and the head-importance maps of `request`."""
    if request.image is None and ui.bert_like(model):  # the lesson's view: BERT's two saws
        run_map("lesson", ("ablation_lesson", model.key, request, language()),
                _("Removing each head..."),
                lambda p: view.lesson_parts(model, request, progress_of(p)))
    c1, c2 = st.columns(2)
    measure = c1.selectbox(_("Measure"), MEASURES, key="abl_measure", bind="query-params",
                           format_func=lambda m: _(view.MEASURE_NAMES[m]))
    mode = c2.radio(_("Ablation"), MODES, key="abl_mode", bind="query-params",
                    format_func=lambda m: _(view.MODE_NAMES[m]))
    run_map("map", ("ablation_map", model.key, request, measure, mode, language()),
            _("Removing each head..."),
            lambda p: view.importance_parts(model, request, measure, mode, progress_of(p)))
    if getattr(model, "n_decoder_layers", 0):  # BART: the decoder's heads as the encoder's
        run_map("decoder_map", ("ablation_decoder_map", model.key, request, mode, language()),
                _("Removing each decoder head..."),
                lambda p: view.decoder_importance_parts(model, request, mode, progress_of(p)))


@ui.fragment  # choosing a head reruns only this part
def one_head_view(ctx: ui.Context) -> None:
    model, request = ctx.model, ctx.request
    render(view.one_head_intro())
    part, n_layers = "encoder", model.n_layers
    if getattr(model, "n_decoder_layers", 0):  # BART: the decoder's heads too
        part = st.radio(_("Attention"), tuple(view.PART_NAMES), key="abl_part", horizontal=True,
                        format_func=lambda p: _(view.PART_NAMES[p]))
        n_layers = model.n_layers if part == "encoder" else model.n_decoder_layers
    c1, c2, c3 = st.columns(3)
    layer = c1.selectbox(_("Layer"), range(n_layers), key="abl_layer", bind="query-params")
    head = c2.selectbox(_("Head"), range(model.n_heads), key="abl_head", bind="query-params")
    mode = c3.radio(_("Ablation"), MODES, key="abl_one_mode", format_func=lambda m: _(
        view.MODE_NAMES[m]))
    shown = shown_choice(model.n_heads)
    try:
        draw(ui.cached("results", ("ablation_one", model.key, request, part, layer, head,
                                   mode, shown, language()),
                       lambda: view.one_head_parts(model, request, layer, head, mode,
                                                   None if shown < 0 else shown, part)), "one")
    except ValueError as e:
        render(view.message(e))


def shown_choice(n_heads: int) -> int:
    """The later layers' head shown (-1: the layer's mean). Not bound by Streamlit, which would
    write the shown label ("head 4") into the link: the link holds a value that reads the same
    in every language (?abl_shown=h4; the mean, the default, is left out), and older links'
    labels still open the head they named (views.ablation.shown_from_link)."""
    options = range(-1, n_heads)
    if st.session_state.get(SHOWN) not in options:
        st.session_state[SHOWN] = view.shown_from_link(st.query_params.get(SHOWN), n_heads)
    shown = st.selectbox(_("Later layers' weights shown"), options, key=SHOWN, format_func=lambda
                         h: _("mean of the layer's heads") if h < 0 else _("head {h}").format(h=h))
    link = view.shown_in_link(shown)
    if link == view.SHOWN_MEAN:
        st.query_params.pop(SHOWN, None)
    elif st.query_params.get(SHOWN) != link:
        st.query_params[SHOWN] = link
    return shown


main()
