"""Beyond BERT: a decoder's causal attention beside an encoder's (GPT-2 and BERT on one
sentence), an encoder-decoder's cross-attention (BART), and a vision transformer's [CLS]
attention over the image (ViT).

Numbers: cached Traces of each model; what it shows: views.families."""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.engine import DECODER, ENCODER_DECODER, VISION, TraceRequest, demo_image
from attnviz.i18n import _
from attnviz.ui.context import family_model
from attnviz.ui.render import render
from attnviz.views import families as view

MAX_UPLOAD = 8 << 20  # bytes of an uploaded image


def layer_head(t, prefix: str, layers: int | None = None, mean: bool = False,
               labels: tuple[str, str] | None = None):
    """Layer and head selectors (bound to the URL), reset when the model has fewer; `labels`:
    the two selectors' labels (default: Layer, Head)."""
    layers = t.n_layers if layers is None else layers
    heads = (["mean"] if mean else []) + list(range(t.n_heads))
    for key, options in ((f"{prefix}_layer", range(layers)), (f"{prefix}_head", heads)):
        if key in st.session_state and st.session_state[key] not in options:
            del st.session_state[key]
    a, b = st.columns(2)
    layer_label, head_label = labels or (_("Layer"), _("Head"))
    layer = a.selectbox(layer_label, range(layers), key=f"{prefix}_layer", bind="query-params",
                        format_func=lambda i: _("layer {layer}").format(layer=i))
    head = b.selectbox(head_label, heads, key=f"{prefix}_head", bind="query-params",
                       format_func=lambda h: _("mean of the heads") if h == "mean"
                       else _("head {head}").format(head=h))
    return layer, head


def columns(widths: tuple[int, int], *n_tokens: int) -> tuple:
    """Two columns for two heatmaps, or two containers one under the other."""
    if view.side_by_side(*n_tokens):
        return tuple(st.columns(list(widths)))
    return st.container(), st.container()


def decoder_tab(ctx: ui.Context) -> None:
    render(view.decoder_intro())
    gpt, demo = family_model(ctx, DECODER, _("Decoder (GPT-2)"), "fam_dec_model")
    enc = (ctx.model if ctx.kind == "encoder"
           else ui.cached_model(None, st.session_state.get("device", "auto")))
    te, td = (ui.cached_trace(m, TraceRequest(ctx.sentence)) for m in (enc, gpt))
    render(view.report(enc, te) + view.report(gpt, td))
    cols = columns((2, 2), te.n_tokens, td.n_tokens)
    for col, t, model, prefix in ((cols[0], te, enc, "fam_enc"), (cols[1], td, gpt, "fam_dec")):
        with col:
            layer, head = layer_head(t, prefix, labels=(
                _("{model} layer").format(model=model.title),
                _("{model} head").format(model=model.title)))
            render(ui.cached_figure(("fam_w", t.key, layer, head),
                                    lambda t=t, m=model, lh=(layer, head):
                                    view.weights_figure(m, t, *lh)), key=f"{prefix}_fig")
    shares = view.later(enc, te, gpt, td, demo)
    render(view.later_chart(shares), key="fam_later")
    render(view.decoder_summary(enc, te, gpt, td))
    render(view.decoder_download(te, td, shares), key="fam_dl_dec")


def cross_tab(ctx: ui.Context) -> None:
    render(view.cross_intro())
    bart = family_model(ctx, ENCODER_DECODER, _("Encoder-decoder (BART)"), "fam_ed_model")[0]
    target = st.text_input(_("Target (the decoder's text; empty: the source itself)"),
                           value=ctx.text_pair or "", key="fam_target", bind="query-params",
                           max_chars=2000)
    t = ui.cached_trace(bart, TraceRequest(ctx.sentence, target=target or None))
    render(view.report(bart, t))
    layer, head = layer_head(t, "fam_ed", layers=t.cross_weights.shape[0],
                             labels=(_("Decoder layer"), _("Decoder head")))
    a, b = columns((3, 2), t.n_tokens, len(t.decoder_tokens))
    render(ui.cached_figure(("fam_cross", t.key, layer, head),
                            lambda: view.cross_figure(t, layer, head)), where=a, key="fam_cross")
    render(ui.cached_figure(("fam_dself", t.key, layer, head),
                            lambda: view.decoder_self_figure(t, layer, head)),
           where=b, key="fam_dself")
    render(view.cross_text(t, layer, head))
    render(view.cross_download(t), key="fam_dl_cross")


def uploaded_image() -> np.ndarray | None:
    up = st.file_uploader(_("Your own image (PNG or JPEG; empty: attnviz's demo image)"),
                          type=["png", "jpg", "jpeg"], key="fam_upload")
    if up is None:
        return None
    if up.size > MAX_UPLOAD:
        render(view.too_large())
        return None
    try:
        return view.read_image(up.getvalue())
    except Exception:  # any unreadable file: say so, keep the page
        render(view.unreadable())
        return None


def vision_tab(ctx: ui.Context) -> None:
    render(view.vision_intro())
    vit = family_model(ctx, VISION, _("Vision transformer (ViT)"), "fam_vit_model")[0]
    image = uploaded_image()
    image = ui.cached("results", ("demo_image",), demo_image) if image is None else image
    try:
        t = ui.cached_trace(vit, TraceRequest(image=image))
    except ValueError as e:
        render(view.cannot_run(vit, e))
        return
    layer, head = layer_head(t, "fam_vit", mean=True)
    render(ui.cached_figure(("fam_vit", t.key, layer, head),
                            lambda: view.vision_figure(t, layer, head)), key="fam_vit_fig")
    render(view.vision_summary(vit, t, layer, head))
    render(view.vision_download(t, layer, head), key="fam_dl_vit")


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(view.intro())
    ctx = ui.context()
    if not ui.require_text(ctx):
        return
    tabs_view(ctx)


@ui.fragment  # the tabs and the choices inside them rerun only this part of the page
def tabs_view(ctx: ui.Context) -> None:
    # labels (and so fam_tab in a URL) in the language
    tabs = st.tabs([_(tab) for tab in view.TABS], key="fam_tab", on_change="rerun",
                   bind="query-params")
    for tab, draw in zip(tabs, (decoder_tab, cross_tab, vision_tab), strict=True):
        if tab.open:
            with tab:
                try:
                    draw(ctx)
                except ValueError as e:  # what a family cannot do: the engine's plain words
                    render(view.engine_error(e))


main()
