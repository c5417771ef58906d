"""An image as a set of vectors: one pixel's self-attention map beside a convolution's field.

The lecture notes: "an image can also be considered as a vector set" (self-attention GAN, Zhang
et al. 2019, arXiv:1805.08318; DETR, Carion et al. 2020, arXiv:2005.12872), and the lecture's
slogan "CNN is a simplified self-attention [that] can only attend in a receptive field;
self-attention is a CNN with a learnable receptive field". The paper it cites (Cordonnier,
Loukas & Jaggi 2020, arXiv:1911.03584) proves the precise statement: k^2 heads with a relative
positional encoding can express any k x k convolution (analysis.conv_attention).

The attention layer (small, hand-set, no training). Pixel i is the vector
z_i = (c_i / sigma_c, p_i / sigma_p) of its colour c_i in [0, 1]^3 and its position p_i
(row, col, centred on the image); then

    queries  q_i = (z_i, 1)          keys  k_j = (z_j, -|z_j|^2 / 2)          values  v_j = c_j
    scores   s_ij = q_i . k_j = -|z_i - z_j|^2 / 2 + |z_i|^2 / 2   (last term: same whole row)
    weights  alpha'_ij = softmax_j s_ij
                  = exp(-|c_i - c_j|^2 / 2 sigma_c^2 - |p_i - p_j|^2 / 2 sigma_p^2) / (row sum)
    outputs  b_i  = sum_j alpha'_ij c_j

A pixel attends to pixels of a similar colour near it: the bilateral filter (Tomasi & Manduchi
1998) written as self-attention, the "Gaussian" instance of non-local networks (Wang et al.
2018, arXiv:1711.07971). sigma_p = None drops the position term: a pixel then attends to every
pixel of its colour anywhere in the image. Its field is set by the content.

The convolution beside it: the k x k mean filter y = conv2d(x, ones / k^2, padding = k//2)
on each channel (zero padding): every pixel gets the same fixed weights 1/k^2 inside its
window and exactly 0 outside.

Receptive fields are measured from the models, by gradients: the influence of input pixel j
on output pixel p after l layers,

    I_l(p, j) = sum_{c_out, c_in} |d y^(l)[p, c_out] / d x[j, c_in]|      (autograd)

and the field is {j : I_l(p, j) > 0}. Analytic fields: a stack of l k x k convolutions sees
the square of side l (k - 1) + 1 centred on p (cut by the image border); attention sees every
pixel from layer 1 (softmax weights are > 0; they can only underflow in floating point when
sigma_p or sigma_c is tiny, which is why the default dtype is float64).

Arrays/tensors in, numbers out; no Streamlit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from attnviz.engine.attention import attention

ASSET = Path(__file__).resolve().parents[2] / "assets" / "image.png"
SIZES = (16, 24, 32, 48)  # image side lengths offered; 48 x 48 = 2304 pixels, N^2 = 5.3 M


def load_image(size: int = 32, path: str | Path | None = None) -> np.ndarray:
    """The shipped picture (or `path`) as float32 RGB in [0, 1], resized to size x size.

    Shape [size, size, 3]. Resizing uses PIL's Lanczos filter.
    """
    from PIL import Image

    with Image.open(path or ASSET) as im:
        im = im.convert("RGB")
        if im.size != (size, size):
            im = im.resize((size, size), Image.LANCZOS)
        return np.asarray(im, dtype=np.float32) / 255.0


def pixel_vectors(image: np.ndarray | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The image as a set of vectors: (colours [N, 3], positions [N, 2]) in row-major order.

    Positions are (row, col) measured from the image centre, so a 48 px image stays within
    +-24 (smaller numbers keep the float error of the scores small).
    """
    x = torch.as_tensor(image)
    height, width, channels = x.shape
    rows = torch.arange(height, dtype=x.dtype) - (height - 1) / 2
    cols = torch.arange(width, dtype=x.dtype) - (width - 1) / 2
    pos = torch.stack(torch.meshgrid(rows, cols, indexing="ij"), dim=-1).reshape(-1, 2)
    return x.reshape(-1, channels), pos  # [N, 3], [N, 2]


def bilateral_attention(
    image: torch.Tensor, sigma_colour: float, sigma_position: float | None
) -> tuple[torch.Tensor, torch.Tensor]:
    """One attention layer over the pixels: (outputs [H, W, 3], weights [N, N]).

    Queries (z_i, 1), keys (z_j, -|z_j|^2/2), values c_j, run through the engine's
    attention() with scale 1: weights = softmax_j(q_i . k_j) (see the module docstring).
    """
    height, width, _ = image.shape
    colours, pos = pixel_vectors(image)
    z = colours / sigma_colour  # [N, 3]
    if sigma_position is not None:
        z = torch.cat([z, pos / sigma_position], dim=-1)  # [N, 5]
    ones = torch.ones(len(z), 1, dtype=z.dtype)
    queries = torch.cat([z, ones], dim=-1)  # [N, d + 1]
    keys = torch.cat([z, -0.5 * (z * z).sum(-1, keepdim=True)], dim=-1)  # [N, d + 1]
    outputs, weights, _ = attention(queries, keys, colours, scale=1.0)
    return outputs.reshape(height, width, -1), weights


