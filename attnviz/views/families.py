"""Beyond BERT: a decoder's causal attention beside an encoder's (GPT-2 and BERT on one
sentence), an encoder-decoder's cross-attention (BART: decoder rows, encoder columns), and a
vision transformer's [CLS] attention over the image (ViT) (pages/families.py). Hung-yi Lee's
lecture notes write the decoder with masked self-attention, the encoder-decoder with attention
from decoder to encoder, and an image as a set of vectors.

Numbers: each model's Trace (engine, one family per file), analysis.families (weight on later
tokens, strongest sources, the [CLS] map); figures: plotting.heatmaps, plotting.families."""

from __future__ import annotations

import io
from dataclasses import replace

import numpy as np

from ..analysis import families as fam
from ..i18n import N_, _
from ..plotting import attention_heatmap
from ..plotting import families as fam_plots
from ..plotting.heatmaps import SQUARE_FROM
from .blocks import Heading, Markdown, Table
from .common import literal, numbers, shown_name, trace_report

KINDS = {"encoder": N_("encoder"), "decoder": N_("decoder"),
         "encoder-decoder": N_("encoder-decoder"), "vision": N_("vision")}  # Model.kind
TABS = (N_("Decoder vs encoder"), N_("Encoder-decoder: cross-attention"),
        N_("Vision: [CLS] over the image"))  # shown translated


def intro() -> list:
    return [Heading(_("Beyond BERT: decoders, encoder-decoders, images"), 1),
            Markdown(_("The same attention, $w_{ij} = \\mathrm{softmax}_j(q^i \\cdot "
                       "k^j/\\sqrt{d_k})$, in three other shapes of transformer. Models come "
                       "from a folder or from your Hugging Face cache (nothing is downloaded; "
                       "two ship with attnviz: the bundled BERT and the decoder "
                       "SmolLM2-135M-Instruct)."))]


def report(model, t) -> list:
    """What the page says with a trace (common.trace_report), the engine's notes in the current
    language: a trace is shared by every session, so its notes (marked with N_ in the engine)
    are looked up when shown. A note written with the input in it stays English."""
    return trace_report(model, replace(t, notes=tuple(_(note) for note in t.notes)))


def engine_error(error: Exception) -> Markdown:
    """What a family cannot do, in the engine's plain words."""
    return Markdown(literal(str(error)), "error")


def legend_name(model, demo: bool) -> str:
    """A model as a legend names it, '<family>: <name>': the bundled model's name and the
    random demo in the current language, any other name as its folder or Hub id says."""
    if demo:
        return _("{model}: random demo weights").format(model=model.title)
    return _("{model}: {name}").format(model=model.title, name=shown_name(model))


def side_by_side(*n_tokens: int) -> bool:
    """Two heatmaps side by side; one under the other once a heatmap keeps square cells (past
    SQUARE_FROM tokens: a demo model's tokenizer splits a paragraph into characters), which
    in half a page would leave each row a few pixels and its labels on top of each other."""
    return max(n_tokens) <= SQUARE_FROM


def head_of(weights, head):
    """One head's [.., tokens, tokens] weights, or their mean over the heads ("mean")."""
    return weights.mean(axis=0) if head == "mean" else weights[head]


# ------------------------------------------------------------ decoder vs encoder
def decoder_intro() -> Markdown:
    return Markdown(_("A decoder predicts the next token, so token $i$ may only look at "
                      "tokens $j \\le i$: its scores above the diagonal become $-\\infty$ "
                      "before the softmax (the *causal mask*), and those weights are exactly 0. "
                      "An encoder such as BERT looks both ways."))


def weights_figure(model, t, layer: int, head: int):
    return attention_heatmap(
        t.weights[layer, head], t.tokens, "weights",
        title=_("{model} ({kind}), layer {layer}, head {head}").format(
            model=model.title, kind=_(KINDS.get(model.kind, model.kind)), layer=layer,
            head=head))


def later(enc, te, dec, td, demo: bool) -> dict:
    """Each model's share of a row's weight on later tokens, per layer (mean over heads)."""
    return {legend_name(m, random): fam.later_weight(t.weights).mean(axis=1)
            for m, t, random in ((enc, te, False), (dec, td, demo))}


def later_chart(shares: dict):
    return fam_plots.later_weight_chart(
        shares, _("How much of each row's weight goes to later tokens (mean over heads)"))


def decoder_summary(enc, te, dec, td) -> Markdown:
    e = float(fam.later_weight(te.weights).mean())
    d_max = float(np.abs(td.weights * ~td.mask).max())
    return Markdown(_("On this sentence {encoder} puts **{share:.1f}%** of a row's weight on "
                      "later tokens (mean over layers, heads and rows); {decoder} puts "
                      "**{d_max:g}** on any later token: the mask makes those weights exactly "
                      "zero, not just small.").format(encoder=literal(enc.title), share=100 * e,
                                                      decoder=literal(dec.title), d_max=d_max))


def decoder_download(te, td, shares: dict):
    return numbers(_("Download both models' weights (.npz)"), lambda: {
        "encoder_tokens": te.tokens, "decoder_tokens": td.tokens,
        "encoder_weights": te.weights, "decoder_weights": td.weights,
        "encoder_later": shares[next(iter(shares))], "decoder_later": shares[list(shares)[1]]},
        "attnviz_decoder_vs_encoder.npz")


def decoder_tab(enc, te, dec, td, demo: bool, heads=((0, 0), (0, 0))) -> list:
    """Tab 1 (the widgets left out); `heads`: (layer, head) of the encoder, of the decoder.
    Its figures: the encoder's, the decoder's, later_chart."""
    shares = later(enc, te, dec, td, demo)
    return [decoder_intro(), *report(enc, te), *report(dec, td),
            weights_figure(enc, te, *heads[0]), weights_figure(dec, td, *heads[1]),
            later_chart(shares), decoder_summary(enc, te, dec, td),
            decoder_download(te, td, shares)]


