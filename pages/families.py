"""Beyond BERT: a decoder's causal attention beside an encoder's (GPT-2 and BERT on one
sentence), an encoder-decoder's cross-attention (BART: decoder rows, encoder columns), and a
vision transformer's [CLS] attention over the image (ViT). Hung-yi Lee's lecture notes write
the decoder with masked self-attention, the encoder-decoder with attention from decoder to
encoder, and an image as a set of vectors.

Numbers: cached Traces of each model (engine, one family per file), analysis.families (weight
on later tokens, strongest sources, the [CLS] map); figures: plotting.heatmaps,
plotting.families."""

import io
from dataclasses import replace

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import families as fam
from attnviz.engine import DECODER, ENCODER_DECODER, VISION, TraceRequest, demo_image
from attnviz.export.html import Heading, Markdown, Table
from attnviz.i18n import N_, _
from attnviz.plotting import attention_heatmap
from attnviz.plotting import families as fam_plots
from attnviz.plotting.heatmaps import SQUARE_FROM
from attnviz.ui.context import family_model, shown_name
from attnviz.ui.context import report as report_notes
from attnviz.ui.render import render
from attnviz.ui.text import literal

KINDS = {"encoder": N_("encoder"), "decoder": N_("decoder"),
         "encoder-decoder": N_("encoder-decoder"), "vision": N_("vision")}  # Model.kind
MAX_UPLOAD = 8 << 20  # bytes of an uploaded image
TABS = (N_("Decoder vs encoder"), N_("Encoder-decoder: cross-attention"),
        N_("Vision: [CLS] over the image"))  # shown translated


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


def report(model, t) -> None:
    """What the page says with a trace (ui.context.report), the engine's notes in the session's
    language: a trace is shared by every session, so its notes (marked with N_ in the engine)
    are looked up when shown. A note written with the input in it stays English."""
    report_notes(model, replace(t, notes=tuple(_(note) for note in t.notes)))


def encoder_model(ctx: ui.Context):
    if ctx.kind == "encoder":
        return ctx.model
    return ui.cached_model(None, st.session_state.get("device", "auto"))


def legend_name(model, demo: bool) -> str:
    """A model as a legend names it, '<family>: <name>': the bundled model's name and the
    random demo in the session's language, any other name as its folder or Hub id says."""
    if demo:
        return _("{model}: random demo weights").format(model=model.title)
    return _("{model}: {name}").format(
        model=model.title, name=shown_name(model))


def side_by_side(widths: tuple[int, int], *n_tokens: int) -> tuple:
    """Two columns for two heatmaps; one under the other once a heatmap keeps square cells
    (past SQUARE_FROM tokens: a demo model's tokenizer splits a paragraph into characters),
    which in half a page would leave each row a few pixels and its labels on top of each
    other."""
    if max(n_tokens) > SQUARE_FROM:
        return st.container(), st.container()
    return tuple(st.columns(list(widths)))


