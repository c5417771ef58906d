"""Word-level attention: word pieces merged into words, as Clark et al. 2019 do (section 4.1 of
"What Does BERT Look At?"; clarkkev/attention-analysis, `make_word_level_attention`).

WordPiece splits rare words ("embeddings" -> "em", "##bed", "##ding", "##s"); a word is a token
and the '##' pieces that follow it. For weights W [query i, key j] over tokens and words
u, v (sets of token positions):

    W^word[u, v] = (1/|u|) sum_{i in u} sum_{j in v} W_ij

the attention *to* a split word is the sum over its pieces (keys), the attention *from* a
split word is the mean over its pieces (queries); rows still sum to 1. [CLS] and [SEP] are
words of their own. Byte-level BPE and SentencePiece tokens ('Ġword', '▁word') start a word
with their marker instead; a page shows which tokens were merged.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .common import SPECIAL_TOKENS

WORD_STARTS = ("Ġ", "▁")  # byte-level BPE (GPT-2, RoBERTa) and SentencePiece markers


def word_groups(tokens: Sequence[str]) -> list[list[int]]:
    """Token positions of each word, in order: [[0], [1], [2, 3, 4], ...].

    A '##' piece continues the word before it. When the tokens use a word-start marker
    ('Ġ', '▁'), a token without one continues the word before it. Special tokens stand alone.
    """
    marked = any(t.startswith(WORD_STARTS) for t in tokens)
    groups: list[list[int]] = []
    for i, tok in enumerate(tokens):
        special = tok in SPECIAL_TOKENS
        follows = groups and tokens[groups[-1][-1]] not in SPECIAL_TOKENS and not special
        if follows and (tok.startswith("##") or (marked and not tok.startswith(WORD_STARTS))):
            groups[-1].append(i)
        else:
            groups.append([i])
    return groups


def word_text(tokens: Sequence[str], group: Sequence[int]) -> str:
    """The word a group of pieces spells: 'em', '##bed' -> 'embed' (a leading 'Ġ'/'▁' dropped)."""
    text = "".join(tokens[i][2:] if k and tokens[i].startswith("##") else tokens[i]
                   for k, i in enumerate(group))
    return text.lstrip("".join(WORD_STARTS)) or text


def merge_matrix(groups: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """M [words, tokens] with M[u, j] = 1 when token j belongs to word u."""
    m = np.zeros((len(groups), n), dtype=np.float64)
    for u, g in enumerate(groups):
        m[u, list(g)] = 1.0
    return m


def word_attention(weights: np.ndarray, groups: Sequence[Sequence[int]]) -> np.ndarray:
    """W^word = D^-1 M W M^T for weights [..., n, n] (D = pieces per word): [..., m, m],
    in float64. Keys summed over a word's pieces, queries averaged."""
    w = np.asarray(weights, dtype=np.float64)
    m = merge_matrix(groups, w.shape[-1])  # [m, n]
    mean_rows = m / m.sum(axis=1, keepdims=True)  # [m, n]
    return mean_rows @ w @ m.T  # [..., m, m]


def merge_tokens(tokens: Sequence[str], groups: Sequence[Sequence[int]]) -> list[str]:
    """One label per word."""
    return [word_text(tokens, g) for g in groups]


def words_view(weights: np.ndarray, tokens: Sequence[str], pieces: Sequence[str] | None = None,
               ) -> tuple[np.ndarray, list[str], np.ndarray]:
    """(word-level weights [..., m, m], words [m], first token position of each word [m]).

    Words are found in `pieces` (the tokenizer's strings with their '##'/'Ġ' markers:
    `Trace.word_pieces`) when given, else in `tokens`; their labels join the `tokens`."""
    groups = word_groups(tokens if pieces is None else pieces)
    return (word_attention(weights, groups), merge_tokens(tokens, groups),
            np.array([g[0] for g in groups], dtype=np.int64))
