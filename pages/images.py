"""Images: an image is a set of pixel vectors; attention vs convolution (the lecture's
"self-attention for images" and "self-attention vs CNN"; Cordonnier, Loukas & Jaggi 2020,
Theorem 1).

Numbers: analysis.image_attention and analysis.conv_attention, computed once per server; what
it shows: views.images.
"""

import streamlit as st

from attnviz import ui
from attnviz.analysis import conv_attention
from attnviz.analysis import image_attention as image_attn
from attnviz.i18n import _
from attnviz.ui.live_chart import clicked_cell
from attnviz.ui.render import render
from attnviz.views import images as view


def pick_from_click(size: int) -> None:
    """A click on the picture selects one invisible marker: copy its (row, col) to the inputs
    (a click event of another shape: nothing)."""
    cell = clicked_cell("img_click", size, size)
    if cell is not None:
        st.session_state["img_row"], st.session_state["img_col"] = cell


def show(base: tuple, name: str, build, extra: tuple = (), where=None, **kwargs) -> None:
    """A figure cached by its name, the page's settings `base` and `extra` (the tab's own
    settings it depends on)."""
    render(ui.cached_figure(("img", name, *base, *extra), build), where=where, key=name,
           **kwargs)


def field_tab(size: int, row: int, col: int, k: int) -> None:
    render(view.field_intro())
    s1, s2, s3 = st.columns(3)
    depth = s1.slider(_("Layers stacked"), 1, 4, 1, key="img_depth", bind="query-params",
                      persist_state="page")
    base = (size, row, col, k, depth)
    sc = float(s2.select_slider(_("Colour width σ_c"), view.COLOUR_WIDTHS, value="0.2",
                                key="img_sc", bind="query-params"))
    sp = view.position_width(s3.select_slider(_("Position width σ_p (px)"), view.POSITION_WIDTHS,
                                              value="8", key="img_sp", bind="query-params"))
    with st.spinner(_("Running both models and their gradients...")):
        s = ui.cached("results", ("img_study", size, row, col, k, depth, sc, sp),
                      lambda: view.study(size, row, col, k, depth, sc, sp))
    a, b, d = st.columns(3)
    show(base, "img_click", lambda: view.picture(size, row, col), where=a,
         on_select=lambda: pick_from_click(size), selection_mode="points")
    show(base, "img_attn_map", lambda: view.attention_map(s, row, col), extra=(sc, sp), where=b)
    show(base, "img_conv_map", lambda: view.conv_map(s, row, col, k), where=d)
    render(view.field_text(k, depth))
    a, b = st.columns(2)
    show(base, "img_conv_infl", lambda: view.conv_influence(s, row, col, k, depth), where=a)
    show(base, "img_attn_infl", lambda: view.attention_influence(s, row, col, depth),
         extra=(sc, sp), where=b)
    render(view.underflow(s))
    show(base, "img_outputs", lambda: view.outputs(s, size, depth), extra=(sc, sp))
    render(view.field_download(s, size, row, col), key="img_dl_field")


def exact_tab(size: int, row: int, col: int, k: int) -> None:
    base = (size, row, col, k)
    render(view.exact_intro(k))
    e1, e2 = st.columns(2)
    kernel_name = e1.selectbox(_("Kernel"), conv_attention.KERNELS, key="img_kernel",
                               bind="query-params", format_func=lambda n: _(view.KERNEL_NAMES[n]))
    alpha = view.alpha_of(e2.select_slider(
        _("α (sharpness of each head)"), view.ALPHAS, value="64", key="img_alpha",
        bind="query-params", format_func=lambda a: _("hard") if a == "hard" else a,
        help=_("'hard' = a mask that allows exactly one key per head (weights exactly 0 or "
               "1).")))
    with st.spinner(_("Computing {heads} heads x {queries} queries x all keys...").format(
            heads=k * k, queries=size * size)):
        out = ui.cached("results", ("img_exact", size, kernel_name, k, alpha),
                        lambda: view.as_attention(size, kernel_name, k, alpha))
    m1, m2 = st.columns(2)
    for metric, where in zip(view.metrics(out), (m1, m2), strict=True):
        render(metric, where)
    show(base, "img_exact_outputs", lambda: view.exact_outputs(out, k),
         extra=(kernel_name, alpha))
    maps = view.pixel_heads(size, row, col, k, alpha)
    show(base, "img_heads", lambda: view.heads_figure(out, maps, size, row, col, k),
         extra=(kernel_name, alpha))
    render(view.exact_text(kernel_name, k, out))
    render(view.exact_download(out, maps, row, col, k), key="img_dl_exact")


def main() -> None:
    ui.ensure_router()
    render(view.intro())
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
    # labels (and so img_tab in a URL) in the language
    tabs = st.tabs([_(tab) for tab in view.TABS],
                   key="img_tab", on_change="rerun", bind="query-params")
    for tab, draw in zip(tabs, (field_tab, exact_tab), strict=True):
        if tab.open:
            with tab:
                draw(size, row, col, k)


main()
