"""Images: an image is a set of pixel vectors; attention vs convolution (the lecture's
"self-attention for images" and "self-attention vs CNN"; pages/images.py).

Cordonnier, Loukas & Jaggi 2020 (arXiv:1911.03584), Theorem 1: k^2 attention heads with a
relative positional encoding can express any k x k convolution; the lecture's slogan ("CNN is a
simplified self-attention") is attributed to the lecture.

Numbers: analysis.image_attention (a pixel's attention map, fields by gradients; `study`) and
analysis.conv_attention (a convolution as attention, whether one head can be it;
`as_attention`); figures: plotting.images.
"""

from __future__ import annotations

import numpy as np

from ..analysis import conv_attention
from ..analysis import image_attention as image_attn
from ..i18n import N_, _
from ..plotting import images as image_plots
from .blocks import Heading, Markdown, Metric
from .common import numbers

TABS = (N_("Attention map vs conv window"), N_("Convolution as attention"))
KERNEL_NAMES = {"random": N_("random"), "blur": N_("blur"), "edges": N_("edges"),
                "sharpen": N_("sharpen")}  # conv_attention.KERNELS, shown translated
COLOUR_WIDTHS = ("0.05", "0.1", "0.2", "0.4", "0.8")  # σ_c offered
POSITION_WIDTHS = ("1", "2", "4", "8", "16", "∞")  # σ_p offered (px)
ALPHAS = ("0.5", "1", "2", "4", "8", "16", "64", "hard")  # α offered


def intro() -> list:
    return [Heading(_("Images: attention vs convolution"), 1), Markdown(_(
        "An image is a **set of vectors**: one per pixel (its colour and its position). "
        "Self-attention lets a pixel look at *every* pixel, with weights that depend on the "
        "content; a convolution looks only in a fixed $k\\times k$ window, same weights "
        "everywhere. The lecture's slogan: *CNN is a simplified self-attention; "
        "self-attention is a CNN with a learnable receptive field.* The paper it cites "
        "(Cordonnier, Loukas & Jaggi 2020, Theorem 1) proves a precise version: "
        "self-attention with $k^2$ heads and a relative positional encoding can express any "
        "$k\\times k$ convolution (second tab)."
    ))]


# ------------------------------------------------------------ tab 1: attention map vs window
def study(size: int, row: int, col: int, k: int, depth: int, sc: float, sp: float | None):
    """Both models on the picked pixel, with their gradients (image_attention.study_pixel)."""
    return image_attn.study_pixel(image_attn.load_image(size), row, col, k, depth, sc, sp)


def position_width(text: str) -> float | None:
    """σ_p as offered ("∞": None, no position term)."""
    return None if text == "∞" else float(text)


def field_intro() -> Markdown:
    return Markdown(_(
        "The attention layer here is small and hand-set: pixel $i$ is "
        "$z_i = (c_i/\\sigma_c,\\ p_i/\\sigma_p)$, with query $(z_i, 1)$, key "
        "$(z_j, -|z_j|^2/2)$ and value $c_j$, so "
        "$\\alpha'_{i,j} = \\mathrm{softmax}_j(q_i\\cdot k_j) \\propto "
        "e^{-|c_i-c_j|^2/2\\sigma_c^2 - |p_i-p_j|^2/2\\sigma_p^2}$: a pixel attends to pixels "
        "of a **similar colour** nearby (a bilateral filter written as attention). The "
        "convolution is a $k\\times k$ mean filter: weight $1/k^2$ in its window, 0 outside."
    ))


def picture(size: int, row: int, col: int):
    return image_plots.image_figure(image_attn.load_image(size), (row, col),
                                    _("Click a pixel (or type it above)"))


def attention_map(s, row: int, col: int):
    return image_plots.map_figure(s.attention_map, (row, col), _("Attention weights, layer 1"))


def conv_map(s, row: int, col: int, k: int):
    return image_plots.map_figure(s.conv_map, (row, col),
                                  _("Conv {k}×{k} window weights").format(k=k))


