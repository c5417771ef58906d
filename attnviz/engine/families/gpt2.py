"""GPT-2 (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners"): a
decoder. Its self-attention is causal (token i sees tokens j <= i: the mask it was trained
with, always on), its LayerNorms come before each sublayer (pre-LN, engine.model), and a final
LayerNorm follows the last layer (included in the last hidden state, as transformers reports
it). Per token

    a^i = wte[x_i] + wpe[i]                                   no embedding LayerNorm

Byte-level BPE tokens ('Ġ' marks a leading space); no start token is added and a second
sentence is not offered. Weights are stored as Conv1D [in, out] and transposed here.
"""

from __future__ import annotations

import numpy as np
import torch

from ...i18n import N_
from ..model import DECODER, Layer, Model, activation
from ..request import TraceRequest
from ..tokens import BYTE_BPE


class Gpt2(Model):
    model_types = ("gpt2",)
    title = "GPT-2"
    kind = DECODER
    token_scheme = BYTE_BPE
    pre_norm = True
    takes_pair = False
    base_prefixes = ("transformer.",)
    ignorable = (r"^h\.\d+\.attn\.(bias|masked_bias)$", r"^h\.\d+\.crossattention\.bias$")

    @classmethod
    def sizes(cls, config) -> dict[str, int]:
        h = config.n_embd
        return dict(layers=config.n_layer, heads=config.n_head, hidden=h,
                    intermediate=config.n_inner or 4 * h, positions=config.n_positions,
                    vocab=config.vocab_size)

    @classmethod
    def parameter_shapes(cls, config) -> dict[str, tuple[int, ...]]:
        s = cls.sizes(config)
        h, i = s["hidden"], s["intermediate"]
        out = {"wte.weight": (s["vocab"], h), "wpe.weight": (s["positions"], h),
               "ln_f.weight": (h,), "ln_f.bias": (h,)}
        for li in range(s["layers"]):
            p = f"h.{li}."
            out |= {
                p + "ln_1.weight": (h,), p + "ln_1.bias": (h,),
                p + "attn.c_attn.weight": (h, 3 * h), p + "attn.c_attn.bias": (3 * h,),
                p + "attn.c_proj.weight": (h, h), p + "attn.c_proj.bias": (h,),
                p + "ln_2.weight": (h,), p + "ln_2.bias": (h,),
                p + "mlp.c_fc.weight": (h, i), p + "mlp.c_fc.bias": (i,),
                p + "mlp.c_proj.weight": (i, h), p + "mlp.c_proj.bias": (h,),
            }
        return out

    @classmethod
    def refuse(cls, config: dict) -> str | None:
        if config.get("add_cross_attention"):
            return "GPT-2 checkpoints with cross-attention are not supported"
        if config.get("scale_attn_by_inverse_layer_idx") or config.get(
                "scale_attn_weights", True) is False:
            return ("GPT-2 checkpoints that scale attention other than by 1/sqrt(d_k) "
                    "are not supported")
        return None

    @property
    def capabilities(self) -> dict:
        return super().capabilities | {"pair": False, "causal": "always",
                                       "bidirectional": False}

    def setup(self, config) -> None:
        s = self.sizes(config)
        self.n_layers, self.n_heads, self.hidden = s["layers"], s["heads"], s["hidden"]
        self.eps = config.layer_norm_epsilon
        self.act = activation(config.activation_function)
        p = lambda key: self.param(key)  # noqa: E731
        t = lambda key: self.param(key).t().contiguous()  # noqa: E731  Conv1D [in, out]
        self.word_embeddings = p("wte.weight")
        self.position_embeddings = p("wpe.weight")
        for i in range(self.n_layers):
            s = f"h.{i}."
            self.layers.append(Layer(
                qkv_w=t(s + "attn.c_attn.weight"), qkv_b=p(s + "attn.c_attn.bias"),
                out_w=t(s + "attn.c_proj.weight"), out_b=p(s + "attn.c_proj.bias"),
                ln1_w=p(s + "ln_1.weight"), ln1_b=p(s + "ln_1.bias"),
                ff1_w=t(s + "mlp.c_fc.weight"), ff1_b=p(s + "mlp.c_fc.bias"),
                ff2_w=t(s + "mlp.c_proj.weight"), ff2_b=p(s + "mlp.c_proj.bias"),
                ln2_w=p(s + "ln_2.weight"), ln2_b=p(s + "ln_2.bias"),
            ))
        self.final_ln = (p("ln_f.weight"), p("ln_f.bias"))

    def check_request(self, request: TraceRequest) -> TraceRequest:
        request = super().check_request(request)
        return request if request.causal else request.with_options(causal=True)

    def notes(self, request, tok) -> tuple[str, ...]:
        return (*super().notes(request, tok),
                N_("GPT-2 is a decoder: each token attends only to itself and the tokens "
                   "before it (a causal mask, always on)."))  # translated where shown

    def embed(self, ids, segments, positions: str = "learned",
              seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
        """a^i = wte[x_i] + e^i (e^i = wpe[i] for learned positions) -> ([tokens, hidden], ids)."""
        x = self.word_embeddings[torch.as_tensor(ids, device=self.device)]  # [n, hidden]
        e, pos_ids = self.position_table_vectors(positions, len(ids), seed)
        return (x if e is None else x + e), pos_ids