def decoder_tab(ctx: ui.Context) -> None:
    render(Markdown(_("A decoder predicts the next token, so token $i$ may only look at "
                      "tokens $j \\le i$: its scores above the diagonal become $-\\infty$ "
                      "before the softmax (the *causal mask*), and those weights are exactly 0. "
                      "An encoder such as BERT looks both ways.")))
    gpt, demo = family_model(ctx, DECODER, _("Decoder (GPT-2)"), "fam_dec_model")
    enc = encoder_model(ctx)
    te, td = (ui.cached_trace(m, TraceRequest(ctx.sentence)) for m in (enc, gpt))
    report(enc, te)
    report(gpt, td)
    cols = side_by_side((2, 2), te.n_tokens, td.n_tokens)
    shown = {}
    for col, t, model, prefix in ((cols[0], te, enc, "fam_enc"), (cols[1], td, gpt, "fam_dec")):
        with col:
            layer, head = layer_head(t, prefix, labels=(
                _("{model} layer").format(model=model.title),
                _("{model} head").format(model=model.title)))
            shown[model.title] = t.weights[layer, head]
            render(ui.cached_figure(("fam_w", t.key, layer, head), lambda t=t, m=model,
                                    lh=(layer, head): attention_heatmap(
                t.weights[lh], t.tokens, "weights",
                title=_("{model} ({kind}), layer {layer}, head {head}").format(
                    model=m.title, kind=_(KINDS.get(m.kind, m.kind)), layer=lh[0], head=lh[1]))),
                key=f"{prefix}_fig")
    later = {legend_name(m, random): fam.later_weight(t.weights).mean(axis=1)
             for m, t, random in ((enc, te, False), (gpt, td, demo))}
    render(fam_plots.later_weight_chart(
        later, _("How much of each row's weight goes to later tokens (mean over heads)")),
        key="fam_later")
    e, d = (float(fam.later_weight(t.weights).mean()) for t in (te, td))
    d_max = float(np.abs(td.weights * ~td.mask).max())
    render(Markdown(_("On this sentence {encoder} puts **{share:.1f}%** of a row's weight on "
                      "later tokens (mean over layers, heads and rows); {decoder} puts "
                      "**{d_max:g}** on any later token: the mask makes those weights exactly "
                      "zero, not just small.").format(encoder=literal(enc.title), share=100 * e,
                                                      decoder=literal(gpt.title), d_max=d_max)))
    ui.download_arrays(_("Download both models' weights (.npz)"), lambda: {
        "encoder_tokens": te.tokens, "decoder_tokens": td.tokens,
        "encoder_weights": te.weights, "decoder_weights": td.weights,
        "encoder_later": later[next(iter(later))], "decoder_later": later[list(later)[1]]},
        file_name="attnviz_decoder_vs_encoder.npz", key="fam_dl_dec")


def cross_tab(ctx: ui.Context) -> None:
    render(Markdown(_("An encoder-decoder reads a source with its encoder and writes a target "
                      "with its decoder. Each decoder layer first attends to the target so far "
                      "(causal), then **cross-attends** to the encoder's last layer: queries "
                      "from the decoder, keys and values from the encoder, so rows are target "
                      "tokens and columns source tokens.")))
    bart = family_model(ctx, ENCODER_DECODER, _("Encoder-decoder (BART)"), "fam_ed_model")[0]
    target = st.text_input(_("Target (the decoder's text; empty: the source itself)"),
                           value=ctx.text_pair or "", key="fam_target", bind="query-params",
                           max_chars=2000)
    t = ui.cached_trace(bart, TraceRequest(ctx.sentence, target=target or None))
    report(bart, t)
    layer, head = layer_head(t, "fam_ed", layers=t.cross_weights.shape[0],
                             labels=(_("Decoder layer"), _("Decoder head")))
    cross, dec = t.cross_weights[layer, head], t.decoder_weights[layer, head]
    a, b = side_by_side((3, 2), t.n_tokens, len(t.decoder_tokens))
    with a:
        render(ui.cached_figure(("fam_cross", t.key, layer, head), lambda: (
            attention_heatmap(cross, t.decoder_tokens, "weights", key_tokens=t.tokens,
                              title=_("Cross-attention, decoder layer {layer}, head {head}")
                              .format(layer=layer, head=head))
            .update_layout(xaxis_title_text=_("encoder (source) tokens: keys"),
                           yaxis_title_text=_("decoder (target) tokens: queries")))),
            key="fam_cross")
    with b:
        render(ui.cached_figure(("fam_dself", t.key, layer, head), lambda: (
            attention_heatmap(dec, t.decoder_tokens, "weights",
                              title=_("Decoder self-attention (causal), layer {layer}")
                              .format(layer=layer)))),
            key="fam_dself")
    idx, w = fam.strongest_sources(cross)
    render(Table({_("decoder token"): t.decoder_labels,
                  _("source token it weighs most"): [t.labels[i] for i in idx],
                  _("weight"): w}))
    render(Markdown(_("The decoder reads the target shifted right by one, as in training: it "
                      "starts with {start}, and each row is where the model predicts the target "
                      "token that follows it. Every row of the cross-attention sums to 1 over "
                      "the source tokens.").format(start=literal(t.decoder_tokens[0])),
                    "caption"))
    ui.download_arrays(_("Download the cross- and decoder self-attention (.npz)"), lambda: {
        "encoder_tokens": t.tokens, "decoder_tokens": t.decoder_tokens,
        "cross_weights": t.cross_weights, "decoder_weights": t.decoder_weights},
        file_name="attnviz_cross_attention.npz", key="fam_dl_cross")


