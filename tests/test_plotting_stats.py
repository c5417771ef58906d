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
