"""ViT (Dosovitskiy et al. 2021, "An Image is Worth 16x16 Words"): an image as a set of
vectors. The image (engine.images: resized, rescaled, normalised) is cut into P x P patches;
each patch p becomes a token by one linear map (a convolution with stride P), a learned [CLS]
vector goes first, and learned positions are added:

    a^0 = cls + e^0,   a^(1 + r*C + c) = W patch(r, c) + b + e^(1 + r*C + c)

then pre-LayerNorm encoder layers (engine.model) with full, bidirectional attention. Patches
are numbered row by row (r, c). Window and causal masks order tokens along a line of text, so
they are not offered for a 2-D grid of patches; position modes are (a patch's position is its
place in that numbering).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from ..images import ImageProcessing
from ..model import VISION, Layer, Model, activation
from ..request import TraceRequest


class Vit(Model):
    model_types = ("vit",)
    title = "ViT"
    kind = VISION
    pre_norm = True
    takes_pair = False
    needs_tokenizer = False
    base_prefixes = ("vit.",)
    ignorable = (r"^pooler\.", r"^embeddings\.mask_token$")

    @classmethod
    def sizes(cls, config) -> dict[str, int]:
        side = config.image_size // config.patch_size
        return dict(layers=config.num_hidden_layers, heads=config.num_attention_heads,
                    hidden=config.hidden_size, intermediate=config.intermediate_size,
                    positions=side * side + 1, vocab=0, image=config.image_size,
                    patch=config.patch_size, channels=config.num_channels)

    @classmethod
    def parameter_shapes(cls, config) -> dict[str, tuple[int, ...]]:
        s = cls.sizes(config)
        h, i, P = s["hidden"], s["intermediate"], s["patch"]
        out = {
            "embeddings.cls_token": (1, 1, h),
            "embeddings.position_embeddings": (1, s["positions"], h),
            "embeddings.patch_embeddings.projection.weight": (h, s["channels"], P, P),
            "embeddings.patch_embeddings.projection.bias": (h,),
            "layernorm.weight": (h,), "layernorm.bias": (h,),
        }
        for li in range(s["layers"]):
            p = f"encoder.layer.{li}."
            for m in ("query", "key", "value"):
                out[p + f"attention.attention.{m}.weight"] = (h, h)
                out[p + f"attention.attention.{m}.bias"] = (h,)
            out |= {
                p + "attention.output.dense.weight": (h, h),
                p + "attention.output.dense.bias": (h,),
                p + "layernorm_before.weight": (h,), p + "layernorm_before.bias": (h,),
                p + "layernorm_after.weight": (h,), p + "layernorm_after.bias": (h,),
                p + "intermediate.dense.weight": (i, h), p + "intermediate.dense.bias": (i,),
                p + "output.dense.weight": (h, i), p + "output.dense.bias": (h,),
            }
        return out

    @classmethod
    def refuse(cls, config: dict) -> str | None:
        if config.get("qkv_bias", True) is False:
            return "ViT checkpoints without query/key/value biases are not supported"
        if config.get("num_channels", 3) != 3:
            return "only RGB (3-channel) ViT checkpoints are supported"
        if config.get("image_size", 224) % config.get("patch_size", 16):
            return "the image size must be a whole number of patches"
        return None

    @property
    def capabilities(self) -> dict:
        return super().capabilities | {"input": "image", "pair": False, "window": False,
                                       "causal": "no"}

    def setup(self, config) -> None:
        self.n_layers, self.n_heads = config.num_hidden_layers, config.num_attention_heads
        self.hidden = config.hidden_size
        self.eps = config.layer_norm_eps
        self.act = activation(config.hidden_act)
        self.patch = config.patch_size
        self.grid = (config.image_size // self.patch,) * 2  # (rows, cols) of patches
        p = self.param
        self.cls_token = p("embeddings.cls_token").reshape(self.hidden)
        self.position_embeddings = p("embeddings.position_embeddings")[0]  # [1 + R*C, hidden]
        self.patch_w = p("embeddings.patch_embeddings.projection.weight")  # [hidden, 3, P, P]
        self.patch_b = p("embeddings.patch_embeddings.projection.bias")
        self.final_norm = (p("layernorm.weight"), p("layernorm.bias"))  # not in hidden_states
        for i in range(self.n_layers):
            s = f"encoder.layer.{i}."
            a = s + "attention."
            self.layers.append(Layer(
                qkv_w=torch.cat([p(a + f"attention.{m}.weight") for m in
                                 ("query", "key", "value")]),
                qkv_b=torch.cat([p(a + f"attention.{m}.bias") for m in
                                 ("query", "key", "value")]),
                out_w=p(a + "output.dense.weight"), out_b=p(a + "output.dense.bias"),
                ln1_w=p(s + "layernorm_before.weight"), ln1_b=p(s + "layernorm_before.bias"),
                ff1_w=p(s + "intermediate.dense.weight"), ff1_b=p(s + "intermediate.dense.bias"),
                ff2_w=p(s + "output.dense.weight"), ff2_b=p(s + "output.dense.bias"),
                ln2_w=p(s + "layernorm_after.weight"), ln2_b=p(s + "layernorm_after.bias"),
            ))
        self.processing = ImageProcessing.from_folder(Path(self.source), config.image_size) \
            if self.source else ImageProcessing(config.image_size, config.image_size)
        if (self.processing.height, self.processing.width) != (config.image_size,) * 2:
            raise ValueError(f"the image processor's size {self.processing.height} x "
                             f"{self.processing.width} differs from the model's "
                             f"{config.image_size} x {config.image_size}")

    def patch_tokens(self) -> list[str]:
        """'[CLS]', then 'patch r,c' row by row."""
        R, C = self.grid
        return ["[CLS]"] + [f"patch {r},{c}" for r in range(R) for c in range(C)]

    # ---------------------------------------------------------------- inputs
    def tokenized(self, text, text_pair=None):
        raise ValueError("a vision transformer reads an image, not text")

    def embed(self, ids, segments, positions="learned", seed=0):
        raise ValueError("a vision transformer reads an image, not token ids")

    def check_request(self, request: TraceRequest) -> TraceRequest:
        if request.image is None:
            raise ValueError(f"{self.title} reads an image, not text: give it an RGB image")
        if request.window is not None or request.causal:
            raise ValueError("window and causal masks order tokens along a line of text; a "
                             "ViT's patches form a 2-D grid, so they are not offered here")
        return request

    def embed_image(self, pixels: torch.Tensor, positions: str = "learned",
                    seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
        """pixels [3, H, W] -> ([1 + R*C, hidden] first layer's input, position ids)."""
        patches = F.conv2d(pixels[None], self.patch_w, self.patch_b, stride=self.patch)
        x = torch.cat([self.cls_token[None], patches[0].flatten(1).t()])  # [1 + R*C, hidden]
        e, pos_ids = self.position_table_vectors(positions, x.shape[0], seed)
        return (x if e is None else x + e), pos_ids

    @torch.inference_mode()
    def record(self, request: TraceRequest):
        seen = self.processing.resized(request.image)  # [H, W, 3] uint8
        pixels = torch.as_tensor(self.processing.pixels(request.image), device=self.device)
        x, pos_ids = self.embed_image(pixels, request.positions, request.seed)
        enc = self.encode(x, None, record=True, edit=self.edit_of(request, x.shape[0]))
        tokens = self.patch_tokens()
        n = len(tokens)
        return self._make_trace(
            enc, x, request, None, tokens=tokens, pieces=tokens,
            token_ids=np.full(n, -1, dtype=np.int64), segments=np.zeros(n, dtype=np.int64),
            pos_ids=pos_ids, patch_grid=self.grid, image=np.array(seen))
