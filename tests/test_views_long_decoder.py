"""The explore page's mosaic and the rollout tab on a decoder's trace that does not hold its
weights (a long input, past engine.families.llama.KEEP_WEIGHTS_BYTES): built a layer at a
time from the kept queries and keys, they show the numbers of the same input's held weights
(which tests/test_engine_decoders.py checks against transformers' eager model); and on the
bundled SmolLM2 past its real limit (~700 tokens) they do not fail."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.analysis.rollout import rollout, streamed_rollout
from attnviz.plotting.common import block_reduce
from attnviz.plotting.overview import MOSAIC_TOP, mosaic_cells, mosaic_height
from attnviz.views import explore
from attnviz.views import head_stats as hs_view
from tests.test_views_common import decode, heatmaps, spec

TEXT = "I saw a saw, and the saw saw me. Transformers use embeddings!"


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """(held, long): one random Llama with grouped keys (4 query heads on 2 key/value heads),
    the same input traced with and without every weight kept."""
    import attnviz
    from attnviz.engine.families import llama
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("llama", tmp_path_factory.mktemp("m") / "llama",
                                    positions=64, seed=5, heads=4, kv_heads=2, layers=3)
    decoder = attnviz.load_model(folder, device="cpu")
    held = decoder.trace(TEXT)
    with pytest.MonkeyPatch.context() as mp:  # nothing held past 0 bytes: every weight streamed
        mp.setattr(llama, "KEEP_WEIGHTS_BYTES", 0)
        long = decoder.trace(TEXT)
    assert held.holds_weights and not long.holds_weights
    return held, long


def mosaic_z(fig) -> np.ndarray:
    return decode(heatmaps(fig)[0]["z"])


@pytest.mark.parametrize("hide,renorm,words", [(False, False, False), (True, True, False),
                                               (True, False, True)])
def test_the_mosaic_without_weights_is_the_held_ones(pair, hide, renorm, words):
    held, long = pair
    told = []
    got = explore.mosaic(long, hide, renorm, "all", words, lambda f, msg: told.append(f))
    ref = explore.mosaic(held, hide, renorm, "all", words)
    zg, zr = mosaic_z(got), mosaic_z(ref)
    assert zg.shape == zr.shape
    np.testing.assert_array_equal(np.isnan(zg), np.isnan(zr))
    np.testing.assert_allclose(zg[~np.isnan(zg)], zr[~np.isnan(zr)], atol=1e-5, rtol=0)
    assert spec(got)["data"][0]["x"] == spec(ref)["data"][0]["x"]
    assert explore.shown_tokens(got) == explore.shown_tokens(ref)
    assert told == pytest.approx([1 / 3, 2 / 3, 1.0])


def test_the_mosaic_pools_long_inputs_the_same_way(pair):
    """Pooled into blocks (max_cells small), a streamed tile is the held tile's block max."""
    from attnviz.analysis.views import mean_maps
    from attnviz.plotting.overview import overview_mosaic, streamed_tiles, tiled_mosaic

    held, long = pair
    got = tiled_mosaic(streamed_tiles((long.layer_weights(li) for li in range(3)),
                                      max_cells=4), long.tokens)
    ref = overview_mosaic(held.weights, mean_maps(held.weights), held.tokens, max_cells=4)
    zg, zr = mosaic_z(got), mosaic_z(ref)
    np.testing.assert_allclose(np.nan_to_num(zg, nan=-1), np.nan_to_num(zr, nan=-1), atol=1e-5)
    pooled, factor = block_reduce(held.weights[2, 1], 4)
    assert factor > 1
    step = pooled.shape[0] + 1
    np.testing.assert_allclose(zg[2 * step:2 * step + pooled.shape[0],
                                  step:step + pooled.shape[0]], pooled, atol=1e-5)


def test_the_explore_page_without_weights(pair):
    held, long = pair
    got, ref = (explore.page(tr, layer=2, head=3) for tr in (long, held))
    maps = [[decode(h["z"]) for fig in blocks if hasattr(fig, "to_json")
             for h in heatmaps(fig)] for blocks in (got, ref)]
    assert len(maps[0]) == len(maps[1]) == 2  # the mosaic and the open head
    for a, b in zip(maps[0], maps[1], strict=True):
        np.testing.assert_allclose(np.nan_to_num(a, nan=-1), np.nan_to_num(b, nan=-1),
                                   atol=1e-5, rtol=0)


