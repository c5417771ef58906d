"""Images: an image is a set of pixel vectors; attention vs convolution (the lecture's
"self-attention for images" and "self-attention vs CNN").

Cordonnier, Loukas & Jaggi 2020 (arXiv:1911.03584), Theorem 1: k^2 attention heads with a
relative positional encoding can express any k x k convolution; the lecture's slogan ("CNN is a
simplified self-attention") is attributed to the lecture.

Numbers: analysis.image_attention (a pixel's attention map, fields by gradients) and
analysis.conv_attention (a convolution as attention, whether one head can be it), computed
once per server; figures: plotting.images.
"""

import numpy as np
import streamlit as st

from attnviz import ui
from attnviz.analysis import conv_attention
from attnviz.analysis import image_attention as image_attn
from attnviz.export.html import Heading, Markdown, Metric
from attnviz.i18n import N_, _
from attnviz.plotting import images as image_plots
from attnviz.ui.render import render

TABS = (N_("Attention map vs conv window"), N_("Convolution as attention"))
KERNEL_NAMES = {"random": N_("random"), "blur": N_("blur"), "edges": N_("edges"),
                "sharpen": N_("sharpen")}  # conv_attention.KERNELS, shown translated


def study(size: int, row: int, col: int, k: int, depth: int, sc: float, sp: float | None):
    return ui.cached("results", ("img_study", size, row, col, k, depth, sc, sp),
                     lambda: image_attn.study_pixel(image_attn.load_image(size), row, col, k,
                                                    depth, sc, sp))


def as_attention(size: int, kernel_name: str, k: int, alpha: float | None) -> dict:
    return ui.cached("results", ("img_exact", size, kernel_name, k, alpha),
                     lambda: conv_attention.conv_as_attention_arrays(
                         image_attn.load_image(size), kernel_name, k, alpha))


def pick_from_click() -> None:
    """A click on the picture selects one invisible marker: copy its (row, col) to the inputs."""
    points = ui.clicked_points("img_click")
    if points:
        st.session_state["img_row"], st.session_state["img_col"] = (
            int(points[0]["y"]), int(points[0]["x"]))


def show(base: tuple, name: str, build, extra: tuple = (), **kwargs) -> None:
    """A figure cached by its name, the page's settings `base` and `extra` (the tab's own
    settings it depends on)."""
    render(ui.cached_figure(("img", name, *base, *extra), build), key=name, **kwargs)


