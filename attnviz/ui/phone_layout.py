"""How a chart drawn in place (ui.live_chart) is laid out on a narrow screen (a phone):
components/live_chart/phone_layout.js, whose opening comment says how. `JS` is its text (a
plain script defining `phoneShaped(figure, width, div)` and `phoneKey(figure, width)`), which
the live chart's module starts with and the Node tests run on real figures.
"""

from .components import read

JS = read("live_chart", "phone_layout.js")
