"""What every view uses: typed text made literal, the model's shown name, the numbers a view
offers (made when a file is), and what a page says about the trace it shows."""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from ..engine.bundled import SMOLLM2_NAME, dequantized_from
from ..engine.folders import BUNDLED_NAME
from ..i18n import N_, _
from .blocks import Markdown, Numbers

_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!$<>|~&:=^\"'])")


def literal(text: str) -> str:
    """`text` escaped for Markdown: every Markdown/KaTeX/HTML special character gets a
    backslash, so it renders as itself; newlines become spaces."""
    return _MARKDOWN.sub(r"\\\1", str(text).replace("\r", " ").replace("\n", " "))


def shown_name(model) -> str:
    """The model's name in the current language: the bundled model and the random demos are
    named by the app (translated), a checkpoint by its folder or Hub id (as it is)."""
    if model.name in (BUNDLED_NAME, SMOLLM2_NAME):
        return _(model.name)
    if model.name == f"random {model.title}":
        return _("random {title}").format(title=model.title)
    return model.name


def kept(value, max_copy: int = 16 * 2**20):
    """A small slice of a big array (one head of a cached trace) copied, so numbers offered
    for later do not keep the whole trace alive; anything else as it is."""
    if isinstance(value, np.ndarray) and value.base is not None and value.nbytes <= max_copy:
        return value.copy()
    return value


def numbers(label: str, arrays: dict | Callable[[], dict], file_name: str,
            kind: str = "npz") -> Numbers:
    """Named arrays offered as an .npz (kind "npz") or equal-length columns as a .csv ("csv").
    `arrays` may be a function returning them (made only when the file is: fetch a big
    trace again inside it); a dict's small slices are copied now (`kept`)."""
    if callable(arrays):
        return Numbers(label, arrays, file_name, kind)
    held = {k: kept(v) for k, v in arrays.items()} if kind == "npz" else arrays
    return Numbers(label, lambda: held, file_name, kind)


def model_notes(model) -> list:
    """What must be said wherever a model's numbers are shown (a caption): weights
    dequantized from a quantized file (engine.bundled: the bundled SmolLM2's 4 bits)."""
    quantization = dequantized_from(model)
    if quantization is None:
        return []
    return [Markdown(_("{name}: its weights are dequantized from 4 bits ({quantization}, a "
                       "GGUF file), so its numbers are those of the 4-bit model, not of the "
                       "original float weights.").format(name=literal(shown_name(model)),
                                                quantization=literal(quantization)), "caption")]


def trace_report(model, t, notes=()) -> list:
    """What a page says with a trace: tokens dropped (a warning), what `model_notes` says,
    then the notes (captions)."""
    out = []
    if t.dropped and model.max_positions < model.model_positions:  # the server's limit
        out.append(Markdown(_("The input is longer than this server's {n} tokens per trace "
                              "(ATTNVIZ_MAX_TOKENS; the model itself takes {m}): {dropped} "
                              "tokens at the end were dropped.").format(
            n=model.max_positions, m=model.model_positions, dropped=t.dropped), "warning"))
    elif t.dropped:
        out.append(Markdown(_("The input is longer than the model's {n} positions: {dropped} "
                              "tokens at the end were dropped.").format(
            n=model.max_positions, dropped=t.dropped), "warning"))
    out += model_notes(model)
    out += [Markdown(f":material/info: {literal(note)}", "caption")
            for note in dict.fromkeys((*notes, *t.notes))]
    return out


def adapted_request(model, text: str, pair: str | None, image=None):
    """(request, notes): the sentence(s) as this model's family takes them (a vision model:
    `image`, by default the demo image; an encoder-decoder: the pair as the decoder's target;
    a decoder: one text), and what was adapted, as sentences."""
    from ..engine import DECODER, ENCODER_DECODER, VISION, TraceRequest, demo_image

    title = model.title
    if model.kind == VISION:
        return TraceRequest(image=demo_image() if image is None else image), (
            _("{title} reads an image, not the sentence: it sees attnviz's demo "
              "image.").format(title=title),)
    if model.kind == ENCODER_DECODER:
        note = (_("{title} is an encoder-decoder: the sentence is the source, the second "
                  "sentence the decoder's target.").format(title=title) if pair else ())
        return TraceRequest(text, target=pair), ((note,) if note else ())
    if model.kind == DECODER and pair:
        return TraceRequest(text), (_("{title} reads one text: the second sentence is left "
                                      "out.").format(title=title),)
    return TraceRequest(text, pair), ()


