"""Position information for self-attention.

Self-attention alone has no notion of order (the lecture notes: "No position information in
self-attention"): every position gets a vector e^i added to its input, e^i + a^i, before the
queries, keys and values are computed. The vectors can be hand-crafted (the sinusoids of
Vaswani et al. 2017, section 3.5) or learned from data (BERT's position embeddings).

Modes understood by the engine (`positions=`):
- "learned":    the checkpoint's own learned position embeddings (BERT's default)
- "none":       no position vector at all (order becomes invisible)
- "sinusoidal": PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d))
- "shuffled":   the learned vectors, permuted among the sentence's positions (seeded)
"""

from __future__ import annotations

import numpy as np
import torch

POSITION_MODES = ("learned", "none", "sinusoidal", "shuffled")


def sinusoidal(n: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """The hand-crafted encoding of Vaswani et al.: a [n, d] float32 matrix.

    PE[pos, 2i] = sin(pos / base^(2i/d)),  PE[pos, 2i+1] = cos(pos / base^(2i/d)).
    """
    pos = torch.arange(n, dtype=torch.float64)[:, None]  # [n, 1]
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # [ceil(d/2)]
    angle = pos / base ** (two_i / d)  # [n, ceil(d/2)]
    pe = torch.zeros(n, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe.float()


def shuffled_order(n: int, seed: int = 0) -> np.ndarray:
    """The permutation used by positions="shuffled": position i gets learned vector perm[i]."""
    return np.random.default_rng(seed).permutation(n)


def position_vectors(
    mode: str, learned: torch.Tensor, n: int, seed: int = 0
) -> tuple[torch.Tensor | None, np.ndarray | None]:
    """The position vectors e^1..e^n added to the inputs, and the position ids used.

    `learned` is the checkpoint's [max_positions, hidden] table. Returns (None, None) for
    mode "none" (nothing is added).
    """
    if mode == "none":
        return None, None
    if n > learned.shape[0]:
        raise ValueError(f"{n} tokens exceed the model's {learned.shape[0]} positions")
    if mode == "sinusoidal":
        return sinusoidal(n, learned.shape[1]).to(learned.device), np.arange(n)
    if mode == "learned":
        ids = np.arange(n)
    elif mode == "shuffled":
        ids = shuffled_order(n, seed)
    else:
        raise ValueError(f"positions must be one of {', '.join(POSITION_MODES)}; got {mode!r}")
    return learned[torch.as_tensor(ids, device=learned.device)], ids