def field_text(k: int, depth: int) -> list:
    r = depth * (k // 2)
    return [Heading(_("After 1 layer: which input pixels matter?") if depth == 1 else
                    _("After {depth} layers: which input pixels matter?").format(depth=depth),
                    3),
            Markdown(_(
                "Measured with gradients: the influence $I(p, j) = \\sum |\\partial y_p / "
                "\\partial x_j|$ of input pixel $j$ on the picked output pixel $p$ (log scale; "
                "blank = exactly 0). Convolution: the field is the square of side "
                "$l(k-1)+1 = {side}$ (dashed). Attention: every pixel, already at layer "
                "1.").format(side=2 * r + 1))]


def conv_influence(s, row: int, col: int, k: int, depth: int):
    n, r = s.field_sizes, depth * (k // 2)
    return image_plots.map_figure(
        s.conv_influence, (row, col), _("Conv, {depth} layer(s): {n} pixels (analytic "
                                        "{analytic})").format(
            depth=depth, n=n["conv"], analytic=n["conv_analytic"]),
        "influence", (row - r, row + r, col - r, col + r))


def attention_influence(s, row: int, col: int, depth: int):
    n = s.field_sizes
    return image_plots.map_figure(
        s.attention_influence, (row, col),
        _("Attention, {depth} layer(s): {n} of {total} pixels").format(
            depth=depth, n=n["attention"], total=n["image"]), "influence")


def underflow(s) -> list:
    """Said when some attention weights round to exactly 0."""
    if s.field_sizes["attention"] >= s.field_sizes["image"]:
        return []
    return [Markdown(_("Some attention weights are so small they round to exactly 0 in "
                       "float64 (below 1e-308): widen σ_p or σ_c to see the whole image "
                       "again."), "info")]


def outputs(s, size: int, depth: int):
    return image_plots.images_row(
        [image_attn.load_image(size), s.conv_output, s.attention_output],
        [_("Input"), _("{depth}× mean filter").format(depth=depth),
         _("{depth}× attention").format(depth=depth)], normalise=False)


def field_download(s, size: int, row: int, col: int):
    return numbers(_("Download these maps (.npz)"), {
        "image": image_attn.load_image(size), "attention_weights": s.attention_map,
        "conv_weights": s.conv_map, "attention_influence": s.attention_influence,
        "conv_influence": s.conv_influence, "conv_field": s.conv_field,
        "pixel": np.array([row, col])}, f"attnviz_image_{row}_{col}.npz")


def field_tab(s, size: int, row: int, col: int, k: int, depth: int) -> list:
    """Tab 1 (the widgets left out): its figures are picture, attention_map, conv_map,
    conv_influence, attention_influence, outputs."""
    return [field_intro(), picture(size, row, col), attention_map(s, row, col),
            conv_map(s, row, col, k), *field_text(k, depth), conv_influence(s, row, col, k, depth),
            attention_influence(s, row, col, depth), *underflow(s), outputs(s, size, depth),
            field_download(s, size, row, col)]


# ------------------------------------------------------------ tab 2: convolution as attention
def as_attention(size: int, kernel_name: str, k: int, alpha: float | None) -> dict:
    """The convolution written as k² heads, beside torch's conv2d."""
    return conv_attention.conv_as_attention_arrays(image_attn.load_image(size), kernel_name, k,
                                                   alpha)


def alpha_of(text: str) -> float | None:
    """α as offered ("hard": None, one key per head exactly)."""
    return None if text == "hard" else float(text)


def verdict(kernel_name: str, k: int, kernel) -> str:
    """Whether one head can be this kernel's convolution, as one whole sentence."""
    name = _(KERNEL_NAMES[kernel_name])
    if conv_attention.one_head_kernel(kernel):
        return _("The *{kernel}* kernel ({k}×{k}) is one head's convolution: every tap is 1/k² "
                 "times the identity, so one head with equal weights over the window computes "
                 "it.").format(kernel=name, k=k)
    if kernel_name in ("edges", "sharpen"):
        return _("The *{kernel}* kernel ({k}×{k}) is not one head's convolution (its taps have "
                 "both signs): it needs more heads.").format(kernel=name, k=k)
    return _("The *{kernel}* kernel ({k}×{k}) is not one head's convolution (a different "
             "matrix at each tap): it needs more heads.").format(kernel=name, k=k)


def exact_intro(k: int) -> Markdown:
    return Markdown(_(
        "Theorem 1 of Cordonnier et al.: a multi-head self-attention layer with $N_h$ heads of "
        "dimension $D_h$, output dimension $D_{{out}}$ and a relative positional encoding of "
        "dimension $D_p \\ge 3$ can express any convolutional layer of kernel size "
        "$\\sqrt{{N_h}}\\times\\sqrt{{N_h}}$ and $\\min(D_h, D_{{out}})$ output channels. "
        "Built here for $k = {k}$: **{heads} heads**, head $h$ for one shift $\\Delta_h$ "
        "of the window. Relative positional attention: score $v_h\\cdot r_\\delta$ with "
        "$r_\\delta = (|\\delta|^2, \\delta)$, $v_h = -\\alpha(1, -2\\Delta_h)$, i.e. "
        "$-\\alpha(|\\delta-\\Delta_h|^2 - |\\Delta_h|^2)$, largest only at $\\delta = \\Delta_h$; "
        "with large $\\alpha$ each softmax row is one-hot. The values are the pixels and "
        "$W_O^{{(h)}}$ is the kernel's tap at $\\Delta_h$. Zero padding: a ring of zero-valued "
        "pixels is added as extra **keys** around the image.").format(k=k, heads=k * k))


def metrics(out: dict) -> tuple[Metric, Metric]:
    """The largest difference from conv2d, and float32's epsilon beside it."""
    return (Metric(_("max |attention − conv2d|"), f"{out['max_abs_diff']:.2e}"),
            Metric(_("float32 epsilon (for scale)"), f"{np.finfo(np.float32).eps:.1e}"))


def exact_outputs(out: dict, k: int):
    diff = np.abs(out["attention_outputs"] - out["conv2d_outputs"]).max(0)
    return image_plots.images_row(
        [out["conv2d_outputs"].transpose(1, 2, 0), out["attention_outputs"].transpose(1, 2, 0)],
        ["torch conv2d", _("{heads}-head self-attention").format(heads=k * k)], diff,
        _("|difference| (max {diff:.1e})").format(diff=out["max_abs_diff"]))


def pixel_heads(size: int, row: int, col: int, k: int, alpha: float | None):
    """Each head's weights for the picked pixel [heads, keys...]."""
    return conv_attention.pixel_head_maps(size, size, k, row, col, alpha)


def heads_figure(out: dict, maps, size: int, row: int, col: int, k: int):
    return image_plots.head_maps_figure(
        maps, out["shifts"], (row, col), k // 2, (size, size),
        title=_("Each head's weights for pixel ({row}, {col}): one shift per head").format(
            row=row, col=col))


def exact_text(kernel_name: str, k: int, out: dict) -> list:
    return [Markdown(_("Orange-red outline: the query pixel. Dotted: the image border; keys "
                       "beyond it are the zero padding ring. Outputs shown with one common "
                       "colour range for both images."), "caption"),
            Markdown(_(
                "Why not one head? A head gives $b_q = \\sum_j \\alpha'_{q,j}\\, M x_j$: **one** "
                "matrix $M$ for every offset, weights $\\alpha' \\ge 0$ that sum to 1. A "
                "convolution applies its own matrix to each offset. One head whose weights "
                "depend on the offset only can be a convolution only if every tap is a "
                "non-negative multiple of one matrix.") + " "
                + verdict(kernel_name, k, out["kernel"]))]


def exact_download(out: dict, maps, row: int, col: int, k: int):
    return numbers(_("Download outputs, heads and kernel (.npz)"),
                   {**out, "head_weights_for_pixel": maps, "pixel": np.array([row, col])},
                   f"attnviz_conv_as_attention_k{k}.npz")


def exact_tab(out: dict, size: int, row: int, col: int, k: int, kernel_name: str,
              alpha: float | None) -> list:
    """Tab 2 (the widgets left out): its figures are exact_outputs, heads_figure."""
    maps = pixel_heads(size, row, col, k, alpha)
    return [exact_intro(k), *metrics(out), exact_outputs(out, k),
            heads_figure(out, maps, size, row, col, k), *exact_text(kernel_name, k, out),
            exact_download(out, maps, row, col, k)]


def page(size: int = 32, row: int = 10, col: int = 15, k: int = 3, which: int = 0) -> list:
    """The page as it opens on tab `which` with its default settings (the widgets left out)."""
    if which == 0:
        s = study(size, row, col, k, 1, 0.2, 8.0)
        return [*intro(), *field_tab(s, size, row, col, k, 1)]
    return [*intro(), *exact_tab(as_attention(size, "random", k, 64.0), size, row, col, k,
                                 "random", 64.0)]
