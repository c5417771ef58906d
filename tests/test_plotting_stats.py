"""Head statistics heatmaps and the rollout pair: values and click targets from the analysis."""

import numpy as np

from attnviz.analysis.head_stats import STATS, head_stats
from attnviz.analysis.rollout import rollout
from attnviz.plotting.stats import rollout_pair, stats_heatmaps


def test_stats_heatmaps_hold_every_statistic(model):
    t = model.trace("Hello, world. I saw a saw!")
    s = head_stats(t.weights, t.tokens)
    fig = stats_heatmaps(s, STATS, selected=(2, 3))
    heat = [tr for tr in fig.data if tr.type == "heatmap"]
    dots = [tr for tr in fig.data if tr.type == "scatter"]
    order = [k for k in STATS if k != "entropy"] + ["entropy"]  # entropy (own scale) last
    assert [tr.name for tr in heat] == order == [tr.name for tr in dots]
    for tr, dot in zip(heat, dots, strict=True):
        np.testing.assert_array_equal(np.asarray(tr.z), s[tr.name])
        # The click target of layer 2, head 3 sits on that cell and carries its value.
        i = 2 * t.n_heads + 3
        assert (dot.x[i], dot.y[i]) == (3, 2)
        assert dot.customdata[i] == s[tr.name][2, 3]
    assert heat[-1].coloraxis == "coloraxis2" and heat[0].coloraxis == "coloraxis"
    assert len(fig.layout.shapes) == len(STATS)  # the selected head is outlined everywhere


def test_rollout_pair_shows_raw_and_rolled(model):
    t = model.trace("I saw a saw")
    r = rollout(t.weights)
    fig = rollout_pair(t.weights[-1].mean(0), r[-1], t.tokens, "raw", "rollout")
    np.testing.assert_allclose(np.asarray(fig.data[0].z), t.weights[-1].mean(0), atol=1e-7)
    np.testing.assert_allclose(np.asarray(fig.data[1].z), r[-1], atol=1e-7)
    assert list(fig.data[1].x) == ["[CLS] #0", "i #1", "saw #2", "a #3", "saw #4", "[SEP] #5"]


def test_long_panel_titles_take_two_lines_instead_of_their_neighbours_room(model):
    from attnviz.plotting.common import text_width
    from attnviz.plotting.stats import PAGE_WIDTH, TITLE_SIZE, fitted_title
    from attnviz.plotting.summary import panel_titles

    t = model.trace("Hello, world. I saw a saw!")
    fig = stats_heatmaps(head_stats(t.weights, t.tokens), STATS)
    inner = PAGE_WIDTH - fig.layout.margin.l - fig.layout.margin.r  # the plot area, px
    room = ((1 - 3 * 0.05) / 4 + 0.05) * inner  # 4 panels a row, 5% gaps
    titles = [a.text for a in fig.layout.annotations]
    order = [k for k in STATS if k != "entropy"] + ["entropy"]  # entropy (own scale) last
    assert titles == [fitted_title(STATS[k], room) for k in order]
    assert "weight on the<br>previous token" in titles and "weight on [CLS]" in titles
    for text in titles:  # every line fits over its panel
        assert all(text_width(line, TITLE_SIZE) <= room for line in text.split("<br>"))
    # Two-line titles get their room: more space between the rows and above the first.
    assert fig.layout.margin.t == 66
    # The text summary names the panels as one line each.
    assert set(panel_titles(fig.to_dict()["layout"]).values()) == set(STATS.values())
    no_space = "平均行熵（纳特）很长很长很长很长很长"
    assert fitted_title(no_space, 10) == no_space


def test_three_maps_name_as_many_keys_as_fit_slanted(model):
    """The ablation lesson's three top heads' maps (maps_side_by_side) at ~100 tokens: two
    neighbouring slanted key names (-45 degrees) lie at least FONT's size apart across their
    slant on a PAGE_WIDTH page, the panel's width taken after the first panel's row
    names (an upper estimate of their width, its tick pad); at 16 names a panel they lay on
    one another. Every key that is named is a real key of its panel, every k-th; "I saw a saw"
    names every key, saw #2 and saw #4."""
    import math

    from attnviz.plotting.common import FONT, TICK_PAD, text_width
    from attnviz.plotting.stats import PAGE_WIDTH, maps_side_by_side
    from tests.test_plotting_ablation import PARAGRAPH

    t = model.trace(PARAGRAPH)
    n = t.n_tokens
    assert 90 <= n <= 110, n
    maps = [t.weights[-1, h] for h in range(3)]
    fig = maps_side_by_side(maps, ["a", "b", "c"], t.tokens, value="weight", clip_note=False)
    rows = max(text_width(s) for s in fig.layout.yaxis.ticktext) + TICK_PAD
    line = FONT["size"]  # px across the slant that one name takes (its em box)
    for k in ("", "2", "3"):
        x = fig.layout[f"xaxis{k}"]
        wide = (x.domain[1] - x.domain[0]) * (PAGE_WIDTH - 20 - rows)  # px, margins l + r
        cats = list(x.categoryarray)
        at = [cats.index(v) for v in x.tickvals]
        step = at[1] - at[0]
        assert at == list(range(0, n, step)) and len(x.ticktext) == len(at) >= 3, at
        apart = step * wide / n * math.sin(math.radians(45))  # px across the slant
        assert apart >= line, (len(at), wide, apart)
    short = model.trace("I saw a saw").tokens
    fig = maps_side_by_side([np.eye(6)] * 3, ["a", "b", "c"], short)
    for k in ("", "2", "3"):
        assert list(fig.layout[f"xaxis{k}"].ticktext) == [
            "[CLS]", "i", "saw #2", "a", "saw #4", "[SEP]"]


def test_the_two_colour_bars_never_stand_in_one_place():
    """Three shares and entropy (a decoder's head statistics: no [CLS]/[SEP], no next token)
    with room for four panels a row: entropy goes to the next row, so its colour bar stands
    beside it and not on top of the shares' bar (both stood right of the fourth panel)."""
    z = np.zeros((3, 2))
    fig = stats_heatmaps({"punct": z, "self": z, "prev": z, "entropy": z + 1.0},
                         {}, cols=4).to_dict()
    share, entropy = (fig["layout"][k]["colorbar"] for k in ("coloraxis", "coloraxis2"))
    assert (share["x"], share["y"]) != (entropy["x"], entropy["y"])
    assert entropy["y"] < share["y"]  # the row below
