"""What the text beside a figure costs (plotting.summary.summarise, then the DataFrames that
st.table shows), next to building the figure itself: one head's heatmap and a layer's 12-head
grid of the bundled model at 16, 128 and 512 tokens. show_figure does this on every run that
draws a figure, so it should stay a small share of building one.
"""

from __future__ import annotations

import numpy as np

import attnviz
from attnviz.plotting import heads_grid
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.summary import summarise
from attnviz.ui.figures import table_frame

from .bench_engine import median_ms, random_ids
from .report import Table, rows_table, show

LENGTHS = (16, 128, 512)


def run(repeats: int = 10) -> list[dict]:
    model = attnviz.load_model(device="cpu")
    rng = np.random.default_rng(0)
    rows = []
    for n in LENGTHS:
        ids = random_ids(rng, n)
        rows.append({"tokens": n, **measure(model.trace_ids(ids), repeats)})
    return rows


def measure(t, repeats: int) -> dict[str, float]:
    """Median ms of building and of summarising one head's heatmap and a layer's grid."""
    w = np.asarray(t.weights[3], dtype=np.float32)  # [heads, n, n]
    one = attention_heatmap(w[0], t.tokens, "weights")
    grid = heads_grid(w, t.tokens, "weights")
    ms = median_ms({
        "head_figure": lambda: attention_heatmap(w[0], t.tokens, "weights"),
        "head_summary": lambda: [table_frame(x) for x in summarise(one).tables],
        "grid_figure": lambda: heads_grid(w, t.tokens, "weights"),
        "grid_summary": lambda: [table_frame(x) for x in summarise(grid).tables],
    }, repeats)
    return {f"{k}_ms": v for k, v in ms.items()}


COLUMNS = {"tokens": "tokens", "head_figure_ms": "one head's heatmap (ms)",
           "head_summary_ms": "its summary tables (ms)",
           "grid_figure_ms": "a layer's 12-head grid (ms)",
           "grid_summary_ms": "its summary tables (ms)"}


def main() -> list[Table]:
    return show(rows_table(run(), columns=COLUMNS,
                           title="Building a figure and the table of numbers beside it, "
                                 "layer 3 of the bundled model; medians of 10"))


if __name__ == "__main__":
    main()
