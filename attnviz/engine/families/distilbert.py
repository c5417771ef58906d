"""DistilBERT (Sanh et al. 2019, "DistilBERT, a distilled version of BERT"): BERT's
post-LayerNorm encoder with half the layers, no segment embeddings and WordPiece tokens,

    a^i = LayerNorm(word[x_i] + position[i])

(a checkpoint made with sinusoidal positions stores them in the same table).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..model import ENCODER, Layer, Model, activation
from ..tokens import WORDPIECE


class DistilBert(Model):
    model_types = ("distilbert",)
    title = "DistilBERT"
    kind = ENCODER
    token_scheme = WORDPIECE
    base_prefixes = ("distilbert.",)
    ignorable = (r"^embeddings\.position_ids$",)

    @classmethod
    def sizes(cls, config) -> dict[str, int]:
        return dict(layers=config.n_layers, heads=config.n_heads, hidden=config.dim,
                    intermediate=config.hidden_dim, positions=config.max_position_embeddings,
                    vocab=config.vocab_size)

    @classmethod
    def parameter_shapes(cls, config) -> dict[str, tuple[int, ...]]:
        s = cls.sizes(config)
        h, i = s["hidden"], s["intermediate"]
        out = {
            "embeddings.word_embeddings.weight": (s["vocab"], h),
            "embeddings.position_embeddings.weight": (s["positions"], h),
            "embeddings.LayerNorm.weight": (h,),
            "embeddings.LayerNorm.bias": (h,),
        }
        for li in range(s["layers"]):
            p = f"transformer.layer.{li}."
            for m in ("q_lin", "k_lin", "v_lin", "out_lin"):
                out[p + f"attention.{m}.weight"] = (h, h)
                out[p + f"attention.{m}.bias"] = (h,)
            out |= {
                p + "sa_layer_norm.weight": (h,), p + "sa_layer_norm.bias": (h,),
                p + "ffn.lin1.weight": (i, h), p + "ffn.lin1.bias": (i,),
                p + "ffn.lin2.weight": (h, i), p + "ffn.lin2.bias": (h,),
                p + "output_layer_norm.weight": (h,), p + "output_layer_norm.bias": (h,),
            }
        return out

    def setup(self, config) -> None:
        self.n_layers, self.n_heads, self.hidden = config.n_layers, config.n_heads, config.dim
        self.eps = 1e-12  # DistilBERT's LayerNorms are built with eps=1e-12
        self.act = activation(config.activation)
        p = self.param
        self.word_embeddings = p("embeddings.word_embeddings.weight")
        self.position_embeddings = p("embeddings.position_embeddings.weight")
        self.emb_ln_w, self.emb_ln_b = p("embeddings.LayerNorm.weight"), p(
            "embeddings.LayerNorm.bias")
        for i in range(self.n_layers):
            s = f"transformer.layer.{i}."
            a = s + "attention."
            self.layers.append(Layer(
                qkv_w=torch.cat([p(a + f"{m}.weight") for m in ("q_lin", "k_lin", "v_lin")]),
                qkv_b=torch.cat([p(a + f"{m}.bias") for m in ("q_lin", "k_lin", "v_lin")]),
                out_w=p(a + "out_lin.weight"), out_b=p(a + "out_lin.bias"),
                ln1_w=p(s + "sa_layer_norm.weight"), ln1_b=p(s + "sa_layer_norm.bias"),
                ff1_w=p(s + "ffn.lin1.weight"), ff1_b=p(s + "ffn.lin1.bias"),
                ff2_w=p(s + "ffn.lin2.weight"), ff2_b=p(s + "ffn.lin2.bias"),
                ln2_w=p(s + "output_layer_norm.weight"), ln2_b=p(s + "output_layer_norm.bias"),
            ))

    def embed(self, ids, segments, positions: str = "learned",
              seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
        """a^i = LayerNorm(word[x_i] + e^i) (no segments) -> ([tokens, hidden], position ids)."""
        x = self.word_embeddings[torch.as_tensor(ids, device=self.device)]  # [n, hidden]
        e, pos_ids = self.position_table_vectors(positions, len(ids), seed)
        if e is not None:
            x = x + e
        x = F.layer_norm(x, (self.hidden,), self.emb_ln_w, self.emb_ln_b, self.eps)
        return x, pos_ids
