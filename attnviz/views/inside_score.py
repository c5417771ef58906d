"""Inside one score (bertviz's neuron view, continued through the values): how one query
token's q meets every key k, becomes a weight, and mixes the values into the head's output
(pages/inside_score.py). Numbers: analysis.views.inside_score on the Trace's queries, keys and
values (analysis.words for the word-level weights); figures: plotting.neuron."""

from __future__ import annotations

import numpy as np

from ..analysis.views import inside_score
from ..analysis.words import merge_tokens, word_attention, word_groups
from ..i18n import _
from ..plotting.common import axis_labels
from ..plotting.neuron import score_steps, value_steps
from .blocks import Heading, Markdown, Table
from .common import literal, numbers


def intro() -> list:
    return [Heading(_("Inside one score"), 1), Markdown(_(
        "For one head and one **query** token $i$: multiply $q^i$ with each **key** $k^j$ "
        "component by component ($q^i \\circ k^j$), add up the components "
        "($s_j = q^i \\cdot k^j$), divide by $\\sqrt{d}$, and take the softmax over the keys: "
        "$w_j$. Then the head's **output** for token $i$ is $o^i = \\sum_j w_j v^j$."
    ))]


def default_query(t) -> int:
    """The query token the page opens on: the first word."""
    return min(1, t.n_tokens - 1)


def steps(t, layer: int, head: int, query: int) -> dict:
    """One query's numbers (analysis.views.inside_score)."""
    return inside_score(t.queries[layer, head], t.head_keys(layer, head),
                        t.head_values(layer, head), query, t.scale, t.mask_of(layer))


def sizes(t, nb: dict, layer: int, head: int, query: int) -> Markdown:
    """d, the scale, the keys, and how closely the output matches the engine's."""
    diff = float(np.abs(nb["output"] - t.outputs[layer, head, query]).max())
    return Markdown(_("d = {d} · 1/√d = {scale:.4f} · {n} keys · the output matches the "
                      "engine's recorded output to {diff:.1e}").format(
        d=t.head_dim, scale=t.scale, n=t.n_tokens, diff=diff), "caption")


def title(t, layer: int, head: int, query: int) -> str:
    return _("Layer {layer}, head {head}, query {query}").format(
        layer=layer, head=head, query=axis_labels(t.tokens)[query])  # escaped


def scores_heading() -> Heading:
    return Heading(_("1 · From q and k to the weights"), 3)


def scores_figure(t, nb: dict, layer: int, head: int, query: int):
    return score_steps(nb, t.tokens, query, title=title(t, layer, head, query))


def values_heading() -> Heading:
    return Heading(_("2 · From the weights and the values to the output"), 3)


def values_figure(t, nb: dict, layer: int, head: int, query: int):
    return value_steps(nb, t.tokens, query, title=title(t, layer, head, query))


def table_heading() -> Heading:
    return Heading(_("The numbers, one row per key"), 3)


def table(t, nb: dict) -> Table:
    """One row per key: q·k, scaled, the weight, |w v| (every column after the first a
    number)."""
    return Table({_("key"): t.labels, "q·k": nb["scores"], f"q·k/√{t.head_dim}": nb["scaled"],
                  _("weight"): nb["weights"], "|w v|": np.linalg.norm(nb["weighted"], axis=1)})


def output(t, nb: dict) -> Markdown:
    return Markdown(_("Output $o^i$ ({d} numbers):").format(d=t.head_dim) + " `"
                    + " ".join(f"{x:+.4f}" for x in nb["output"]) + "`")


def words(t, layer: int, head: int, query: int) -> tuple[Markdown, Table]:
    """The word the query belongs to, and what it reads: weights summed over a word's keys,
    averaged over its queries."""
    groups = word_groups(t.word_pieces)
    word = next(u for u, g in enumerate(groups) if query in g)
    row = word_attention(t.weights[layer, head], groups)[word]
    names = merge_tokens(t.tokens, groups)
    # a word carries its first piece's number, as every label does (saw #2; [CLS] #0)
    number = [t.labels[g[0]].rsplit(" #", 1)[1] for g in groups]
    return (Markdown(_("The word {word} ({n} piece(s)) reads:").format(
        word=literal(names[word]), n=len(groups[word])), "caption"),
        Table({_("word"): [f"{w} #{k}" for w, k in zip(names, number, strict=True)],
               _("weight"): row}))


def download(t, nb: dict, layer: int, head: int, query: int):
    return numbers(_("Download these numbers (.npz)"),
                   {"tokens": np.array(t.tokens), "layer": layer, "head": head, "query": query,
                    **nb}, f"attnviz_inside_l{layer}_h{head}_q{query}.npz")


def page(t, layer: int = 0, head: int = 0, query: int | None = None,
         word_level: bool = False, report=()) -> list:
    """The page as it opens (the widgets left out); `report`: what the page says about the
    trace (common.trace_report)."""
    query = default_query(t) if query is None else query
    nb = steps(t, layer, head, query)
    return [*intro(), *report, sizes(t, nb, layer, head, query),
            scores_heading(), scores_figure(t, nb, layer, head, query),
            values_heading(), values_figure(t, nb, layer, head, query),
            table_heading(), table(t, nb), output(t, nb),
            *(words(t, layer, head, query) if word_level else ()),
            download(t, nb, layer, head, query)]
