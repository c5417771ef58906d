"""Why are two sentences similar? Written for a sentence-embedding model (the bundled
all-MiniLM-L6-v2): each sentence is encoded alone, its tokens' last-layer vectors are averaged,
and two sentences are compared by the cosine. Integrated gradients (from a chosen blank) and
gradient x input attribute that cosine to each token, beside what raw attention, rollout and
flow say about the same tokens, and beside occlusion (each word removed or masked in turn)
(pages/similarity.py).
A causal decoder (the bundled SmolLM2) is not a sentence-embedding model: the page says so,
shows the cosine it gives the typed pair and pairs with nothing in common, and stops there
(`not_an_embedding`).

Numbers: analysis.attribution and analysis.occlusion (the page computes them once per
server), analysis.rollout and analysis.flow on each sentence's Trace; figures:
plotting.attribution."""

from __future__ import annotations

import numpy as np

from ..analysis import attribution, flow, occlusion
from ..analysis.common import special_mask
from ..analysis.rollout import rollout
from ..engine.folders import BUNDLED_NAME
from ..engine.kinds import DECODER
from ..engine.trace import token_labels
from ..i18n import N_, _
from ..plotting.attribution import attribution_bars, occlusion_bars
from ..plotting.common import axis_labels
from .blocks import Heading, Markdown, Metric, Table
from .common import cannot_encode, dropped, literal, numbers, pair_note, shown_name  # noqa: F401 (pages call them here)
from .compare import typed_pair

DEFAULT_B = attribution.DEFAULT_B
STEPS = (8, 16, 24, 32, 64)  # the integration steps offered
VIEW_LABELS = {"raw attention (last layer)": N_("raw attention (last layer)"),
               "rollout": N_("rollout"), "flow": N_("flow")}  # shown translated; export keys stay
BLANKS = {"pad": N_("[PAD] (the default)"), "mask": N_("[MASK]")}  # attribution.BASELINES
EMBEDDING_MODEL = "all-MiniLM-L6-v2"  # the sentence-embedding model the page is written for
# Pairs of sentences with nothing in common: what the cosine is worth on a decoder
UNRELATED = (("The stock market fell sharply today.", "My cat likes to sleep in the sun."),
             ("Quantum physics describes tiny particles.", "Bake the bread for forty minutes."),
             ("He plays the violin.", "Volcanoes erupt molten rock."))
MINILM_UNRELATED = 0.05  # all-MiniLM-L6-v2 gives each UNRELATED pair a |cosine| below it


def is_decoder(model) -> bool:
    """A causal decoder (SmolLM2, GPT-2): not a sentence-embedding model; the page says so and
    stops (`not_an_embedding`)."""
    return model is not None and model.kind == DECODER


def named(model) -> str:
    """The chosen model as the page's sentences name it (Markdown): the bundled one by its own
    name."""
    if model is None or model.name == BUNDLED_NAME:
        return EMBEDDING_MODEL
    return literal(shown_name(model))


def kept_tokens(model) -> list[str]:
    """The tokens the model's tokenizer adds to every sentence ([CLS] and [SEP]; <s> and
    </s>): what every blank keeps (attribution.structural_ids), in order."""
    if model is None:
        return ["[CLS]", "[SEP]"]
    if getattr(model, "tokenizer", None) is None:  # a vision model: no text, no added token
        return []
    ids, _, _ = model.tokenize("a")
    keep = attribution.structural_ids(model.tokenizer)
    return list(dict.fromkeys(t for i, t in zip(ids, model.tokens_of(ids), strict=True)
                              if i in keep))


def both(names: list[str]) -> str:
    """'[CLS] and [SEP]' (or one name alone), for Markdown: each name `literal` but for its
    square brackets, which stay as typed (no "(" follows them, so no link is made)."""
    names = [literal(n).replace("\\[", "[").replace("\\]", "]") for n in names]
    return _("{a} and {b}").format(a=", ".join(names[:-1]), b=names[-1]) if len(names) > 1 \
        else "".join(names)


