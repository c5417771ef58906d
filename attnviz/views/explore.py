"""All heads at once (after bertviz's model and head views): one mosaic of every layer x head,
one head enlarged with exact values, and token lines for several heads in colours
(pages/explore.py). What is shown of the Trace: analysis.views (hiding [CLS]/[SEP], segment
filters including A->B and B->A, word level, the mean margins); figures: plotting.overview,
plotting.heatmaps, plotting.token_lines."""

from __future__ import annotations

import numpy as np

from ..analysis import views
from ..analysis.common import special_mask
from ..engine import token_labels
from ..i18n import _
from ..plotting.heatmaps import SQUARE_FROM, attention_heatmap
from ..plotting.overview import (
    mark_head,
    mosaic_cells,
    overview_mosaic,
    streamed_tiles,
    tiled_mosaic,
)
from ..plotting.token_lines import WINDOW, token_lines
from .blocks import Heading, Markdown
from .common import numbers

ALL_LINES_MAX = 64  # tokens up to which "all tokens" is offered for the token lines
# Shown tokens up to which the mosaic outlines the open head: moving the outline makes a new
# figure, which the browser draws again whole; past this the mosaic stays still.
OUTLINE_MAX = 24


def intro() -> list:
    return [Heading(_("All heads, token lines"), 1), Markdown(_(
        "Every tile is one head's softmax weights $w_{ij}$: rows are **queries** $i$ (who "
        "looks), columns are **keys** $j$ (who is looked at). The last column is the mean over "
        "the heads of a layer, the last row the mean over all layers. **Click a tile** (near "
        "its centre; the hover says which) to open that head below: in a short input the open "
        "head is outlined."
    ))]


def renorm_note(hide: bool, renorm: bool, seg: str) -> list:
    """Whether the shown rows are renormalised (said when keys are hidden)."""
    if not (hide or seg != "all"):
        return []
    return [Markdown(_("Rows **are renormalised**: each shown row sums to 1 over the shown "
                       "keys.") if renorm else
                     _("Rows are **not** renormalised: these are the model's own weights, "
                       "so a row sums to less than 1 where keys are hidden."), "caption")]


def shown(t, weights, hide: bool, renorm: bool, seg: str, words: bool) -> tuple:
    """(weights, tokens, indices) as shown: `weights` [..., tokens, tokens] of `t`."""
    return views.shown_weights(weights, t.tokens, t.segments, hide, renorm, seg, words,
                               t.word_pieces)


def mosaic(t, hide: bool, renorm: bool, seg: str, words: bool, progress=None):
    """Every layer x head, with the mean margins: from the held weights, or, for a trace that
    does not hold them (a long decoder input), from streamed_parts."""
    if t.holds_weights:
        w, toks, idx = shown(t, t.weights, hide, renorm, seg, words)
        return overview_mosaic(w, views.mean_maps(w), toks, idx, mosaic_cells(t.n_layers))
    return parts_mosaic(*streamed_parts(t, hide, renorm, seg, words, progress))


def streamed_parts(t, hide: bool, renorm: bool, seg: str, words: bool, progress=None) -> tuple:
    """(tiles, shown tokens, their indices) of the mosaic, a layer at a time, each layer's
    weights computed again from its queries and keys (plotting.overview.streamed_tiles: the
    held weights' tiles): what a trace without its weights draws the mosaic from, in any
    language. `progress(fraction, message)`: told after each layer."""
    seen = {}

    def layers():
        for layer in range(t.n_layers):
            w, seen["tokens"], seen["indices"] = shown(t, t.layer_weights(layer), hide, renorm,
                                                       seg, words)
            yield w
            if progress is not None:
                progress((layer + 1) / t.n_layers, _("layer {layer} of {n}").format(
                    layer=layer + 1, n=t.n_layers))

    tiles = streamed_tiles(layers(), mosaic_cells(t.n_layers))
    return tiles, seen["tokens"], seen["indices"]


def parts_mosaic(tiles, toks, idx):
    """The mosaic of streamed_parts."""
    return tiled_mosaic(tiles, toks, idx)


def shown_tokens(fig) -> int:
    """How many tokens the mosaic shows."""
    return int(fig.layout.meta["tokens"])


def outlined(fig, layer: int, head: int):
    """The mosaic with the open head outlined (only up to OUTLINE_MAX shown tokens)."""
    return mark_head(fig, layer, head)


def outline_note(n_shown: int) -> list:
    if n_shown <= OUTLINE_MAX:
        return []
    return [Markdown(_("{n} tokens shown: past {max} the open head is not outlined here "
                       "(moving the outline would send and draw the whole mosaic again at "
                       "every head change); its layer and head are named above its enlarged "
                       "view below.").format(n=n_shown, max=OUTLINE_MAX), "caption")]


def has_special(t) -> bool:
    """Whether the sentence has tokens the "Hide [CLS] and [SEP]" switch would hide
    (analysis.common.SPECIAL_TOKENS: [CLS], [SEP], <s>, ...); a decoder such as SmolLM2 adds
    none, and the switch is not offered there."""
    return bool(special_mask(t.tokens).any())


