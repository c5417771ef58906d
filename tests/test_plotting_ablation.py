"""Figures of ablation and patching (attnviz.plotting.ablation), checked on their JSON."""

from __future__ import annotations

import numpy as np

from attnviz.plotting import ablation


def test_patching_map_keeps_repeated_tokens_apart_and_its_bar_title_beside_the_bar():
    restored = np.array([[1.0, 0.2, -0.1, 0.9], [0.5, 0.0, 0.3, 1.0]])
    tokens = ["i", "saw", "a", "saw"]
    fig = ablation.residual_map(restored, tokens, ["i", "saw", "the", "saw"])
    heat = fig.data[0]
    np.testing.assert_array_equal(heat.z, restored)
    assert len(set(heat.x)) == 4  # the two saws are two columns
    assert "a / the" in fig.layout.xaxis.ticktext[2]  # what the corrupted sentence had there
    # a title on top of a vertical bar ran into its top tick label ('1') at 390 px
    assert heat.colorbar.title.text == "restored" and heat.colorbar.title.side == "right"
