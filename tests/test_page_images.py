"""AppTest of the Images page: its figures and metric come from the analysis, widgets work."""


import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import conv_attention as ca
from attnviz.analysis import image_attention as ia
from tests.apptest import open_page
from tests.plotly_json import decode, figures_all_tabs
from tests.test_ui_recorder import assert_file_holds_the_screen

TABS = ["Attention map vs conv window", "Convolution as attention"]
KEYS = ["img_click", "img_attn_map", "img_conv_map", "img_conv_infl", "img_attn_infl",
        "img_outputs", "img_exact_outputs", "img_heads"]


def figures(at) -> list[dict]:
    """Both tabs' figures in page order (the tabs are lazy: each is opened in turn)."""
    figs = figures_all_tabs(at, "img_tab", TABS)
    return [figs[k] for k in KEYS]


def open_exact(at) -> None:
    at.session_state["img_tab"] = TABS[1]
    at.run()



@pytest.fixture
def at():
    return open_page("pages/images.py", timeout=240)


def test_default_page(at):
    assert not at.error
    figs = figures(at)
    # picture, attention map, conv map, 2 influence maps, outputs row, exact outputs, heads
    assert len(figs) == 8
    s = ia.study_pixel(ia.load_image(32), 10, 15, k=3, depth=1, sigma_colour=0.2,
                       sigma_position=8.0)
    np.testing.assert_allclose(decode(figs[1]["data"][0]["z"]), s.attention_map, atol=1e-12)
    np.testing.assert_allclose(decode(figs[2]["data"][0]["z"]), s.conv_map, atol=0)
    assert "9 pixels (analytic 9)" in figs[3]["layout"]["title"]["text"]
    assert "1024 of 1024 pixels" in figs[4]["layout"]["title"]["text"]
    # the exactness metric: attention vs torch conv2d for the random 3 x 3 kernel
    labels = [b.label for b in at.get("download_button")]
    open_exact(at)
    assert float(at.metric[0].value) < 1e-5
    assert_file_holds_the_screen(at)  # the open tab's metrics, figures and captions
    assert len(figs[7]["data"]) == 9  # one map per head
    labels += [b.label for b in at.get("download_button")]
    assert any("maps" in x for x in labels) and any("kernel" in x for x in labels)


def test_picked_pixel_k5_and_depth(at):
    at.number_input(key="img_row").set_value(3)
    at.number_input(key="img_col").set_value(7)
    at.radio(key="img_k").set_value(5)
    at.slider(key="img_depth").set_value(2).run()
    assert not at.exception and not at.error
    figs = figures(at)
    s = ia.study_pixel(ia.load_image(32), 3, 7, k=5, depth=2, sigma_colour=0.2,
                       sigma_position=8.0)
    np.testing.assert_allclose(decode(figs[1]["data"][0]["z"]), s.attention_map, atol=1e-12)
    # rows 0..7 (cut by the border) x cols 3..11 = 72 pixels, measured = analytic
    assert "72 pixels (analytic 72)" in figs[3]["layout"]["title"]["text"]
    assert len(figs[7]["data"]) == 25
    # the exact tab for k = 5: the metric equals max |attention - conv2d| recomputed here
    img = torch.from_numpy(ia.load_image(32)).permute(2, 0, 1).contiguous()
    kernel, bias = ca.make_kernel("random", 5)
    open_exact(at)
    ref = F.conv2d(img[None], torch.from_numpy(kernel), torch.from_numpy(bias), padding=2)[0]
    r = ca.conv_as_attention(img, kernel, bias)
    assert float(at.metric[0].value) == pytest.approx(
        float((r.outputs - ref).abs().max()), abs=5e-8)
    assert float(at.metric[0].value) < 1e-5


def test_small_alpha_and_smaller_image(at):
    at.number_input(key="img_row").set_value(30).run()
    open_exact(at)
    at.select_slider(key="img_alpha").set_value("2")
    at.selectbox(key="img_size").set_value(16).run()
    assert not at.exception and not at.error
    assert float(at.metric[0].value) > 1e-2  # blurred heads: no longer the convolution
    assert at.number_input(key="img_row").value == 10  # row 30 > 15: reset to the default
    assert decode(figures(at)[1]["data"][0]["z"]).shape == (16, 16)


def test_layers_stacked_only_where_it_counts_and_one_head_verdict(at):
    """'Layers stacked' belongs to the field tab (the convolution tab ignores it) and keeps its
    value across tabs; the convolution tab says whether ONE head could be the kernel shown
    (conv_attention.one_head_kernel, checked by an independent fit in its tests)."""
    at.slider(key="img_depth").set_value(3).run()
    open_exact(at)
    assert not [s for s in at.slider if s.key == "img_depth"]
    text = " ".join(m.value for m in at.markdown)
    assert "can express any convolutional layer of kernel size" in text
    assert ("*random* kernel (3×3) is not one head's convolution (a different matrix at each "
            "tap)") in text
    at.selectbox(key="img_kernel").set_value("blur").run()
    text = " ".join(m.value for m in at.markdown)
    assert "*blur* kernel (3×3) is one head's convolution: every tap is 1/k²" in text
    at.session_state["img_tab"] = TABS[0]
    at.run()
    assert at.slider(key="img_depth").value == 3