# ------------------------------------------------------------ encoder-decoder
def cross_intro() -> Markdown:
    return Markdown(_("An encoder-decoder reads a source with its encoder and writes a target "
                      "with its decoder. Each decoder layer first attends to the target so far "
                      "(causal), then **cross-attends** to the encoder's last layer: queries "
                      "from the decoder, keys and values from the encoder, so rows are target "
                      "tokens and columns source tokens."))


def cross_figure(t, layer: int, head: int):
    return attention_heatmap(
        t.cross_weights[layer, head], t.decoder_tokens, "weights", key_tokens=t.tokens,
        title=_("Cross-attention, decoder layer {layer}, head {head}").format(
            layer=layer, head=head)).update_layout(
        xaxis_title_text=_("encoder (source) tokens: keys"),
        yaxis_title_text=_("decoder (target) tokens: queries"))


def decoder_self_figure(t, layer: int, head: int):
    return attention_heatmap(t.decoder_weights[layer, head], t.decoder_tokens, "weights",
                             title=_("Decoder self-attention (causal), layer {layer}").format(
                                 layer=layer))


def cross_text(t, layer: int, head: int) -> list:
    """Each decoder token's strongest source, and how the decoder reads the target."""
    idx, w = fam.strongest_sources(t.cross_weights[layer, head])
    return [Table({_("decoder token"): t.decoder_labels,
                   _("source token it weighs most"): [t.labels[i] for i in idx],
                   _("weight"): w}),
            Markdown(_("The decoder reads the target shifted right by one, as in training: it "
                       "starts with {start}, and each row is where the model predicts the "
                       "target token that follows it. Every row of the cross-attention sums to "
                       "1 over the source tokens.").format(start=literal(t.decoder_tokens[0])),
                     "caption")]


def cross_download(t):
    return numbers(_("Download the cross- and decoder self-attention (.npz)"), lambda: {
        "encoder_tokens": t.tokens, "decoder_tokens": t.decoder_tokens,
        "cross_weights": t.cross_weights, "decoder_weights": t.decoder_weights},
        "attnviz_cross_attention.npz")


def cross_tab(model, t, layer: int = 0, head: int = 0) -> list:
    """Tab 2 (the widgets left out). Its figures: cross_figure, decoder_self_figure."""
    return [cross_intro(), *report(model, t), cross_figure(t, layer, head),
            decoder_self_figure(t, layer, head), *cross_text(t, layer, head), cross_download(t)]


# ------------------------------------------------------------ vision
def vision_intro() -> Markdown:
    return Markdown(_("A vision transformer cuts the image into patches; each patch becomes a "
                      "token and a learned **[CLS]** token goes first. Its row of weights says "
                      "where in the image it looks (drawn over the image the model saw, resized "
                      "to its input size)."))


MAX_PIXELS = 40_000_000  # pixels of an image read (its width x height)


def read_image(data: bytes) -> np.ndarray:
    """An image file's bytes (PNG, JPEG...) as RGB pixels [height, width, 3]; ValueError past
    MAX_PIXELS, PIL's own error for a file it cannot read."""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        if im.width * im.height > MAX_PIXELS:
            raise ValueError("too many pixels")
        return np.asarray(im.convert("RGB"))


def too_large() -> Markdown:
    return Markdown(_("That image is too large: the demo image is shown."), "warning")


def unreadable() -> Markdown:
    return Markdown(_("That file could not be read as an image: the demo image is shown."),
                    "warning")


def cannot_run(model, error: Exception) -> Markdown:
    return Markdown(_("Cannot run {title} on this image: {error}").format(
        title=model.title, error=literal(str(error))), "error")


def cls_map(t, layer: int, head) -> np.ndarray:
    """[CLS]'s weights on the patches, as the patch grid (head "mean": over the heads)."""
    return fam.cls_patch_map(t.weights, layer, None if head == "mean" else head, t.patch_grid)


def vision_figure(t, layer: int, head):
    title = (_("[CLS] → patches, layer {layer}, mean of the heads").format(layer=layer)
             if head == "mean" else
             _("[CLS] → patches, layer {layer}, head {head}").format(layer=layer, head=head))
    return fam_plots.image_attention(t.image, cls_map(t, layer, head), title)


def vision_summary(model, t, layer: int, head) -> Markdown:
    grid = cls_map(t, layer, head)
    R, C = t.patch_grid
    rows = head_of(t.weights[layer], head)
    best = _(", ").join(f"({r},{c}) {w:.3f}" for r, c, w in fam.top_patches(grid, 5))
    return Markdown(_("{R} x {C} patches of {p} x {p} pixels, {n} tokens. [CLS] keeps "
                      "**{own:.3f}** of its weight on itself; the patches it weighs most (row, "
                      "column): {best}.").format(R=R, C=C, p=model.patch, n=t.n_tokens,
                                                 own=float(rows[0, 0]), best=best))


def vision_download(t, layer: int, head):
    return numbers(_("Download the [CLS] map and the image (.npz)"), {
        "cls_map": cls_map(t, layer, head), "image": t.image,
        "patch_grid": np.asarray(t.patch_grid)}, f"attnviz_vit_cls_L{layer}.npz")


def vision_tab(model, t, layer: int = 0, head="mean") -> list:
    """Tab 3 (the widgets left out). Its figure: vision_figure."""
    return [vision_intro(), vision_figure(t, layer, head), vision_summary(model, t, layer, head),
            vision_download(t, layer, head)]
