"""Two sentences side by side: one head's attention for the tokens the sentences share, and the
difference A - B, each sentence encoded alone (pages/compare.py). Numbers: analysis.compare
(difflib alignment, the difference) on the two Traces; figure: plotting.compare."""

from __future__ import annotations

import numpy as np

from ..analysis.compare import align_tokens, aligned_difference, common_prefix
from ..i18n import _
from ..plotting.compare import compare_figure
from .blocks import Code, Heading, Markdown
from .common import cannot_encode, dropped, literal, numbers, pair_note  # noqa: F401 (pages call them here)

DEFAULT_B = "I saw a dog"


def intro() -> list:
    return [Heading(_("Compare two sentences"), 1), Markdown(_(
        "Change a word and watch a head change its mind. Both sentences are encoded alone; "
        "tokens are **aligned** where the two token lists agree, in order, and for those "
        "tokens the page shows the head's weights in A, in B, and **A - B** (red: A reads "
        "that key more, blue: B does)."))]


def aligned(ta, tb, layer: int, head: int) -> tuple:
    """(pairs, weights in A, weights in B, A - B) of one head over the aligned tokens."""
    pairs = align_tokens(ta.tokens, tb.tokens)
    return (pairs, *aligned_difference(ta.weights[layer, head], tb.weights[layer, head], pairs))


def typed_pair(text_a: str, text_b: str) -> Code:
    """The two sentences as typed, shown as text: in Markdown a URL inside a sentence would
    become a link (GFM's autolinks are found after escapes are read), so not in Markdown."""
    one_line = lambda text: str(text).replace("\r", " ").replace("\n", " ")  # noqa: E731
    return Code(f"A: {one_line(text_a)}\nB: {one_line(text_b)}")


def head_text(ta, tb, text_a: str, text_b: str, layer: int, head: int) -> list:
    """The two sentences, how many tokens align, and the largest change, its tokens named by
    their labels in A (engine.token_labels: saw #2)."""
    pairs, wa, wb, diff = aligned(ta, tb, layer, head)
    labels = [ta.labels[i] for i, _ in pairs]
    out = [typed_pair(text_a, text_b), Markdown(_(
        "{k} aligned tokens of {a} in A and {b} in B.").format(k=len(pairs), a=ta.n_tokens,
                                                              b=tb.n_tokens))]
    rows = np.arange(len(pairs))  # the queries whose weights can change
    if ta.request.causal:
        prefix = common_prefix(ta.tokens, tb.tokens)
        rows = rows[[i >= prefix for i, _ in pairs]] if pairs else rows
        out += [Markdown(_(
            "In a causal model a token sees only itself and the tokens before it, so the {p} "
            "tokens before the first difference have the same weights in A and B; the largest "
            "change is looked for among the aligned tokens after it.").format(p=prefix),
            "caption")] if prefix else []
        if not rows.size:
            out.append(Markdown(_("No aligned token comes after the first difference: no "
                                  "weight shown here can change."), "caption"))
    if diff.size and rows.size:
        q, k = np.unravel_index(np.abs(diff[rows]).argmax(), (rows.size, diff.shape[1]))
        big = (rows[q], k)
        out.append(Markdown(_("Largest change: query {q} reading key {k} (labels as in A): "
                              "{a:.3f} in A, {b:.3f} in B. Rows sum to less than 1: keys "
                              "that are not aligned are left out.").format(
            q=literal(labels[big[0]]), k=literal(labels[big[1]]), a=wa[big], b=wb[big]),
            "caption"))
    return out


def figure(ta, tb, layer: int, head: int):
    """One head's weights in A, in B and A - B, over the aligned tokens."""
    pairs, wa, wb, diff = aligned(ta, tb, layer, head)
    return compare_figure(wa, wb, diff, [ta.tokens[i] for i, _ in pairs], (
        _("A, layer {layer} head {head}").format(layer=layer, head=head),
        _("B, same head"), "A - B"), labels=[ta.labels[i] for i, _ in pairs], sentence=ta.tokens)


def whole(ta, tb) -> np.ndarray:
    """A - B of every layer and head over the aligned tokens."""
    return aligned_difference(ta.weights, tb.weights, align_tokens(ta.tokens, tb.tokens))[2]


def layer_means(ta, tb) -> Markdown:
    return Markdown(_("Mean |A - B| over the aligned pairs, per layer (all heads):") + " "
                    + _(", ").join(_("layer {i}: {v:.3f}").format(i=i, v=v) for i, v in
                                   enumerate(np.abs(whole(ta, tb)).mean(axis=(1, 2, 3)))),
                    "caption")


def download(ta, tb, layer: int, head: int):
    """The aligned weights and the difference, made when the file is."""
    def make() -> dict:
        pairs, wa, wb, diff = aligned(ta, tb, layer, head)
        return {"tokens_a": np.array(ta.tokens), "tokens_b": np.array(tb.tokens),
                "aligned": np.array(pairs, dtype=np.int64).reshape(-1, 2), "weights_a": wa,
                "weights_b": wb, "difference": diff, "difference_all_heads": whole(ta, tb),
                "layer": layer, "head": head}

    return numbers(_("Download the aligned weights and the difference (.npz)"), make,
                   "attnviz_compare.npz")


def head_part(ta, tb, text_a: str, text_b: str, layer: int, head: int, fig=None) -> list:
    """What the page shows of one head (`fig`: the figure, if the caller has it cached)."""
    return [*head_text(ta, tb, text_a, text_b, layer, head),
            fig if fig is not None else figure(ta, tb, layer, head),
            layer_means(ta, tb), download(ta, tb, layer, head)]


def page(ta, tb, text_a: str, text_b: str, layer: int = 0, head: int = 0,
         pair: bool = False) -> list:
    """The page as it opens on `layer` and `head` (the widgets left out)."""
    return [*intro(), *([pair_note()] if pair else []), *dropped(ta, tb),
            *head_part(ta, tb, text_a, text_b, layer, head)]
