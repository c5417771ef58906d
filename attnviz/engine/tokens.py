"""Tokens as a reader sees them, and control tokens a user typed.

Tokenizers write word pieces with markers: WordPiece (BERT, DistilBERT) starts a piece that
continues a word with '##' ('play', '##ing'); byte-level BPE (GPT-2, RoBERTa, BART) writes a
leading space as 'Ġ' and every byte as a printable stand-in ('Ã©' for 'é'); SentencePiece
writes a leading space as '▁'. For display the markers go ('ing', 'saw', 'é'); each token stays
distinct by its position ('saw #2', 'saw #4': engine.token_labels), and the Trace keeps the
tokenizer's own strings too (`Trace.pieces`).

A typed control token ('[SEP]', '[MASK]', '<|endoftext|>') is read by the tokenizer as the
control token itself, as in training, not as its letters: attnviz keeps that (it is how the
model reads text, and it is how a student studies [MASK]) and says so (`typed_control_tokens`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence

WORDPIECE = "wordpiece"
BYTE_BPE = "byte-bpe"
SENTENCEPIECE = "sentencepiece"
EMPTY = "␣"  # what a piece that is only a space (or nothing) shows as


@functools.lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's printable stand-in for each byte, inverted: stand-in character -> byte.

    Printable Latin-1 bytes stand for themselves; the other 68 bytes (controls, space, ...)
    are mapped in order to U+0100, U+0101, ... (so the space 0x20 is 'Ġ' = U+0120).
    """
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
            *range(ord("®"), ord("ÿ") + 1)]
    stand_in, extra = {}, 0
    for b in range(256):
        if b in keep:
            stand_in[b] = chr(b)
        else:
            stand_in[b] = chr(256 + extra)
            extra += 1
    return {c: b for b, c in stand_in.items()}


def byte_bpe_text(piece: str) -> str:
    """The text a byte-level BPE piece stands for ('Ġsaw' -> ' saw', 'Ã©' -> 'é'); bytes that
    are only part of a character show as escapes ('Ã' -> '\\xc3')."""
    table = _byte_decoder()
    if not all(c in table for c in piece):
        return piece  # not a byte-level piece (e.g. a special token)
    return bytes(table[c] for c in piece).decode("utf-8", errors="backslashreplace")


def display_token(piece: str, scheme: str, special: bool = False) -> str:
    """One piece as a reader sees it: the scheme's markers dropped, never empty."""
    if special:
        return piece
    if scheme == WORDPIECE:
        text = piece[2:] if piece.startswith("##") and len(piece) > 2 else piece
    elif scheme == BYTE_BPE:
        text = byte_bpe_text(piece)
        text = text[1:] if text.startswith(" ") and len(text) > 1 else text
    elif scheme == SENTENCEPIECE:
        text = piece[1:] if piece.startswith("▁") and len(piece) > 1 else piece
    else:
        text = piece
    return EMPTY if not text.strip(" ") or text in ("▁", "Ġ") else text


def display_tokens(pieces: Sequence[str], scheme: str,
                   special: Iterable[str] = ()) -> list[str]:
    """`display_token` for every piece; pieces in `special` ([CLS], <s>, ...) stay as they are."""
    special = frozenset(special)
    return [display_token(p, scheme, p in special) for p in pieces]


def typed_control_tokens(pieces: Sequence[str], added: Sequence[int],
                         control: Iterable[str]) -> tuple[str, ...]:
    """Control tokens the user typed, in order, once each: pieces that are control tokens
    (`control`, e.g. [SEP], [MASK], [PAD]) but were not added by the tokenizer's template
    (`added[i]` = 1 for the [CLS]/[SEP] it adds itself)."""
    control = frozenset(control)
    found: list[str] = []
    for piece, was_added in zip(pieces, added, strict=True):
        if not was_added and piece in control and piece not in found:
            found.append(piece)
    return tuple(found)


def control_token_note(found: Sequence[str], model_title: str) -> str:
    """The plain sentence a page shows when typed text held control tokens."""
    listed = ", ".join(found)
    return (f"You typed {listed}: {model_title}'s tokenizer reads "
            f"{'it' if len(found) == 1 else 'each'} as its own control token, as in training, "
            "not as letters.")