def blanks(tokenizer) -> list[str]:
    """The blanks offered for this tokenizer: [MASK] only where it has a mask token (a
    decoder's, e.g. SmolLM2's, has none; a vision model has no tokenizer)."""
    masks = getattr(tokenizer, "mask_token_id", None) is not None
    return [k for k in BLANKS if k != "mask" or masks]


def no_mask_note() -> Markdown:
    """Said where the tokenizer has no mask token: only the removal is computed."""
    return Markdown(_("This model's tokenizer has no [MASK] token, so occlusion here only "
                      "removes each token (and [MASK] is not offered as a blank)."), "caption")


def intro(model=None) -> list:
    """The page's heading and what it computes, naming the chosen model (a decoder's:
    `not_an_embedding`; a vision model, which reads no sentence, gets the heading alone and
    the page says why it cannot encode one)."""
    if is_decoder(model) or (model is not None and getattr(model, "tokenizer", None) is None):
        return [Heading(_("Why are two sentences similar?"), 1)]
    return [Heading(_("Why are two sentences similar?"), 1), Markdown(_(
        "{name} turns a sentence into one vector: the mean of its tokens' last-layer "
        "vectors. Two sentences are similar when the **cosine** of their vectors is high. "
        "**Integrated gradients** (Sundararajan, Taly and Yan 2017) credit that cosine to each "
        "token: the input vectors of **all** words fade together, along one straight path, to "
        "a blank sentence (here each word becomes the word you pick below, at the same place; "
        "{kept} stay), and each token is credited with the part of the cosine's "
        "change that its own coordinates carry along the way. The credits add up to the score "
        "minus the blank's score (*completeness*), and they depend on the blank: another "
        "blank gives other credits. Beside them, what the attention maps say mean pooling "
        "takes from each token, and **occlusion**: each token taken away alone, the others "
        "kept (a word the tokenizer cuts into pieces is several tokens here).").format(
        name=named(model), kept=both(kept_tokens(model))))]


def not_an_embedding(model, text_a: str, text_b: str, cosines: list[float]) -> list:
    """What the page says on a causal decoder instead of its credits: that the model is not a
    sentence-embedding model, and the cosine it gives the typed pair and the UNRELATED pairs
    (`cosines`: attribution.pair_cosines of [(text_a, text_b), *UNRELATED])."""
    name = named(model)
    low, high = min(cosines[1:]), max(cosines[1:])
    return [Markdown(_(
        "This page explains the cosine of two sentence vectors, a sentence's vector being the "
        "mean of its tokens' last-layer vectors: the pooling that sentence-embedding models "
        "such as {embedding} are trained for, so that sentences of like meaning get a high "
        "cosine. **{name} is not a sentence-embedding model.** It is a causal decoder "
        "({title}), trained to predict each next token: each token's last-layer vector sees "
        "only the tokens before it, and nothing in its training makes the mean of those "
        "vectors a sentence vector. Here is that cosine on {name}, for your two sentences "
        "and for pairs of sentences with nothing in common:").format(
        embedding=EMBEDDING_MODEL, name=name, title=literal(model.title)), "warning"),
        # the cosine first: on a phone's width the sentences run past the screen, not it
        Table({_("cosine of the mean vectors"): list(cosines),
               _("sentence A"): [text_a, *(a for a, _b in UNRELATED)],
               _("sentence B"): [text_b, *(b for _a, b in UNRELATED)]},
              formats={_("cosine of the mean vectors"): "%.4f"},
              widths={_("cosine of the mean vectors"): "small", _("sentence A"): "medium",
                      _("sentence B"): "medium"}),
        Markdown(_(
            "Sentences with nothing in common score {low:.4f} to {high:.4f} on {name}; "
            "{embedding}, a sentence-embedding model, gives each of these pairs a cosine "
            "between -{bound} and {bound}. The page's credits (integrated gradients, gradient "
            "× input, occlusion) explain this cosine; on a model not trained to make it a "
            "similarity they would explain a number that does not measure what the page "
            "asks, so they are not computed for {name}. Choose {bundled} in the sidebar to "
            "see them.").format(low=low, high=high, name=name, embedding=EMBEDDING_MODEL,
                                bound=MINILM_UNRELATED, bundled=literal(_(BUNDLED_NAME))),
            "info")]


