"""Notebook views in the ecosystem's convention (bertviz's head_view / model_view):

    from transformers import AutoModel, AutoTokenizer
    out = hf_model(ids, output_attentions=True)           # attn_implementation="eager"
    attnviz.head_view(out.attentions, tokens)             # a tuple of [batch, heads, n, n]
    attnviz.model_view(trace)                             # or an attnviz Trace

Each returns a `View`: Jupyter shows it (`_repr_html_`), `view.save("view.html")` writes one
self-contained HTML file with Plotly's JavaScript embedded, so it opens offline (no script or
stylesheet is loaded from a CDN). A Trace of an encoder-decoder also offers its decoder's
self-attention (which="decoder") and its cross-attention (which="cross": rows = decoder
tokens, columns = encoder tokens).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from .engine.trace import Trace
from .plotting.notebook_views import layer_lines, mosaic

WHICH = ("self", "decoder", "cross")


@dataclass
class View:
    """A figure that shows itself in Jupyter and saves as one offline HTML file."""

    figure: go.Figure

    def html(self, full: bool = True) -> str:
        """The figure as HTML with plotly.js inline (no CDN, no MathJax)."""
        return self.figure.to_html(include_plotlyjs=True, full_html=full, include_mathjax=False,
                                   config={"displaylogo": False, "responsive": True})

    def _repr_html_(self) -> str:
        return self.html(full=False)

    def save(self, path) -> Path:
        """Write the self-contained HTML file; returns its path."""
        path = Path(path)
        path.write_text(self.html(), encoding="utf-8")
        return path


def attention_arrays(attentions, tokens=None, which: str = "self", batch: int = 0,
                     key_tokens=None) -> tuple[np.ndarray, list[str], list[str]]:
    """(weights [layers, heads, m, n], query tokens, key tokens) from a Trace or from
    transformers' outputs.attentions (a tuple of [batch, heads, m, n] tensors, one per layer,
    or one such array)."""
    if which not in WHICH:
        raise ValueError(f"which must be one of {', '.join(WHICH)}")
    if isinstance(attentions, Trace):
        t = attentions
        if which != "self" and not t.has_decoder:
            raise ValueError(f"which={which!r} needs an encoder-decoder trace (e.g. BART)")
        weights = {"self": t.weights, "decoder": t.decoder_weights,
                   "cross": t.cross_weights}[which]
        queries = t.tokens if which == "self" else t.decoder_tokens
        keys = t.decoder_tokens if which == "decoder" else t.tokens
        return np.asarray(weights), list(tokens or queries), list(key_tokens or keys)
    if isinstance(attentions, (list, tuple)):
        if not attentions:
            raise ValueError("no attentions: was the model run with output_attentions=True "
                             "and attn_implementation='eager'?")
        layers = [_numpy(a) for a in attentions]
        weights = np.stack([a[batch] if a.ndim == 4 else a for a in layers])
    else:
        weights = _numpy(attentions)
        weights = weights[:, batch] if weights.ndim == 5 else weights
    if weights.ndim != 4:
        raise ValueError(f"attentions must be [layers, heads, queries, keys]; got {weights.shape}")
    m, n = weights.shape[-2:]
    queries = [str(i) for i in range(m)] if tokens is None else [str(x) for x in tokens]
    keys = (queries if m == n else [str(i) for i in range(n)]) if key_tokens is None else [
        str(x) for x in key_tokens]
    if len(queries) != m or len(keys) != n:
        raise ValueError(f"{len(queries)} query and {len(keys)} key tokens for attentions of "
                         f"{m} x {n}")
    return weights.astype(np.float32), queries, keys


def _numpy(a) -> np.ndarray:
    if hasattr(a, "detach"):
        a = a.detach().float().cpu().numpy()
    return np.asarray(a)


def head_view(attentions, tokens=None, *, layer: int = 0, heads=None, which: str = "self",
              key_tokens=None, min_weight: float = 0.0, levels: int = 20,
              batch: int = 0) -> View:
    """bertviz's head view: token lines of every head (or `heads`) of one layer, with a menu
    for the layer. `attentions`: a Trace, or transformers' outputs.attentions (then `tokens`
    names the positions, e.g. tokenizer.convert_ids_to_tokens(ids)). A line's opacity is its
    weight rounded to the nearest 1/`levels` (bertviz: the weight itself); a pair whose weight
    rounds to 0, or is below `min_weight`, is not drawn (a note under the view says so)."""
    w, q, k = attention_arrays(attentions, tokens, which, batch, key_tokens)
    title = {"self": "Attention", "decoder": "Decoder self-attention",
             "cross": "Cross-attention: decoder (left) to encoder (right)"}[which]
    return View(layer_lines(w, q, k, layer=layer, heads=heads, min_weight=min_weight,
                            levels=levels, title=title))


def model_view(attentions, tokens=None, *, which: str = "self", key_tokens=None,
               max_cells: int = 48, batch: int = 0) -> View:
    """bertviz's model view: every layer (rows) x head (columns) as one heatmap mosaic."""
    w, q, k = attention_arrays(attentions, tokens, which, batch, key_tokens)
    title = {"self": "All heads", "decoder": "Decoder self-attention, all heads",
             "cross": "Cross-attention, all heads (rows: decoder, columns: encoder)"}[which]
    return View(mosaic(w, q, k, max_cells=max_cells, title=title))
