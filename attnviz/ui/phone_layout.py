"""How a chart drawn in place (ui.live_chart) is laid out on a narrow screen.

`JS` defines `phoneShaped(figure, width)`, which the live chart calls with the figure (its
`data` and `layout`, as the server sent them) and the width in CSS pixels its frame has, before
it draws: it returns the figure to draw (the same object where nothing changes).
"""

JS = r"""
function phoneShaped(figure, width) {
  return figure;
}
"""