def field_tab(size: int, row: int, col: int, k: int) -> None:
    image = image_attn.load_image(size)
    render(Markdown(_(
        "The attention layer here is small and hand-set: pixel $i$ is "
        "$z_i = (c_i/\\sigma_c,\\ p_i/\\sigma_p)$, with query $(z_i, 1)$, key "
        "$(z_j, -|z_j|^2/2)$ and value $c_j$, so "
        "$\\alpha'_{i,j} = \\mathrm{softmax}_j(q_i\\cdot k_j) \\propto "
        "e^{-|c_i-c_j|^2/2\\sigma_c^2 - |p_i-p_j|^2/2\\sigma_p^2}$: a pixel attends to pixels "
        "of a **similar colour** nearby (a bilateral filter written as attention). The "
        "convolution is a $k\\times k$ mean filter: weight $1/k^2$ in its window, 0 outside."
    )))
    s1, s2, s3 = st.columns(3)
    depth = s1.slider(_("Layers stacked"), 1, 4, 1, key="img_depth", bind="query-params",
                      persist_state="page")
    base = (size, row, col, k, depth)
    sc = float(s2.select_slider(_("Colour width σ_c"), ["0.05", "0.1", "0.2", "0.4", "0.8"],
                                value="0.2", key="img_sc", bind="query-params"))
    sp_text = s3.select_slider(_("Position width σ_p (px)"), ["1", "2", "4", "8", "16", "∞"],
                               value="8", key="img_sp", bind="query-params")
    sp = None if sp_text == "∞" else float(sp_text)
    with st.spinner(_("Running both models and their gradients...")):
        s = study(size, row, col, k, depth, sc, sp)
    a, b, d = st.columns(3)
    with a:
        show(base, "img_click", lambda: image_plots.image_figure(
            image, (row, col), _("Click a pixel (or type it above)")),
            on_select=pick_from_click, selection_mode="points")
    with b:
        show(base, "img_attn_map", lambda: image_plots.map_figure(
            s.attention_map, (row, col), _("Attention weights, layer 1")), extra=(sc, sp))
    with d:
        show(base, "img_conv_map", lambda: image_plots.map_figure(
            s.conv_map, (row, col), _("Conv {k}×{k} window weights").format(k=k)))
    n, r = s.field_sizes, depth * (k // 2)
    render(Heading(_("After 1 layer: which input pixels matter?") if depth == 1 else
                   _("After {depth} layers: which input pixels matter?").format(depth=depth), 3))
    render(Markdown(_(
        "Measured with gradients: the influence $I(p, j) = \\sum |\\partial y_p / \\partial x_j|$ "
        "of input pixel $j$ on the picked output pixel $p$ (log scale; blank = exactly 0). "
        "Convolution: the field is the square of side $l(k-1)+1 = {side}$ (dashed). "
        "Attention: every pixel, already at layer 1.").format(side=2 * r + 1)))
    a, b = st.columns(2)
    with a:
        show(base, "img_conv_infl", lambda: image_plots.map_figure(
            s.conv_influence, (row, col), _("Conv, {depth} layer(s): {n} pixels (analytic "
                                             "{analytic})").format(
                depth=depth, n=n["conv"], analytic=n["conv_analytic"]),
            "influence", (row - r, row + r, col - r, col + r)))
    with b:
        show(base, "img_attn_infl", lambda: image_plots.map_figure(
            s.attention_influence, (row, col),
            _("Attention, {depth} layer(s): {n} of {total} pixels").format(
                depth=depth, n=n["attention"], total=n["image"]), "influence"),
            extra=(sc, sp))
    if n["attention"] < n["image"]:
        render(Markdown(_("Some attention weights are so small they round to exactly 0 in "
                          "float64 (below 1e-308): widen σ_p or σ_c to see the whole image "
                          "again."), "info"))
    show(base, "img_outputs", lambda: image_plots.images_row(
        [image, s.conv_output, s.attention_output],
        [_("Input"), _("{depth}× mean filter").format(depth=depth),
         _("{depth}× attention").format(depth=depth)], normalise=False),
        extra=(sc, sp))
    ui.download_arrays(_("Download these maps (.npz)"), {
        "image": image, "attention_weights": s.attention_map, "conv_weights": s.conv_map,
        "attention_influence": s.attention_influence, "conv_influence": s.conv_influence,
        "conv_field": s.conv_field, "pixel": np.array([row, col])},
        file_name=f"attnviz_image_{row}_{col}.npz", key="img_dl_field")

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


def exact_tab(size: int, row: int, col: int, k: int) -> None:
    base = (size, row, col, k)
    render(Markdown(_(
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
        "pixels is added as extra **keys** around the image.").format(k=k, heads=k * k)))
    e1, e2 = st.columns(2)
    kernel_name = e1.selectbox(_("Kernel"), conv_attention.KERNELS, key="img_kernel",
                               bind="query-params", format_func=lambda n: _(KERNEL_NAMES[n]))
    alpha_text = e2.select_slider(
        _("α (sharpness of each head)"), ["0.5", "1", "2", "4", "8", "16", "64", "hard"],
        value="64", key="img_alpha", bind="query-params",
        format_func=lambda a: _("hard") if a == "hard" else a,
        help=_("'hard' = a mask that allows exactly one key per head (weights exactly 0 or "
               "1)."))
    alpha = None if alpha_text == "hard" else float(alpha_text)
    with st.spinner(_("Computing {heads} heads x {queries} queries x all keys...").format(
            heads=k * k, queries=size * size)):
        out = as_attention(size, kernel_name, k, alpha)
    m1, m2 = st.columns(2)
    render(Metric(_("max |attention − conv2d|"), f"{out['max_abs_diff']:.2e}"), m1)
    render(Metric(_("float32 epsilon (for scale)"), f"{np.finfo(np.float32).eps:.1e}"), m2)
    diff = np.abs(out["attention_outputs"] - out["conv2d_outputs"]).max(0)
    show(base, "img_exact_outputs", lambda: image_plots.images_row(
        [out["conv2d_outputs"].transpose(1, 2, 0), out["attention_outputs"].transpose(1, 2, 0)],
        ["torch conv2d", _("{heads}-head self-attention").format(heads=k * k)], diff,
        _("|difference| (max {diff:.1e})").format(diff=out["max_abs_diff"])),
        extra=(kernel_name, alpha))
    maps = conv_attention.pixel_head_maps(size, size, k, row, col, alpha)
    show(base, "img_heads", lambda: image_plots.head_maps_figure(
        maps, out["shifts"], (row, col), k // 2, (size, size),
        title=_("Each head's weights for pixel ({row}, {col}): one shift per head").format(
            row=row, col=col)),
        extra=(kernel_name, alpha))
    render(Markdown(_("Orange-red outline: the query pixel. Dotted: the image border; keys "
                      "beyond it are the zero padding ring. Outputs shown with one common "
                      "colour range for both images."), "caption"))
    kernel = out["kernel"]
    render(Markdown(_(
        "Why not one head? A head gives $b_q = \\sum_j \\alpha'_{q,j}\\, M x_j$: **one** "
        "matrix $M$ for every offset, weights $\\alpha' \\ge 0$ that sum to 1. A "
        "convolution applies its own matrix to each offset. One head whose weights depend "
        "on the offset only can be a convolution only if every tap is a non-negative multiple "
        "of one matrix.") + " " + verdict(kernel_name, k, kernel)))
    ui.download_arrays(_("Download outputs, heads and kernel (.npz)"),
                       {**out, "head_weights_for_pixel": maps, "pixel": np.array([row, col])},
                       file_name=f"attnviz_conv_as_attention_k{k}.npz", key="img_dl_exact")


def main() -> None:
    ui.ensure_router()
    render(Heading(_("Images: attention vs convolution"), 1))
    render(Markdown(_(
        "An image is a **set of vectors**: one per pixel (its colour and its position). "
        "Self-attention lets a pixel look at *every* pixel, with weights that depend on the "
        "content; a convolution looks only in a fixed $k\\times k$ window, same weights "
        "everywhere. The lecture's slogan: *CNN is a simplified self-attention; "
        "self-attention is a CNN with a learnable receptive field.* The paper it cites "
        "(Cordonnier, Loukas & Jaggi 2020, Theorem 1) proves a precise version: "
        "self-attention with $k^2$ heads and a relative positional encoding can express any "
        "$k\\times k$ convolution (second tab)."
    )))
    settings_and_tabs()


@ui.fragment  # the image's settings, the tabs and a click on the image rerun only this part
def settings_and_tabs() -> None:
    c = st.columns(4)
    size = c[0].selectbox(_("Image size (px)"), image_attn.SIZES, index=image_attn.SIZES.index(32),
                          key="img_size", bind="query-params")
    # A value out of range after a smaller size is reset by Streamlit to the default (valid
    # for 16).
    row = c[1].number_input(_("Pixel row"), 0, size - 1, 10, key="img_row", bind="query-params")
    col = c[2].number_input(_("Pixel column"), 0, size - 1, 15, key="img_col", bind="query-params")
    k = c[3].radio(_("Kernel k"), (3, 5), horizontal=True, key="img_k", bind="query-params")
    # Lazy tabs (only the open one computes); figures are cached server-wide by their
    # settings, which are all this page depends on (not the sentence).
    tabs = st.tabs([_(tab) for tab in TABS],  # labels (and so img_tab in a URL) in the language
                   key="img_tab", on_change="rerun", bind="query-params")
    for tab, draw in zip(tabs, (field_tab, exact_tab), strict=True):
        if tab.open:
            with tab:
                draw(size, row, col, k)


main()
