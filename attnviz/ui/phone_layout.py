"""How a chart drawn in place (ui.live_chart) is laid out on a narrow screen.

`JS` defines `phoneShaped(figure, width, div)`, which the live chart calls before it draws,
with the figure (its `data` and `layout`, as the server sent them), the width in CSS pixels its
frame has, and the chart's element: it returns the figure to draw (the same object where
nothing changes).
"""

JS = r"""
function phoneShaped(figure, width, div) {
  return figure;
}
"""
