"""Two sentences side by side: the attention of one head for the tokens the sentences share.

Each sentence is encoded alone. Tokens are aligned by the longest matching runs of equal tokens,
in order (difflib.SequenceMatcher on the token lists): "[CLS] i saw a saw [SEP]" and
"[CLS] i saw a dog [SEP]" align [CLS], i, saw, a and [SEP]. For aligned positions
(a_1..a_m in A, b_1..b_m in B) and a head's weights W^A, W^B:

    D[p, q] = W^A[a_p, a_q] - W^B[b_p, b_q]        (p, q = 1..m)

so D shows how the head's reading of the shared tokens changes when the other words change.
The rows of the two submatrices sum to less than 1 (the unaligned keys are left out).

Under a causal mask (a decoder) token i sees only tokens 0..i, so the tokens before the first
difference (common_prefix) read the same keys in both sentences and their rows cannot change.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

import numpy as np


def align_tokens(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> list[tuple[int, int]]:
    """(position in A, position in B) of every aligned token, in order."""
    matcher = difflib.SequenceMatcher(a=list(tokens_a), b=list(tokens_b), autojunk=False)
    return [(block.a + k, block.b + k) for block in matcher.get_matching_blocks()
            for k in range(block.size)]


def aligned_difference(weights_a: np.ndarray, weights_b: np.ndarray,
                       pairs: Sequence[tuple[int, int]]) -> tuple[np.ndarray, np.ndarray,
                                                                 np.ndarray]:
    """(W^A on the aligned tokens, W^B on them, D = their difference) for weights
    [..., n_a, n_a] and [..., n_b, n_b]: each [..., m, m], float64."""
    ia = np.array([p[0] for p in pairs], dtype=np.int64)
    ib = np.array([p[1] for p in pairs], dtype=np.int64)
    wa = np.asarray(weights_a, dtype=np.float64)[..., ia[:, None], ia[None, :]]
    wb = np.asarray(weights_b, dtype=np.float64)[..., ib[:, None], ib[None, :]]
    return wa, wb, wa - wb


def common_prefix(tokens_a: Sequence[str], tokens_b: Sequence[str]) -> int:
    """How many tokens the two lists share from the start (the first difference's place)."""
    n = 0
    for a, b in zip(tokens_a, tokens_b, strict=False):
        if a != b:
            break
        n += 1
    return n