def line_choices(n_tokens: int, hide: bool, causal: bool = False) -> tuple[list, int]:
    """(the query tokens offered for the lines, the default's index): past ALL_LINES_MAX
    tokens "all tokens" (None) is not offered (every token's lines would form a wall that
    hides each line), and the default is the first word, or under a causal mask (a decoder)
    the last token: the one query that sees every key (the first words see only themselves
    and the few before them)."""
    if n_tokens <= ALL_LINES_MAX:
        return [None, *range(n_tokens)], 0
    if causal:
        return list(range(n_tokens)), n_tokens - 1
    return list(range(n_tokens)), min(1 if hide else 2, n_tokens - 1)


def token_key(n_tokens: int) -> str:
    """The widget key of the query-token choice for `n_tokens` shown tokens: one per count,
    so a list of other tokens (with or without "all tokens") is a new widget at its default,
    in the browser too, never a choice of the list before."""
    return f"ex_token_{n_tokens}"


def lines_note(n_tokens: int) -> list:
    if n_tokens <= ALL_LINES_MAX:
        return []
    return [Markdown(_("{n} tokens: lines are drawn for one query token at a time (all "
                       "tokens at once only up to {max}).").format(n=n_tokens, max=ALL_LINES_MAX),
                     "caption")]


def focus_note(fig, heads: list[int], labels: list[str], query: int | None,
               top: int = 10) -> list:
    """Past FOCUS_FROM tokens (the lines figure's meta names its keys): how many keys are
    drawn for the query, which, and the share of each head's weight they hold."""
    meta = fig.layout.meta
    if query is None or not meta or "keys" not in meta:
        return []
    shares = _(", ").join(_("head {head}").format(head=h) + f" {v:.1%}"
                          for h, v in zip(heads, meta["shares"], strict=True))
    return [Markdown(_("{k} of {n} keys drawn for query {query}: the {top} strongest in each "
                       "head and {window} on each side of it. They hold this share of the "
                       "query's weight: {shares}.").format(
        k=len(meta["keys"]), n=meta["n_keys"], query=labels[query], top=top, window=WINDOW,
        shares=shares), "caption")]


def side_by_side(n_tokens: int) -> bool:
    """The head and its lines side by side; past SQUARE_FROM tokens one under the other."""
    return n_tokens <= SQUARE_FROM


def labels(toks, idx) -> list[str]:
    return token_labels(toks, idx)


def pieces_of(t, idx, words: bool) -> list[str] | None:
    """The tokenizer's own strings of the shown tokens (Trace.word_pieces), so their labels
    say which continue a word; None at word level (whole words)."""
    return None if words else [t.word_pieces[int(i)] for i in idx]


def one_head(w, toks, idx, layer: int, head: int, pieces: list[str] | None = None):
    """One head's shown weights, scaled to its largest."""
    return attention_heatmap(w[head], toks, "weights",
                             _("Layer {layer}, head {head}").format(layer=layer, head=head),
                             indices=idx, zmax=float(w[head].max()), pieces=pieces)


def lines(w, toks, idx, layer: int, heads: list[int], query: int | None,
          pieces: list[str] | None = None):
    return token_lines(w[heads], heads, toks, idx, query=query,
                       title=_("Layer {layer}: token lines (opacity = weight)").format(
                           layer=layer), pieces=pieces)


def shares(t, layer: int, head: int, pair: bool) -> list:
    """With a sentence pair: the share of the head's weight in each direction."""
    if not pair:
        return []
    found = views.segment_shares(t.weights_of(layer, head), t.segments)
    return [Markdown(_("Share of this head's weight, averaged over its queries: {shares}")
                     .format(shares=_(", ").join(f"{_(views.FILTER_NAMES[k])} {float(v):.1%}"
                                                 for k, v in found.items())), "caption")]


def download(w, toks, idx, layer: int, head: int, hide: bool, renorm: bool, seg: str,
             words: bool):
    return numbers(_("Download this head's shown weights (.npz)"),
                   {"tokens": np.array(toks), "indices": idx, "weights": w[head],
                    "layer_mean": w.mean(axis=0), "hidden_special": hide,
                    "renormalised": renorm, "segment_filter": seg, "word_level": words},
                   f"attnviz_layer{layer}_head{head}.npz")


def page(t, layer: int = 0, head: int = 0, hide: bool = False, renorm: bool = False,
         seg: str = "all", words: bool = False, pair: bool = False, query=None,
         report=()) -> list:
    """The page as it opens (the widgets left out); `report`: what the page says about the
    trace (common.trace_report)."""
    fig = mosaic(t, hide, renorm, seg, words)
    n = shown_tokens(fig)
    w, toks, idx = shown(t, t.layer_weights(layer), hide, renorm, seg, words)
    if query is None:
        options, default = line_choices(len(toks), hide, bool(t.request.causal))
        query = options[default]
    return [*intro(), *report, *renorm_note(hide, renorm, seg),
            outlined(fig, layer, head) if n <= OUTLINE_MAX else fig, *outline_note(n),
            *lines_note(len(toks)), one_head(w, toks, idx, layer, head),
            (lf := lines(w, toks, idx, layer, [head], query)),
            *focus_note(lf, [head], labels(toks, idx), query), *shares(t, layer, head, pair),
            download(w, toks, idx, layer, head, hide, renorm, seg, words)]
