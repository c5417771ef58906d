"""Position information for self-attention.

Self-attention alone has no notion of order (the lecture notes: "No position information in
self-attention"): every position gets a vector e^i added to its input, e^i + a^i, before the
queries, keys and values are computed. The vectors can be hand-crafted (the sinusoids of
Vaswani et al. 2017, section 3.5) or learned from data (BERT's position embeddings).

Modes understood by the engine (`positions=`):
- "learned":    the checkpoint's own learned position embeddings (BERT's default)
- "none":       no position vector at all (order becomes invisible)
- "sinusoidal": c · PE with PE[pos, 2i] = sin(pos / 10000^(2i/d)),
                PE[pos, 2i+1] = cos(pos / 10000^(2i/d)), scaled by
                c = (mean norm of the model's learned position vectors) / sqrt(d/2)
- "shuffled":   the learned vectors, permuted among the sentence's positions (seeded)

Why the scale: each row of PE has norm sqrt(d/2) (sin^2 + cos^2 = 1 per pair of dimensions),
while a BERT checkpoint's word and learned position embeddings are vectors of norm around 1
or below. Added unscaled, the sinusoid would dominate the sum, and after the embedding
LayerNorm the layer's input would be mostly sinusoid, with little of the word left. Scaled by
c, a sinusoid has the norm of a typical learned position vector, the size of position signal
the model was trained with. (Vaswani et al. instead multiply the word embeddings by sqrt(d);
a BERT checkpoint was not trained that way either.)
"""

from __future__ import annotations

import numpy as np
import torch

from .request import POSITION_MODES


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


def sinusoid_scale(learned: torch.Tensor) -> float:
    """c = mean_p ||learned[p]|| / sqrt(d/2): the factor the "sinusoidal" mode multiplies PE by.

    learned: the checkpoint's [max_positions, d] table. For even d every row of PE has norm
    sqrt(d/2) exactly, so c·PE has the learned vectors' mean norm.
    """
    d = learned.shape[1]
    mean_norm = learned.detach().double().norm(dim=1).mean().item()
    return mean_norm / float(np.sqrt(d / 2))


def shuffled_order(n: int, seed: int = 0) -> np.ndarray:
    """The permutation used by positions="shuffled": position i gets learned vector perm[i]."""
    return np.random.default_rng(seed).permutation(n)


def position_vectors(
    mode: str, learned: torch.Tensor, n: int, seed: int = 0
) -> tuple[torch.Tensor | None, np.ndarray | None]:
    """The position vectors e^1..e^n added to the inputs, and the position ids used.

    `learned` is the checkpoint's [max_positions, hidden] table. Returns (None, None) for
    mode "none" (nothing is added). "sinusoidal" gives sinusoid_scale(learned) · PE.
    """
    if mode == "none":
        return None, None
    if n > learned.shape[0]:
        raise ValueError(f"{n} tokens exceed the model's {learned.shape[0]} positions")
    if mode == "sinusoidal":
        pe = sinusoidal(n, learned.shape[1]) * sinusoid_scale(learned)  # [n, d]
        return pe.to(device=learned.device, dtype=learned.dtype), np.arange(n)
    if mode == "learned":
        ids = np.arange(n)
    elif mode == "shuffled":
        ids = shuffled_order(n, seed)
    else:
        raise ValueError(f"positions must be one of {', '.join(POSITION_MODES)}; got {mode!r}")
    return learned[torch.as_tensor(ids, device=learned.device)], ids
