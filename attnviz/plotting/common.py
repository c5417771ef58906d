"""Helpers every figure uses: safe token labels and the shared colour scales.

Two traps handled here once for the whole project:
- Plotly merges repeated categories ("I saw a saw" would show 3 columns, not 4), so axes
  use one unique label per position ('saw #2', 'saw #4') and show the bare token as tick text.
- Plotly renders <b>, <br>, <a> in labels, so every token is HTML-escaped and shows as typed.
"""

from __future__ import annotations

import html

SCORES_SCALE = "RdBu_r"  # diverging: q.k can be negative or positive, 0 in white
WEIGHTS_SCALE = "Viridis"  # sequential: softmax weights lie in [0, 1]
FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=13)


def escape(text: str) -> str:
    """Token text as Plotly must receive it to show it literally."""
    return html.escape(str(text), quote=False).replace("\n", "\\n")


def axis_labels(tokens: list[str], positions=None) -> list[str]:
    """One unique, escaped category per position: '<token> #<position>'."""
    positions = range(len(tokens)) if positions is None else positions
    return [f"{escape(t)} #{int(p)}" for t, p in zip(tokens, positions, strict=True)]


def tick_labels(tokens: list[str], max_ticks: int = 60,
                positions=None) -> tuple[list[str], list[str]]:
    """(tickvals, ticktext) for a category axis of unique labels, thinned for long inputs.

    Thinned ticks name their position too ('#27 the'), so they are not read as the next row.
    """
    labels = axis_labels(tokens, positions)
    positions = list(range(len(tokens))) if positions is None else list(positions)
    step = max(1, -(-len(tokens) // max_ticks))
    idx = range(0, len(tokens), step)
    text = [escape(tokens[i]) if step == 1 else f"#{int(positions[i])} {escape(tokens[i])}"
            for i in idx]
    return [labels[i] for i in idx], text


def block_reduce(matrix, max_size: int):
    """Max-pool a 2-D array into at most max_size x max_size blocks (for overviews only)."""
    import numpy as np

    n_r, n_c = matrix.shape
    f_r, f_c = -(-n_r // max_size), -(-n_c // max_size)
    if f_r == 1 and f_c == 1:
        return matrix, 1
    pad_r, pad_c = (-n_r) % f_r, (-n_c) % f_c
    m = np.pad(matrix, ((0, pad_r), (0, pad_c)), constant_values=np.nan)
    m = m.reshape(m.shape[0] // f_r, f_r, m.shape[1] // f_c, f_c)
    return np.nanmax(m, axis=(1, 3)), max(f_r, f_c)