def attention_views(t, flows=None) -> dict:
    """What mean pooling takes from each input under each attention map: [n] per method;
    `flows`: the last layer's attention flow, if computed."""
    out = {"raw attention (last layer)": attribution.pooled_importance(
        t.weights[-1].astype(np.float64).mean(0)),
        "rollout": attribution.pooled_importance(rollout(t.weights)[-1])}
    if flows is not None:
        out["flow"] = attribution.pooled_importance(flows)
    return out


def score(res, text_a: str, text_b: str) -> list:
    return [Metric(_("Cosine similarity"), f"{res.score:.4f}"),
            typed_pair(text_a, text_b)]


def panel(name: str, res, side: str, t, occ, views: dict) -> list:
    """One sentence's column: the completeness check, every method's credits (bars), their
    rank correlation with IG, and IG beside occlusion. `views`: attention_views of `t`;
    `occ`: its occlusion (None past occlusion.MAX_TOKENS). Its figures: the credits, then
    occlusion."""
    ig, gxi = (res.ig_a, res.gxi_a) if side == "a" else (res.ig_b, res.gxi_b)
    if len(ig) <= 2:
        return [Markdown(_("Sentence {name} has no words to credit (only {kept}).").format(
            name=name, kept=both(res.tokens_a if side == "a" else res.tokens_b)),
            "info")]
    base = res.baseline_a if side == "a" else res.baseline_b
    gap = res.gap(side)
    out: list = [Markdown(
        _("**Sentence {name}.** Sum of IG = {ig:+.5f}; score minus the score with {name} "
          "blanked = {score:.5f} - {base:.5f} = {drop:+.5f}; completeness gap "
          "**{gap:.3%}**").format(name=name, ig=ig.sum(), score=res.score, base=base,
                                  drop=res.score - base, gap=gap)
        + " " + (_("(within 1%)") if gap <= 0.01 else _("(**over 1%: raise the steps**)")))]
    ig_label = _("integrated gradients")
    series = {ig_label: ig, _("gradient × input"): gxi,
              **{_(VIEW_LABELS[k]): v for k, v in views.items()}}
    tokens = res.tokens_a if side == "a" else res.tokens_b
    out.append(attribution_bars(tokens, series, _(
        "Sentence {name}: what each method credits to each token").format(name=name)))
    words = ~special_mask(tokens)
    methods = [m for m in series if m != ig_label]
    rho = _("Spearman ρ with IG (over {n} tokens)").format(n=int(words.sum()))
    # half a page wide: the method's name wraps in a medium column, the number keeps its room
    out.append(Table({_("method"): methods, rho: [
        attribution.spearman(ig[words], np.asarray(series[m])[words]) for m in methods]},
        formats={rho: "%.4f"}, widths={_("method"): "medium", rho: "small"}))
    if "flow" not in views:
        out.append(Markdown(_("Flow is computed up to {max} tokens; this sentence has {n}.")
                            .format(max=flow.MAX_TOKENS, n=t.n_tokens), "caption"))
    if occ is None:
        out.append(Markdown(_("Occlusion is computed up to {max} tokens; this sentence has "
                              "{n}.").format(max=occlusion.MAX_TOKENS, n=t.n_tokens),
                            "caption"))
        return out
    occ_series = {ig_label: ig, _("occlusion: token removed"): occ.remove}
    columns = [_("IG"), _("removed")]
    if occ.mask is not None:
        occ_series[_("occlusion: token → [MASK]")] = occ.mask
        columns.append(_("→ [MASK]"))
    out.append(occlusion_bars(tokens, occ_series, _("Sentence {name}: IG beside occlusion")
                              .format(name=name)))
    occluded = ~np.isnan(occ.remove)  # the words ([CLS]/[SEP] are never occluded)
    out.append(Table({_("token"): list(np.asarray(axis_labels(tokens))[occluded]),
                      **{k: np.round(np.asarray(v, float)[occluded], 5) for k, v in zip(
                          columns, occ_series.values(), strict=True)}}))
    out.append(occlusion_said(tokens, occ) if occ.mask is not None else no_mask_note())
    return out