@pytest.mark.parametrize("words", [False, True])
def test_rollout_without_weights_is_the_held_rollout(pair, words):
    held, long = pair
    for layer in (0, 2):
        told: list[float] = []
        got = hs_view.maps_of(long, layer, words, None, lambda f, msg, told=told: told.append(f))
        ref = hs_view.maps_of(held, layer, words, None)
        assert set(got) == set(ref) == {"raw", "rollout"}
        for name in got:
            np.testing.assert_allclose(got[name], ref[name], atol=1e-5, rtol=0, err_msg=name)
        assert len(told) == layer + 1
    # The formula written out: R_2 = Â_2 Â_1 Â_0 with Â_l = (mean_h W_l,h + I) / 2 (rows of W
    # sum to 1, so the rows of Â sum to 1 without dividing again).
    eye = np.eye(held.n_tokens)
    a = [(held.weights[li].astype(np.float64).mean(0) + eye) / 2 for li in range(3)]
    np.testing.assert_allclose(streamed_rollout(long.layer_weights, 2), a[2] @ a[1] @ a[0],
                               atol=1e-5, rtol=0)
    np.testing.assert_allclose(streamed_rollout(held.layer_weights, 1),
                               rollout(held.weights)[1], atol=1e-12, rtol=0)


@pytest.mark.slow
def test_smollm2_past_its_keep_limit_draws_the_mosaic_and_rollout():
    """800 tokens of the bundled SmolLM2 (past the ~705 tokens up to which a trace keeps every
    weight): the mosaic and the rollout tab are built; each tile is its head's recomputed
    weights pooled, each rollout row sums to 1 and nothing lies above the diagonal."""
    import attnviz

    model = attnviz.load_model("smollm2", device="cpu", max_tokens=800)
    text = ("The old carpenter kept his tools in a wooden chest by the door. Every morning he "
            "took out his saw, his hammer and a box of nails. ") * 40
    t = model.trace(text)
    assert t.n_tokens == 800 and not t.holds_weights
    fig = explore.mosaic(t, False, False, "all", False)
    z = mosaic_z(fig)
    pooled, factor = block_reduce(t.weights_of(29, 8), mosaic_cells(30))
    step = pooled.shape[0] + 1
    assert factor == 26 and z.shape == (31 * step - 1, 10 * step - 1)
    np.testing.assert_allclose(z[29 * step:29 * step + pooled.shape[0],
                                 8 * step:8 * step + pooled.shape[0]], pooled, atol=1e-6)
    maps = hs_view.maps_of(t, 29, False, None)
    np.testing.assert_allclose(maps["rollout"].sum(-1), 1.0, atol=1e-9)
    assert np.triu(maps["rollout"], 1).max() == 0.0
    blocks = hs_view.rollout_and_flow(t, maps, 29, False)
    assert len(heatmaps(next(b for b in blocks if hasattr(b, "to_json")))) == 2


@pytest.mark.parametrize("layers", [2, 6, 12, 24, 30, 32])
def test_a_mosaic_cell_is_at_least_a_pixel_tall(layers):
    """The tiles of L layers (and the mean row) share the plot's height, square and one blank
    cell apart: with mosaic_cells' cells per tile, each cell gets at least one screen pixel
    (BERT's 6 and 12 layers keep 64 cells)."""
    cells = mosaic_cells(layers)
    plot = mosaic_height(layers) - MOSAIC_TOP - 10
    assert plot / ((layers + 1) * (cells + 1)) >= 1.0
    assert cells == 64 or plot / ((layers + 1) * (cells + 2)) < 1.0  # the most that fit
    if layers in (6, 12):
        assert cells == 64


def test_a_clipped_rollout_scale_is_said_once_under_the_maps(model):
    """Past CLIP_FROM tokens each map's colour scale stops at a percentile: the caption says so
    once, and each colour bar is titled with the value's name alone (three long titles side by
    side ran into each other in Chinese)."""
    t = model.trace("the carpenter took his saw and " * 20)
    maps = hs_view.maps_of(t, 5, False, None)
    said = " ".join(b.text for b in hs_view.maps_notes(t, maps))
    assert "tops out at its 99th percentile: the top 1% of its cells" in said
    bars = [a["colorbar"]["title"]["text"] for k, a in spec(hs_view.maps_figure(
        t, maps, 5, False))["layout"].items() if k.startswith("coloraxis")]
    assert bars == ["share", "share"]
    short = model.trace("I saw a saw")
    assert "percentile" not in " ".join(
        b.text for b in hs_view.maps_notes(short, hs_view.maps_of(short, 5, False, None)))