BERT_LIKE = N_("BERT, RoBERTa or DistilBERT")  # the bert_like families, named in a sentence


def bert_like(model) -> bool:
    """A bidirectional text encoder with BERT's post-LayerNorm layer: what the lessons on
    positions, windows and the step-by-step recomputation are written for."""
    from ..engine import ENCODER

    caps = model.capabilities
    return (model.kind == ENCODER and caps["input"] == "text" and caps["bidirectional"]
            and not caps["pre_norm"])


def why_not_bert_like(model, what: str) -> str:
    """One plain sentence: why `what` is not shown for this model."""
    from ..engine import DECODER, ENCODER_DECODER

    caps = model.capabilities
    if caps["input"] == "image":
        reason = _("reads an image as patches on a 2-D grid, not a sentence")
    elif not caps["bidirectional"] or model.kind == DECODER:
        reason = _("is a decoder: each token sees only the tokens before it, so what this "
                   "part shows about a bidirectional encoder does not hold")
    elif model.kind == ENCODER_DECODER:
        reason = _("is an encoder-decoder")
    else:
        reason = _("puts LayerNorm before attention (pre-LayerNorm), not after it as BERT does")
    return _("{what} is written for a bidirectional text encoder with BERT's layers "
             "({bert_like}). The loaded model, {name}, is a {title} that {reason}. Pick such a "
             "model in the sidebar, or see *Decoders, encoder-decoders, images* for this "
             "one.").format(what=what, bert_like=_(BERT_LIKE), name=literal(shown_name(model)),
                            title=model.title, reason=reason)


def not_bert_like(model, what: str) -> list:
    """[] for a bert_like model; else the one sentence why `what` is not shown (info)."""
    return [] if bert_like(model) else [Markdown(why_not_bert_like(model, what), "info")]


def weights_kept_up_to(model) -> int:
    """The longest input (tokens) whose trace holds every head's weights on `model` (a decoder
    past it keeps queries and keys only: engine.families.llama.KEEP_WEIGHTS_BYTES); the model's
    own limit where every trace holds them."""
    keeps = getattr(model, "keeps_weights", None)
    top = int(model.max_positions)
    if keeps is None or keeps(top):
        return top
    low, high = 1, top  # keeps(low), not keeps(high)
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if keeps(mid) else (low, mid)
    return low


def needs_every_weight(model, t) -> list:
    """[] when trace t holds every head's weights; else one sentence (info): this page reads
    them all at once, which a long decoder input's trace does not keep, the length up to which
    it does, and the pages that read such a trace a layer at a time."""
    if t.weights is not None:
        return []
    return [Markdown(_(
        "This page reads every head's weights at once, and the trace of these {n} tokens on "
        "{title} does not keep them (it keeps them up to {limit} tokens). Shorten the text to "
        "{limit} tokens, or open *All heads, token lines*, *Head statistics, rollout and flow* "
        "or *Windows and receptive fields*, which read a long input a layer at a time.").format(
        n=t.n_tokens, title=literal(shown_name(model)), limit=weights_kept_up_to(model)),
        "info")]


def pair_note() -> Markdown:
    """Where sentence B of a two-sentence page comes from."""
    return Markdown(_("Sentence B is the sidebar's second sentence (encoded alone here)."),
                    "caption")


def cannot_encode(error: Exception) -> Markdown:
    """The error a sentence (or a pair) could not be encoded with, said on the page."""
    return Markdown(_("Cannot encode this input: {error}").format(error=error), "error")


def dropped(ta, tb) -> list:
    """A warning for each of two sentences (traces A and B) longer than the model's
    positions."""
    return [Markdown(_("Sentence {name} is longer than the model's {n} positions: "
                       "{dropped} tokens at the end were dropped.").format(
        name=name, n=tr.n_tokens, dropped=tr.dropped), "warning")
        for name, tr in (("A", ta), ("B", tb)) if tr.dropped]
