"""Token labels on axes and beside token lines (plotting.common.tick_labels, token_lines).

- A word piece that continues a word says so ('#96 …uation', '…uation'), read from the
  tokenizer's own strings (Trace.word_pieces), for WordPiece's '##' and for byte-level BPE's
  word-start marker; without the pieces nothing is marked.
- A word the sentence repeats keeps its number on an axis that shows one copy of it.
- Past LABELS_UP_TO tokens the token lines' labels keep an en space between them and the
  line drawn through the tokens' places (4 px wide), so the line covers no character.
"""

from __future__ import annotations

import numpy as np

from attnviz.plotting.common import CONTINUES, continues, tick_labels
from attnviz.plotting.heatmaps import attention_heatmap
from attnviz.plotting.token_lines import GAP, LABELS_UP_TO, token_lines


def test_a_piece_that_continues_a_word_says_so():
    tokens = ["[CLS]", "the", "eval", "uation", "of", "saw", "saw", "[SEP]"]
    pieces = ["[CLS]", "the", "eval", "##uation", "of", "saw", "saw", "[SEP]"]
    assert continues(pieces) == [False, False, False, True, False, False, False, False]
    assert continues(["<s>", "Ġthe", "Ġeval", "uation", "</s>"]) == [False, False, False, True,
                                                                     False]
    _, text = tick_labels(tokens, pieces=pieces)
    assert text[3] == f"{CONTINUES}uation" and text[2] == "eval"
    assert text[5:7] == ["saw #5", "saw #6"]
    long = tokens * 20  # thinned: every k-th named with its number
    _, text = tick_labels(long, max_ticks=54, pieces=pieces * 20)  # every 3rd
    assert f"#3 {CONTINUES}uation" in text and "#3 uation" not in text
    assert tick_labels(tokens)[1][3] == "uation"  # no pieces: nothing to go by
    fig = attention_heatmap(np.eye(8, dtype=np.float32), tokens, pieces=pieces)
    assert fig.layout.xaxis.ticktext[3] == f"{CONTINUES}uation"
    assert fig.layout.yaxis.ticktext[3] == f"{CONTINUES}uation"
    assert list(fig.data[0].x)[3] == "uation #3"  # the categories (and hovers) as before


def test_a_repeated_word_keeps_its_number_when_only_one_copy_is_shown():
    shown = ["[CLS]", "i", "saw", "a", "[SEP]"]
    sentence = ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    labels = ["[CLS] #0", "i #1", "saw #2", "a #3", "[SEP] #5"]
    assert tick_labels(shown, labels=labels)[1][2] == "saw"  # nothing says saw repeats
    assert tick_labels(shown, labels=labels, sentence=sentence)[1] == [
        "[CLS]", "i", "saw #2", "a", "[SEP]"]


def test_long_token_lines_keep_a_gap_between_label_and_line():
    n = LABELS_UP_TO + 13
    tokens = ["[CLS]"] + [f"w{i}" for i in range(n - 2)] + ["[SEP]"]
    w = np.full((1, n, n), 1.0 / n, dtype=np.float32)
    fig = token_lines(w, [0], tokens, query=3)
    queries = next(t for t in fig.data if t.name == "queries labels")
    keys = next(t for t in fig.data if t.name == "keys labels")
    assert queries.textposition == "middle left" and keys.textposition == "middle right"
    assert all(t.endswith(GAP) for t in queries.text)
    assert all(t.startswith(GAP) for t in keys.text)
    assert queries.text[0] == f"#0 [CLS]{GAP}"
