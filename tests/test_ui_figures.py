"""The SVG export keeps the figure's on-screen shape (its height, a full-width chart's width)
instead of kaleido's default 700 x 500. Needs a Chrome/Chromium for kaleido."""

from __future__ import annotations

import re

import plotly.graph_objects as go
import pytest

from attnviz.ui import figures


@pytest.mark.skipif(not figures.svg_export_available(), reason="no Chromium for kaleido")
def test_svg_has_the_figure_shape():
    fig = go.Figure(go.Heatmap(z=[[0.0, 1.0], [1.0, 0.0]]), layout=dict(height=333))
    svg = figures.svg_bytes(fig).decode()
    w, h = re.search(r'<svg[^>]* width="(\d+)" height="(\d+)"', svg).groups()
    assert (int(w), int(h)) == (figures.SVG_WIDTH, 333)
    fig.update_layout(width=640, height=None)
    svg = figures.svg_bytes(fig).decode()
    assert re.search(r'<svg[^>]* width="640" height="(\d+)"', svg).group(1) == str(
        figures.SVG_HEIGHT)
