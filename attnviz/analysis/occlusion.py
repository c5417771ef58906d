"""Word importance by occlusion: the similarity s(A, B) of two sentence embeddings (the mean of
the last layer's token vectors, as analysis.attribution) recomputed with one token of A taken
away at a time, the other sentence held fixed. The simplest causal attribution (Zeiler and
Fergus 2014 occluded image patches; Li, Monroe and Jurafsky 2016, "Understanding Neural
Networks through Representation Erasure", arXiv:1612.08220, erased words):

    remove:  drop_i = s(A, B) - s(A without token i, B)     (the others move up one place)
    mask:    drop_i = s(A, B) - s(A with [MASK] at i, B)    (same length, same positions)

A positive drop: the token makes the sentences more alike. Unlike integrated gradients, each
token is taken away alone, with every other token present, so the drops need not add up to
anything. A tokenizer without a mask token (a decoder's, e.g. SmolLM2's) has no "mask"
variant: Occlusion.mask is then None and only the removals are computed. Structural tokens
([CLS], [SEP]: attribution.structural_ids) are never occluded (nan). The variants of a
sentence go through the encoder in batches (Model.last_hidden), as many at once as
MEMORY_PER_BATCH allows: one batch up to a few hundred tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

from attnviz.analysis.attribution import sentence_embedding, structural_ids
from attnviz.analysis.common import sequences_per_batch

MODES = ("remove", "mask")
MEMORY_PER_BATCH = 256 * 2**20  # bytes one batch of variants may hold (no autograd)
MAX_TOKENS = 128  # the page occludes sentences up to this length (2 n passes of n tokens)


@dataclass
class Occlusion:
    """Occlusion drops of s(A, B) for each token of A (nan where not occluded)."""

    tokens: list[str]
    score: float  # s(A, B)
    remove: np.ndarray  # [n] float64
    mask: np.ndarray | None  # [n] float64; None where the tokenizer has no mask token


def variant_ids(ids: list[int], keep: set[int], mode: str, mask_id: int | None
                ) -> tuple[list[int], list[list[int]]]:
    """(the occluded places, one id list per place): token i removed or replaced by mask_id."""
    places = [i for i, t in enumerate(ids) if t not in keep]
    if mode == "remove":
        return places, [ids[:i] + ids[i + 1:] for i in places]
    if mode == "mask":
        if mask_id is None:
            raise ValueError("this tokenizer has no mask token")
        return places, [ids[:i] + [mask_id] + ids[i + 1:] for i in places]
    raise ValueError(f"mode must be one of {', '.join(MODES)}")


def _embeddings(model, variants: list[list[int]], segments: list[int],
                tick: Callable[[int], None] = lambda done: None) -> torch.Tensor:
    """Sentence embeddings [len(variants), hidden] of equal-length id lists, in batches;
    tick(variants done) after each batch."""
    size = sequences_per_batch(model, len(variants[0]), MEMORY_PER_BATCH)
    out = []
    with torch.no_grad():
        for start in range(0, len(variants), size):
            x = torch.stack([model.embed(v, segments[:len(v)])[0]
                             for v in variants[start:start + size]])  # [b, n, hidden]
            out.append(sentence_embedding(model, x))
            tick(min(start + size, len(variants)))
    return torch.cat(out)


def occlude(model, text_a: str, other: torch.Tensor | str,
            progress: Callable[[float, str], None] | None = None) -> Occlusion:
    """Occlusion drops of s(A, B) for each token of A; `other` is B's text or its embedding
    [hidden]. `progress(fraction, message)` after each batch of variants."""
    if isinstance(other, str):
        ids_b, seg_b, _ = model.tokenize(other)
        other = _embeddings(model, [ids_b], seg_b)[0]
    ids, segments, _ = model.tokenize(text_a)
    tok = model.tokenizer
    keep = structural_ids(tok)
    score = float(torch.nn.functional.cosine_similarity(
        _embeddings(model, [ids], segments)[0], other, dim=0))
    n = len(ids)
    modes = [m for m in MODES if m != "mask" or tok.mask_token_id is not None]
    out: dict = {"mask": None}
    for k, mode in enumerate(modes):
        drops = np.full(n, np.nan)
        places, variants = variant_ids(ids, keep, mode, tok.mask_token_id)
        total = len(places)

        def tick(done: int, k=k, total=total) -> None:
            if progress is not None:
                progress((k * total + done) / (len(modes) * total),
                         f"{k * total + done} of {len(modes) * total}")

        if places:
            e = _embeddings(model, variants, segments, tick)  # [places, hidden]
            s = torch.nn.functional.cosine_similarity(e, other[None], dim=-1)
            drops[places] = score - s.double().cpu().numpy()
        out[mode] = drops
    return Occlusion(tokens=model.tokens_of(ids), score=score, **out)
