"""The "I saw a saw" lesson (the lecture's example): its steps, and the numbers it quotes from BERT.

The lecture (Hung-yi Lee's self-attention lecture, in Chinese) tags "I saw a saw" one word at a
time: a fully connected layer gives both "saw"s the same tag; a window sees neighbours but
not the whole sentence; self-attention sees everything; and without positions (the lecture notes:
"no position information in self-attention") the two "saw"s are still the same vector.

This module holds the lesson's text (STEPS) and the small computations behind it:
which word of a sentence repeats in two roles, which words each kind of tagger can see
(receptive fields), and the cosine similarity of two copies of a word in every layer,

    cos(h_i, h_j) = h_i . h_j / (|h_i| |h_j|)

from the engine's hidden states. No Streamlit here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnviz.analysis.common import cosine_per_layer, repeated_tokens
from attnviz.analysis.corpus import AMBIGUOUS, EXAMPLES, words

__all__ = ["STEPS", "Step", "cosine_per_layer", "gold_tags", "max_abs_difference",
           "receptive_fields", "repeated_ambiguous", "token_positions", "top_key"]


@dataclass(frozen=True)
class Step:
    """One screen of the lesson: a title, the explanation, and the question asked first."""

    key: str
    title: str
    text: str
    predict: str | None = None  # asked before the result is revealed


STEPS: tuple[Step, ...] = (
    Step("task", "The task: one tag per word",
         "Part-of-speech tagging: the input is a sentence, the output is **one tag per word** "
         "(as many outputs as inputs). In *I saw a saw* the first *saw* is a **VERB** and the "
         "second a **NOUN**: the same word, two roles.",
         "Tag each word yourself before you reveal the answer."),
    Step("per_word", "(a) A classifier that sees one word",
         "Feed each word alone to the same fully connected network: $y^i = f(x^i)$. "
         "Both *saw*s are the same input $x$, so they **must** get the same output.",
         "What will the per-word classifier say for the two saws?"),
    Step("window", "(b) A window of neighbours",
         "Give the network a window: word $i$ and its neighbours, $y^i = f(x^{i-1}, x^i, "
         "x^{i+1})$ (a 1-D convolution). *I saw* and *a saw* now look different. A wider "
         "context needs a wider window: more parameters, and it never covers every sentence.",
         "Can a window of 3 words tell the two saws apart?"),
    Step("attention", "Self-attention: every word looks at every word",
         "Each word makes a query $q^i$, a key $k^i$ and a value $v^i$. Scores "
         "$s_{ij} = q^i \\cdot k^j$, weights $w_{ij} = \\mathrm{softmax}_j(s_{ij}/\\sqrt{d_k})$, "
         "outputs $b^i = \\sum_j w_{ij} v^j$. Below: the numbers of one head of the pretrained "
         "BERT for this sentence (rows = queries, columns = keys).",
         "Which word will the second saw look at most?"),
    Step("no_positions", "(c) Self-attention without positions",
         "Self-attention has **no notion of order**: shuffle the words and every output is "
         "shuffled the same way. Two copies of *saw* have the same $q, k, v$ and see the same "
         "set of words, so their outputs are the same, in every layer (equal up to float "
         "rounding).",
         "Without positions, can the two saws end up with different tags?"),
    Step("positions", "(d) Self-attention with positions",
         "Add a position vector to each word: $e^i + x^i \\to q^i, k^i, v^i$. Now *saw* at "
         "position 2 and *saw* at position 4 are different inputs, and attention can learn "
         "to look at the word just before.",
         "With positions, will the tagger get both saws right?"),
    Step("bert", "The real pretrained BERT",
         "The same experiment on the pretrained all-MiniLM-L6-v2 (6 layers, 12 heads): the "
         "cosine similarity of the two copies of the repeated word after each layer, with "
         "BERT's learned positions and with the positions removed.",
         "After the last layer, how similar are the two copies (cosine; 1 = identical)?"),
    Step("next", "What to try next",
         "Try another sentence with a repeated ambiguous word, then follow the ideas further "
         "on the other pages: the full computation step by step, positional encodings, "
         "windows, and the heads of every layer.",
         None),
)


def repeated_ambiguous(text: str, ambiguous=AMBIGUOUS) -> dict[str, list[int]]:
    """{word: word positions} for each ambiguous word that occurs at least twice in `text`."""
    return {w: pos for w, pos in repeated_tokens(words(text)).items() if w in ambiguous}


def gold_tags(text: str) -> tuple[str, ...] | None:
    """The gold tags when `text` is one of the lesson's examples (any case, punctuation)."""
    ws = words(text)
    end = ("PUNCT",) if ws[-1:] == ["."] else ()
    key = " ".join(ws[:-1] if end else ws)
    for example, tags in EXAMPLES.items():
        if " ".join(words(example)) == key:
            return tags + end
    return None


def token_positions(tokens: list[str], word: str) -> list[int]:
    """Positions of `word` among BERT's tokens (case-insensitive, whole tokens only)."""
    return [i for i, t in enumerate(tokens) if t.lower() == word.lower()]


def receptive_fields(n: int, width: int) -> dict[str, np.ndarray]:
    """Which words each word's tag can depend on: bool [word, seen word] per tagger kind.

    per word: only itself (identity); a window of `width` words: |i - j| <= width // 2;
    attention: all.
    """
    idx = np.arange(n)
    dist = np.abs(idx[:, None] - idx[None, :])  # [n, n]
    return {"per word": dist == 0, "window": dist <= width // 2,
            "self-attention": np.ones((n, n), dtype=bool)}


def max_abs_difference(hidden_states: np.ndarray, i: int, j: int) -> float:
    """max |h_i - h_j| over every layer and dimension (0.0: identical; float32 rounding is
    about 1e-6 at BERT's scale)."""
    return float(np.abs(hidden_states[:, i] - hidden_states[:, j]).max())


def top_key(weights_row: np.ndarray, tokens: list[str]) -> tuple[int, str, float]:
    """(position, token, weight) of the key a query's weight row puts most weight on."""
    j = int(np.argmax(weights_row))
    return j, tokens[j], float(weights_row[j])
