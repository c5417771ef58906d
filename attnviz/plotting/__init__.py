"""Plotly figures from engine arrays. Never imports streamlit: usable from a notebook."""

from .common import axis_labels, escape, tick_labels
from .heatmaps import attention_heatmap, heads_grid

__all__ = ["attention_heatmap", "axis_labels", "escape", "heads_grid", "tick_labels"]