def occlusion_said(tokens: list[str], occ) -> Markdown:
    """Why "removed" and "→ [MASK]" can disagree: removing a token moves every later token
    up one place; with the tokens where the two drops have opposite signs."""
    said = _("Removing a token moves every later token up one place (each then gets the "
             "position embedding of the place before it), so \"removed\" changes the "
             "positions too; \"→ [MASK]\" keeps every token in its place.")
    labels = [label if tokens.count(t) > 1 else t
              for label, t in zip(token_labels(tokens), tokens, strict=True)]
    apart = [k for k in np.flatnonzero(~np.isnan(occ.remove))
             if np.sign(occ.remove[k]) * np.sign(occ.mask[k]) < 0]
    if apart:
        k = max(apart, key=lambda k: abs(occ.remove[k] - occ.mask[k]))
        said += " " + _("Here the two disagree in sign for {n} of the tokens; most for {token}: "
                        "{removed:+.3f} removed, {masked:+.3f} masked.").format(
            n=len(apart), token=f"`{labels[k]}`", removed=occ.remove[k], masked=occ.mask[k])
    return Markdown(said, "caption")


def reading(model=None) -> Markdown:
    """How to read the bars beside each other."""
    return Markdown(_(
        "The bars of each method are scaled to its largest |value| (hover for the number). "
        "IG and gradient × input can be negative (a token that makes the sentences less "
        "alike); the attention views are shares and never negative, and they say where "
        "information can flow, not what it does to the cosine. {kept} are part of "
        "the blank, so IG gives them 0 by construction; the rank correlations leave them "
        "out. Occlusion and IG are both in units of the cosine but ask different questions: "
        "occlusion takes one word away while all the others stay (its drops need not add up "
        "to anything); IG fades all words together and shares out the whole change.").format(
        kept=both(kept_tokens(model))), "info")


def download(res, occ_a, occ_b, views_a: dict, views_b: dict, steps: int, blank: str):
    return numbers(_("Download the attributions (.npz)"), lambda: {
        "tokens_a": np.array(res.tokens_a), "tokens_b": np.array(res.tokens_b),
        "ig_a": res.ig_a, "ig_b": res.ig_b, "gxi_a": res.gxi_a, "gxi_b": res.gxi_b,
        "score": res.score, "baseline_a": res.baseline_a, "baseline_b": res.baseline_b,
        "steps": steps, "blank": blank,
        **{f"occlusion_{mode}_{k}": getattr(o, mode) for k, o in (("a", occ_a), ("b", occ_b))
           if o is not None for mode in occlusion.MODES if getattr(o, mode) is not None},
        **{f"a_{k}": v for k, v in views_a.items()},
        **{f"b_{k}": v for k, v in views_b.items()}}, "attnviz_similarity.npz")


def page(res, ta, tb, text_a: str, text_b: str, occ_a, occ_b, views_a: dict, views_b: dict,
         steps: int = attribution.DEFAULT_STEPS, blank: str = "pad",
         pair: bool = False, model=None) -> list:
    """The page (the widgets left out; the two sentences' panels one after the other)."""
    return [*intro(model), *([pair_note()] if pair else []), *dropped(ta, tb),
            *score(res, text_a, text_b), *panel("A", res, "a", ta, occ_a, views_a),
            *panel("B", res, "b", tb, occ_b, views_b), reading(model),
            download(res, occ_a, occ_b, views_a, views_b, steps, blank)]