def uploaded_image() -> np.ndarray | None:
    up = st.file_uploader(_("Your own image (PNG or JPEG; empty: attnviz's demo image)"),
                          type=["png", "jpg", "jpeg"], key="fam_upload")
    if up is None:
        return None
    if up.size > MAX_UPLOAD:
        render(Markdown(_("That image is too large: the demo image is shown."), "warning"))
        return None
    from PIL import Image

    try:
        with Image.open(io.BytesIO(up.getvalue())) as im:
            if im.width * im.height > 40_000_000:
                raise ValueError("too many pixels")
            return np.asarray(im.convert("RGB"))
    except Exception:  # any unreadable file: say so, keep the page
        render(Markdown(_("That file could not be read as an image: the demo image is shown."),
                        "warning"))
        return None


def vision_tab(ctx: ui.Context) -> None:
    render(Markdown(_("A vision transformer cuts the image into patches; each patch becomes a "
                      "token and a learned **[CLS]** token goes first. Its row of weights says "
                      "where in the image it looks (drawn over the image the model saw, resized "
                      "to its input size).")))
    vit = family_model(ctx, VISION, _("Vision transformer (ViT)"), "fam_vit_model")[0]
    image = uploaded_image()
    image = ui.cached("results", ("demo_image",), demo_image) if image is None else image
    try:
        t = ui.cached_trace(vit, TraceRequest(image=image))
    except ValueError as e:
        render(Markdown(_("Cannot run {title} on this image: {error}").format(
            title=vit.title, error=literal(str(e))), "error"))
        return
    layer, head = layer_head(t, "fam_vit", mean=True)
    grid = fam.cls_patch_map(t.weights, layer, None if head == "mean" else head, t.patch_grid)
    title = (_("[CLS] → patches, layer {layer}, mean of the heads").format(layer=layer)
             if head == "mean" else
             _("[CLS] → patches, layer {layer}, head {head}").format(layer=layer, head=head))
    render(ui.cached_figure(("fam_vit", t.key, layer, head), lambda: (
        fam_plots.image_attention(t.image, grid, title))),
        key="fam_vit_fig")
    R, C = t.patch_grid
    rows = t.weights[layer].mean(axis=0) if head == "mean" else t.weights[layer, head]
    best = _(", ").join(f"({r},{c}) {w:.3f}" for r, c, w in fam.top_patches(grid, 5))
    render(Markdown(_("{R} x {C} patches of {p} x {p} pixels, {n} tokens. [CLS] keeps "
                      "**{own:.3f}** of its weight on itself; the patches it weighs most (row, "
                      "column): {best}.").format(R=R, C=C, p=vit.patch, n=t.n_tokens,
                                                 own=float(rows[0, 0]), best=best)))
    ui.download_arrays(_("Download the [CLS] map and the image (.npz)"), {
        "cls_map": grid, "image": t.image, "patch_grid": np.asarray(t.patch_grid)},
        file_name=f"attnviz_vit_cls_L{layer}.npz", key="fam_dl_vit")


def main() -> None:
    ui.ensure_router()  # a first request for this page hands over to app.py (once)
    render(Heading(_("Beyond BERT: decoders, encoder-decoders, images"), 1))
    render(Markdown(_("The same attention, $w_{ij} = \\mathrm{softmax}_j(q^i \\cdot "
                      "k^j/\\sqrt{d_k})$, in three other shapes of transformer. Models come "
                      "from a folder or from your Hugging Face cache (nothing is downloaded; "
                      "none but the bundled BERT ships with attnviz).")))
    ctx = ui.context()
    if not ui.require_text(ctx):
        return
    tabs_view(ctx)


@ui.fragment  # the tabs and the choices inside them rerun only this part of the page
def tabs_view(ctx: ui.Context) -> None:
    tabs = st.tabs([_(tab) for tab in TABS],  # labels (and so fam_tab in a URL) in the language
                   key="fam_tab", on_change="rerun", bind="query-params")
    for tab, draw in zip(tabs, (decoder_tab, cross_tab, vision_tab), strict=True):
        if tab.open:
            with tab:
                try:
                    draw(ctx)
                except ValueError as e:  # what a family cannot do: the engine's plain words
                    render(Markdown(literal(str(e)), "error"))


main()
