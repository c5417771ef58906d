"""A convolution written exactly as multi-head self-attention (Cordonnier, Loukas & Jaggi 2020).

Cordonnier, Loukas & Jaggi, "On the Relationship between Self-Attention and Convolutional
Layers", ICLR 2020, arXiv:1911.03584, Theorem 1: a multi-head self-attention layer with N_h
heads of dimension D_h, output dimension D_out and a relative positional encoding of dimension
D_p >= 3 can express any convolutional layer of kernel size sqrt(N_h) x sqrt(N_h) and
min(D_h, D_out) output channels. So k^2 heads for a k x k kernel. The lecture says it as a
slogan ("CNN is a simplified self-attention"); the theorem needs the k^2 heads.

Why one head is not enough: a head gives y_q = sum_j A[q, j] x_j M with ONE matrix
M = W_val W_out and non-negative weights A[q, j] that sum to 1, while a convolution applies its
own matrix K[:, :, u, v] to each offset. A single head whose weights depend on the offset only
can therefore realise exactly the kernels whose taps are non-negative multiples of one matrix
(`one_head_kernel`), e.g. a blur, not edges (taps of both signs) nor a random kernel.

The construction used here (the paper's Lemma 1 with its quadratic encoding, section 3):

    MHSA(X) = concat_h[A^(h) X W_val^(h)] W_out + b_out = sum_h A^(h) X W_val^(h) W_out^(h) + b_out

    head h = u k + v  <->  one shift of the kernel window  Delta_h = (u - k//2, v - k//2)
    relative encoding   r_delta = (|delta|^2, delta_row, delta_col),   delta = p_key - p_query
    head vector         v_h     = -alpha (1, -2 Delta_row, -2 Delta_col)
    score               s_h(q, j) = v_h . r_delta = -alpha (|delta - Delta_h|^2 - |Delta_h|^2)
    weights             A^(h)[q, :] = softmax_j s_h(q, j)   (largest only at delta = Delta_h)
    values / output     W_val^(h) = I (every head's values are the pixel vectors themselves),
                        W_out^(h) = K[:, :, u, v]^T      [C_in, C_out]
    =>  MHSA(X)_q = sum_h x_{q + Delta_h} K[:, :, u, v]^T + b = conv2d(X, K, b)_q

torch's conv2d is a cross-correlation, y[o, i, j] = sum_{c,u,v} K[o, c, u, v] x[c, i+u-p, j+v-p]
with p = k//2, hence the shift Delta = (u - p, v - p) for kernel tap (u, v).

Which softmax: the quadratic encoding with a large integer alpha (default 64), not a hard
mask. All scores are then integers, exact in float32 (|s| < 2^24 for images up to ~250 px);
after the softmax subtracts the row maximum the chosen key has exp(0) = 1 and the runner-up
exp(-alpha) = 1.6e-28, so every row is one-hot up to float error (1 + n e^-alpha rounds to 1).
`alpha=None` gives the hard version (a mask allowing exactly one key per head and query).
Small alpha shows what the limit means: the heads blur over neighbours and the output moves
away from the convolution.

Zero padding at the borders: the keys are the image's pixels PLUS a ring of k//2 padding
pixels around it, placed at their true positions outside the image and carrying the zero
vector; the queries are the image's pixels only. Every query then finds its shifted key
p + Delta inside the key set, and a padding key contributes value 0 (the value projection has
no bias), which is exactly what conv2d(padding=k//2) adds. Without the ring, the softmax picks
the existing pixel nearest to p + Delta, which is the clamped position: replicate padding.

Tensors in, tensors out; no Streamlit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.engine.attention import attention

ALPHA = 64.0  # integer => exact scores; runner-up weight e^-64 = 1.6e-28


def kernel_shifts(k: int) -> torch.Tensor:
    """The k^2 shifts Delta_h = (u - k//2, v - k//2), head h = u k + v. Shape [k^2, 2]."""
    if k < 1 or k % 2 == 0:
        raise ValueError(f"kernel size must be odd and >= 1, got {k}")
    r = torch.arange(k) - k // 2
    return torch.stack(torch.meshgrid(r, r, indexing="ij"), dim=-1).reshape(-1, 2)  # [k*k, 2]


def relative_encoding(delta: torch.Tensor) -> torch.Tensor:
    """r_delta = (|delta|^2, delta_row, delta_col) for offsets delta [..., 2] -> [..., 3]."""
    return torch.cat([(delta * delta).sum(-1, keepdim=True), delta], dim=-1)


def head_vectors(shifts: torch.Tensor, alpha: float = ALPHA) -> torch.Tensor:
    """v_h = -alpha (1, -2 Delta_h) for shifts [H, 2] -> [H, 3]."""
    ones = torch.ones(len(shifts), 1, dtype=torch.float64)
    return -alpha * torch.cat([ones, -2.0 * shifts.double()], dim=-1)  # [H, 3]


def grid_positions(height: int, width: int, pad: int = 0) -> torch.Tensor:
    """(row, col) of every pixel of a grid grown by `pad` on each side, row-major. [N, 2].

    Rows and columns run from -pad to height-1+pad (resp. width-1+pad): the image's own pixels
    keep their coordinates and the padding ring lies outside them.
    """
    rows = torch.arange(-pad, height + pad)
    cols = torch.arange(-pad, width + pad)
    return torch.stack(torch.meshgrid(rows, cols, indexing="ij"), dim=-1).reshape(-1, 2)


def relative_scores(query_pos: torch.Tensor, key_pos: torch.Tensor, v: torch.Tensor,
                    dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """s(q, j) = v . r_{p_j - p_q} for positions [n_q, 2], [n_k, 2] and v [3] -> [n_q, n_k].

    Expanded so no [n_q, n_k, 2] offset tensor is built: with delta = p_j - p_q,
    v0 |delta|^2 + v12 . delta = (v0 |p_j|^2 + v12 . p_j) + (v0 |p_q|^2 - v12 . p_q)
    - 2 v0 p_q . p_j. With integer positions and integer v every term is an integer, exact in
    float32 below 2^24.
    """
    pq, pk, v = query_pos.to(dtype), key_pos.to(dtype), v.to(dtype)
    key_term = v[0] * (pk * pk).sum(-1) + pk @ v[1:]  # [n_k]
    query_term = v[0] * (pq * pq).sum(-1) - pq @ v[1:]  # [n_q]
    return query_term[:, None] + key_term[None, :] - 2.0 * v[0] * (pq @ pk.T)  # [n_q, n_k]


def head_weights(query_pos: torch.Tensor, key_pos: torch.Tensor, shift: torch.Tensor,
                 alpha: float | None = ALPHA, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """A^(h) = softmax_j(v_h . r_delta) [n_q, n_k]; alpha=None: hard one-hot (mask) instead.

    The hard version runs the engine's masked softmax: only the key at p_q + Delta_h is allowed
    (True in the mask), all scores 0, so that key's weight is exactly 1.
    """
    if alpha is None:
        big = 1 << 20  # one integer code per (row, col): one comparison instead of two
        target = query_pos + shift  # [n_q, 2]
        code = torch.tensor([big, 1])
        mask = (key_pos @ code)[None, :] == (target @ code)[:, None]  # [n_q, n_k]
        if not bool(mask.any(-1).all()):
            raise ValueError("hard one-hot heads need the padding ring: a shifted key is missing")
        zeros_q = torch.zeros(len(query_pos), 1, dtype=dtype)
        zeros_k = torch.zeros(len(key_pos), 1, dtype=dtype)
        _, weights, _ = attention(zeros_q, zeros_k, zeros_k, mask=mask, scale=1.0)
        return weights
    v = head_vectors(shift[None], alpha)[0]
    return torch.softmax(relative_scores(query_pos, key_pos, v, dtype), dim=-1)


@dataclass
class ConvAsAttention:
    """The attention layer's result next to its reference.

    outputs: [C_out, H, W] the MHSA layer's outputs; conv: [C_out, H, W] conv2d's outputs;
    head_outputs: [k^2, C_in, H, W] A^(h) X, each head's (shifted) copy of the image;
    max_abs_diff: max |outputs - conv|; shifts [k^2, 2]; alpha (None = hard).
    """

    outputs: torch.Tensor
    conv: torch.Tensor
    head_outputs: torch.Tensor
    max_abs_diff: float
    shifts: torch.Tensor
    alpha: float | None


def conv_as_attention(
    image: torch.Tensor | np.ndarray,
    kernel: torch.Tensor | np.ndarray,
    bias: torch.Tensor | np.ndarray | None = None,
    alpha: float | None = ALPHA,
    zero_padding: bool = True,
    chunk: int = 1024,
) -> ConvAsAttention:
    """Run the k^2-head attention layer on image [C_in, H, W] with kernel [C_out, C_in, k, k].

    outputs[:, q] = sum_h (A^(h) X)[q] W_out^(h) + b, computed chunk by chunk of queries so a
    64 x 64 image never holds more than one [chunk, n_keys] weight matrix. Also returns
    conv2d(image, kernel, bias, padding=k//2) (zero padding, or replicate padding when
    zero_padding=False, which is what the layer then computes) and the max difference.
    """
    x = torch.as_tensor(image)
    w = torch.as_tensor(kernel, dtype=x.dtype)
    c_in, height, width = x.shape
    c_out, c_in_k, k, k2 = w.shape
    if c_in_k != c_in or k != k2:
        raise ValueError(f"kernel {tuple(w.shape)} does not fit image {tuple(x.shape)}")
    b = torch.zeros(c_out, dtype=x.dtype) if bias is None else torch.as_tensor(bias, dtype=x.dtype)
    pad = k // 2 if zero_padding else 0
    shifts = kernel_shifts(k)  # [H_heads, 2]
    query_pos = grid_positions(height, width)  # [n_q, 2]
    key_pos = grid_positions(height, width, pad)  # [n_k, 2]
    keys_x = F.pad(x, (pad, pad, pad, pad)).reshape(c_in, -1).T  # [n_k, C_in], ring = 0
    w_out = w.permute(2, 3, 1, 0).reshape(k * k, c_in, c_out)  # W_out^(h) = K[:, :, u, v]^T

    head_out = torch.empty(k * k, len(query_pos), c_in, dtype=x.dtype)  # [k^2, n_q, C_in]
    for h in range(k * k):
        for s in range(0, len(query_pos), chunk):
            a = head_weights(query_pos[s:s + chunk], key_pos, shifts[h], alpha, x.dtype)
            head_out[h, s:s + chunk] = a @ keys_x  # A^(h) X W_val^(h), W_val^(h) = I
    out = torch.einsum("hqc,hco->qo", head_out, w_out) + b  # [n_q, C_out]
    outputs = out.T.reshape(c_out, height, width)

    if zero_padding:
        conv = F.conv2d(x[None], w, b, padding=k // 2)[0]
    else:
        conv = F.conv2d(F.pad(x[None], (k // 2,) * 4, mode="replicate"), w, b)[0]
    return ConvAsAttention(
        outputs=outputs, conv=conv,
        head_outputs=head_out.permute(0, 2, 1).reshape(k * k, c_in, height, width),
        max_abs_diff=float((outputs - conv).abs().max()), shifts=shifts, alpha=alpha,
    )


def pixel_head_maps(height: int, width: int, k: int, row: int, col: int,
                    alpha: float | None = ALPHA, zero_padding: bool = True) -> np.ndarray:
    """Each head's weights for the query pixel (row, col), over the key grid. [k^2, Hk, Wk].

    The key grid is the image plus its padding ring (Hk = height + 2 (k//2) with zero
    padding), so map[h, row + k//2, col + k//2] is the query pixel itself.
    """
    if not (0 <= row < height and 0 <= col < width):
        raise ValueError(f"pixel ({row}, {col}) is outside the {height} x {width} image")
    pad = k // 2 if zero_padding else 0
    key_pos = grid_positions(height, width, pad)
    query = torch.tensor([[row, col]])
    maps = [head_weights(query, key_pos, s, alpha, torch.float64)[0] for s in kernel_shifts(k)]
    return torch.stack(maps).reshape(k * k, height + 2 * pad, width + 2 * pad).numpy()


KERNELS = ("random", "blur", "edges", "sharpen")


def make_kernel(
    name: str, k: int, channels: int = 3, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """A (kernel [C, C, k, k], bias [C]) float32 pair: a seeded random mix, or a named filter.

    blur = 1/k^2 everywhere, edges = a horizontal-gradient (Sobel-like) filter, sharpen =
    2 delta - blur; named filters act on each channel alone (a diagonal [C, C] at every tap).
    """
    if name == "random":
        g = np.random.default_rng(seed)
        return (g.standard_normal((channels, channels, k, k)).astype(np.float32) / k,
                g.standard_normal(channels).astype(np.float32) * 0.1)
    r = np.arange(k) - k // 2
    blur = np.full((k, k), 1.0 / k**2)
    taps = {
        "blur": blur,
        "edges": np.outer(k // 2 + 1 - np.abs(r), np.sign(r)) / k,
        "sharpen": 2.0 * (np.abs(r)[:, None] + np.abs(r)[None, :] == 0) - blur,
    }
    if name not in taps:
        raise ValueError(f"kernel must be one of {KERNELS}, got {name!r}")
    kernel = np.einsum("oc,uv->ocuv", np.eye(channels), taps[name]).astype(np.float32)
    return kernel, np.zeros(channels, dtype=np.float32)


def one_head_kernel(kernel: np.ndarray, tol: float = 1e-6) -> bool:
    """Can ONE attention head whose weights depend on the offset only be this convolution?

    Such a head computes y_q = sum_delta a_delta x_{q+delta} M (a_delta >= 0, one matrix M), a
    kernel with taps K[:, :, u, v] = a_(u,v) M^T. True iff the taps, flattened to the rows of
    T [k^2, C_out C_in], are multiples of one row with coefficients of one sign: rank(T) <= 1
    (second singular value <= tol times the first) and the coefficients on the first singular
    vector all >= 0 or all <= 0 (the sign goes into M).
    """
    k = np.asarray(kernel, dtype=np.float64)
    taps = k.transpose(2, 3, 0, 1).reshape(k.shape[2] * k.shape[3], -1)  # [k^2, C_out C_in]
    u, s, _ = np.linalg.svd(taps, full_matrices=False)
    if s[0] == 0:
        return True
    if len(s) > 1 and s[1] > tol * s[0]:
        return False
    a = u[:, 0] * s[0]
    a = a[np.abs(a) > tol * s[0]]
    return bool((a >= 0).all() or (a <= 0).all())


def conv_as_attention_arrays(image: np.ndarray, kernel_name: str, k: int,
                             alpha: float | None = ALPHA) -> dict:
    """`conv_as_attention` of an RGB image [H, W, 3] with the named kernel (make_kernel), as
    NumPy arrays under their download names (attention_outputs, conv2d_outputs, ...)."""
    x = torch.from_numpy(np.asarray(image)).permute(2, 0, 1).contiguous()  # [3, H, W]
    kernel, bias = make_kernel(kernel_name, k)
    r = conv_as_attention(x, kernel, bias, alpha=alpha)
    return {"attention_outputs": r.outputs.numpy(), "conv2d_outputs": r.conv.numpy(),
            "head_outputs": r.head_outputs.numpy(), "max_abs_diff": r.max_abs_diff,
            "kernel": kernel, "bias": bias, "shifts": r.shifts.numpy()}
