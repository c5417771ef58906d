"""Heads across many sentences (Clark et al. 2019, sections 3 and 6): each head's statistics
averaged over a corpus with their spread, the Jensen-Shannon distance between heads and a 2-D
map of the heads coloured by behaviour (pages/corpus_heads.py). Numbers: analysis.corpus_heads
(each sentence traced alone; classical MDS); figures: plotting.corpus and plotting.stats."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..analysis import corpus_heads as ch
from ..analysis.head_stats import CONVENTIONS, STATS
from ..i18n import N_, _
from ..plotting.corpus import head_map
from ..plotting.heatmaps import attention_heatmap
from ..plotting.stats import stats_heatmaps
from .blocks import Heading, Markdown
from .common import numbers

BEHAVIOUR_LABELS = {"previous": N_("previous"), "next": N_("next"), "broad": N_("broad"),
                    "mixed": N_("mixed")}  # [CLS], [SEP] stay as they are
SOURCES = ("sidebar", "sample")  # where the sentences come from


def behaviour(name: str) -> str:
    return _(BEHAVIOUR_LABELS[name]) if name in BEHAVIOUR_LABELS else name


def source_name(src: str) -> str:
    return {"sidebar": _("sidebar"), "sample": _("sample")}[src]


def intro() -> list:
    return [Heading(_("Heads across many sentences"), 1), Markdown(_(
        "One sentence shows what a head did once. Averaged over many sentences, the statistics "
        "of *Head statistics* say what a head **usually** does (the hover gives the mean ± its "
        "spread over sentences). The map places heads that attend alike near each other: "
        "distance = square root of the Jensen-Shannon divergence of their rows, averaged over "
        "queries and sentences; map = classical multidimensional scaling."))]


def no_model(error: str | None) -> Markdown:
    return Markdown(error or _("No model is loaded."), "error")


def paste_note() -> Markdown:
    return Markdown(_("Paste a paragraph or more into the sidebar's sentence box (up to "
                      "20,000 characters); it is split into sentences at . ! ? and line "
                      "breaks."), "caption")


def corpus_text(src: str, sidebar_text: str) -> str:
    """The text the sentences are split from."""
    return ch.sample_text() if src == "sample" else sidebar_text


def no_sentences() -> Markdown:
    return Markdown(_("Type or paste a few sentences into the sidebar's box to begin, or "
                      "pick the sample."), "info")


def nothing_to_analyse(error: Exception) -> Markdown:
    return Markdown(_("Nothing to analyse: {error}. Longer sentences are left out because "
                      "the distances between heads cost (heads² x tokens²) per "
                      "sentence.").format(error=error), "warning")


def summary(c: ch.CorpusHeads, conv: str) -> Markdown:
    return Markdown(
        _("{n} sentences, {tokens:,} tokens, **{conv}** conventions ({about})").format(
            n=len(c.sentences), tokens=c.tokens, conv=conv, about=_(CONVENTIONS[conv]))
        + (_("; {k} sentence(s) left out (longer than {max} tokens, or empty)").format(
            k=c.skipped, max=ch.MAX_SENTENCE_TOKENS) if c.skipped else "")
        + _("; at most {n} sentences.").format(n=ch.MAX_SENTENCES), "caption")


def head_map_figure(c: ch.CorpusHeads, layer: int, head: int):
    """Every head on the 2-D map, coloured by behaviour, the picked one marked."""
    share = ch.explained_share(c.eigenvalues)
    return head_map(c.coords, c.behaviour, (layer, head), title=_(
        "Map of the {n} heads (the two axes carry {share:.0%} of the distances' "
        "variance)").format(n=c.coords.shape[0], share=share))


def picked(c: ch.CorpusHeads, point_index: int, n_heads: int) -> tuple[int, int]:
    """(layer, head) of a point clicked on the map."""
    return divmod(int(point_index), n_heads)


def behaviours(c: ch.CorpusHeads, layer: int, head: int) -> Markdown:
    counts = Counter(c.behaviour.ravel().tolist())
    return Markdown(_(
        "Layer {layer}, head {head}: **{behaviour}**. Behaviours: {counts}. A head is [CLS], "
        "[SEP], previous or next when its mean share there is at least {share:.0%}; otherwise "
        "broad when its mean row entropy is at least {entropy:.0%} of ln n; otherwise "
        "mixed.").format(layer=layer, head=head, behaviour=behaviour(c.behaviour[layer, head]),
                         counts=", ".join(f"{behaviour(k)} {counts[k]}"
                                          for k in ch.BEHAVIOURS if counts[k]),
                         share=ch.BEHAVIOUR_SHARE, entropy=ch.BROAD_ENTROPY), "caption")


def sentence_label(c: ch.CorpusHeads, k: int) -> str:
    return f"{k + 1}: {c.sentences[k][:90]}"


def one_sentence(one, layer: int, head: int, k: int):
    """The picked head's weights on sentence k (its trace `one`)."""
    return attention_heatmap(one.weights[layer, head], one.tokens, "weights",
                             _("Layer {layer}, head {head}, sentence {k}").format(
                                 layer=layer, head=head, k=k + 1))


def stats(c: ch.CorpusHeads, layer: int, head: int):
    return stats_heatmaps(c.mean, {k: _(v) for k, v in STATS.items()}, selected=(layer, head),
                          spread=c.spread)


def download(c: ch.CorpusHeads, conv: str):
    return numbers(_("Download the corpus statistics (.npz)"), lambda: {
        "sentences": np.array(c.sentences), "conventions": conv,
        **{f"mean_{k}": v for k, v in c.mean.items()},
        **{f"spread_{k}": v for k, v in c.spread.items()},
        "relative_entropy": c.relative_entropy, "js_divergence": c.js,
        "distance": c.distance, "map": c.coords, "eigenvalues": c.eigenvalues,
        "behaviour": c.behaviour}, "attnviz_corpus_heads.npz")


def head_part(c: ch.CorpusHeads, conv: str, one, layer: int, head: int, k: int) -> list:
    """What the page shows of one head (`one`: the trace of sentence k)."""
    return [head_map_figure(c, layer, head), behaviours(c, layer, head),
            one_sentence(one, layer, head, k), stats(c, layer, head), download(c, conv)]


def page(c: ch.CorpusHeads, conv: str, one, src: str = "sidebar", layer: int = 0,
         head: int = 0, k: int = 0) -> list:
    """The page as it opens (the widgets left out); `one`: the trace of sentence k."""
    return [*intro(), *([paste_note()] if src == "sidebar" else []), summary(c, conv),
            *head_part(c, conv, one, layer, head, k)]