def attention_stack(image: torch.Tensor, depth: int, sigma_colour: float,
                    sigma_position: float | None) -> torch.Tensor:
    """`depth` attention layers in a row (queries/keys from each layer's own colours). [H, W, 3]"""
    x = image
    for _ in range(depth):
        x, _ = bilateral_attention(x, sigma_colour, sigma_position)
    return x


def conv_stack(image: torch.Tensor, depth: int, k: int) -> torch.Tensor:
    """`depth` k x k mean filters in a row, each channel alone, zero padding. [H, W, 3]"""
    channels = image.shape[-1]
    x = image.permute(2, 0, 1)[None]  # [1, 3, H, W]
    box = torch.full((channels, 1, k, k), 1.0 / k**2, dtype=image.dtype)
    for _ in range(depth):
        x = F.conv2d(x, box, padding=k // 2, groups=channels)
    return x[0].permute(1, 2, 0)


def influence(layers: Callable[[torch.Tensor], torch.Tensor], image: torch.Tensor,
              row: int, col: int) -> torch.Tensor:
    """I(p, j) = sum_{c_out, c_in} |d y[p, c_out] / d x[j, c_in]| for p = (row, col). [H, W]

    One backward pass per output channel (autograd through `layers`, the model itself).
    """
    x = image.detach().clone().requires_grad_(True)
    y = layers(x)  # [H, W, C]
    total = torch.zeros(image.shape[:2], dtype=image.dtype)
    for c in range(y.shape[-1]):
        (grad,) = torch.autograd.grad(y[row, col, c], x, retain_graph=c + 1 < y.shape[-1])
        total += grad.abs().sum(-1)
    return total


def conv_field(height: int, width: int, k: int, depth: int, row: int, col: int) -> np.ndarray:
    """Analytic field of `depth` k x k convolutions at (row, col): the square of side
    depth (k - 1) + 1 centred on the pixel, cut by the border. Boolean [H, W]."""
    r = depth * (k // 2)
    i, j = np.arange(height)[:, None], np.arange(width)[None, :]
    return (np.abs(i - row) <= r) & (np.abs(j - col) <= r)


def conv_weights_map(height: int, width: int, k: int, row: int, col: int) -> np.ndarray:
    """The mean filter's fixed weights for output pixel (row, col) over the image: 1/k^2 in
    the k x k window, 0 elsewhere (the convolution's 'attention map'). [H, W]"""
    return conv_field(height, width, k, 1, row, col) / float(k * k)


@dataclass
class PixelStudy:
    """Everything the page shows for one pixel. Maps are [H, W] float64 NumPy arrays.

    attention_map: layer-1 weights of the pixel's query row; conv_map: the mean filter's
    weights; attention_influence / conv_influence: I_depth(p, .) measured by autograd;
    conv_field: the analytic square; attention_output / conv_output: the images after
    `depth` layers [H, W, 3].
    """

    row: int
    col: int
    k: int
    depth: int
    attention_map: np.ndarray
    conv_map: np.ndarray
    attention_influence: np.ndarray
    conv_influence: np.ndarray
    conv_field: np.ndarray
    attention_output: np.ndarray
    conv_output: np.ndarray

    @property
    def field_sizes(self) -> dict[str, int]:
        """Pixels with nonzero influence (measured) and in the analytic conv square."""
        return {
            "attention": int((self.attention_influence > 0).sum()),
            "conv": int((self.conv_influence > 0).sum()),
            "conv_analytic": int(self.conv_field.sum()),
            "image": int(self.conv_field.size),
        }


def study_pixel(image: np.ndarray, row: int, col: int, k: int = 3, depth: int = 1,
                sigma_colour: float = 0.2, sigma_position: float | None = 8.0,
                dtype: torch.dtype = torch.float64) -> PixelStudy:
    """The attention layer and the mean filter seen from output pixel (row, col)."""
    height, width, _ = image.shape
    if not (0 <= row < height and 0 <= col < width):
        raise ValueError(f"pixel ({row}, {col}) is outside the {height} x {width} image")
    if depth < 1 or k < 1 or k % 2 == 0:
        raise ValueError("depth must be >= 1 and k odd")
    x = torch.as_tensor(image, dtype=dtype)
    _, weights = bilateral_attention(x, sigma_colour, sigma_position)
    attend = lambda t: attention_stack(t, depth, sigma_colour, sigma_position)
    convolve = lambda t: conv_stack(t, depth, k)
    with torch.no_grad():
        a_out, c_out = attend(x), convolve(x)
    return PixelStudy(
        row=row, col=col, k=k, depth=depth,
        attention_map=weights[row * width + col].reshape(height, width).numpy(),
        conv_map=conv_weights_map(height, width, k, row, col),
        attention_influence=influence(attend, x, row, col).numpy(),
        conv_influence=influence(convolve, x, row, col).numpy(),
        conv_field=conv_field(height, width, k, depth, row, col),
        attention_output=a_out.numpy(), conv_output=c_out.numpy(),
    )
