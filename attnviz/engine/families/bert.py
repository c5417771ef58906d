"""BERT: the bidirectional encoder (Devlin et al. 2019, "BERT: Pre-training of Deep
Bidirectional Transformers"). Post-LayerNorm layers (engine.model); per token

    a^i = LayerNorm(word[x_i] + e^i + segment[s_i])            embeddings (e^i: position)

with learned absolute positions e^i = position[i]. WordPiece tokens ('##' continues a word),
[CLS] text [SEP] (pair [SEP]).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from ..model import ENCODER, Layer, Model, activation
from ..tokens import WORDPIECE


class Bert(Model):
    model_types = ("bert",)
    title = "BERT"
    kind = ENCODER
    token_scheme = WORDPIECE
    base_prefixes = ("bert.",)
    ignorable = (r"^embeddings\.position_ids$", r"^pooler\.")

    @classmethod
    def sizes(cls, config) -> dict[str, int]:
        return dict(layers=config.num_hidden_layers, heads=config.num_attention_heads,
                    hidden=config.hidden_size, intermediate=config.intermediate_size,
                    positions=config.max_position_embeddings, vocab=config.vocab_size,
                    types=config.type_vocab_size)

    @classmethod
    def parameter_shapes(cls, config) -> dict[str, tuple[int, ...]]:
        s = cls.sizes(config)
        h, i = s["hidden"], s["intermediate"]
        out = {
            "embeddings.word_embeddings.weight": (s["vocab"], h),
            "embeddings.position_embeddings.weight": (s["positions"], h),
            "embeddings.token_type_embeddings.weight": (s["types"], h),
            "embeddings.LayerNorm.weight": (h,),
            "embeddings.LayerNorm.bias": (h,),
        }
        for li in range(s["layers"]):
            p = f"encoder.layer.{li}."
            for m in ("query", "key", "value"):
                out[p + f"attention.self.{m}.weight"] = (h, h)
                out[p + f"attention.self.{m}.bias"] = (h,)
            out |= {
                p + "attention.output.dense.weight": (h, h),
                p + "attention.output.dense.bias": (h,),
                p + "attention.output.LayerNorm.weight": (h,),
                p + "attention.output.LayerNorm.bias": (h,),
                p + "intermediate.dense.weight": (i, h),
                p + "intermediate.dense.bias": (i,),
                p + "output.dense.weight": (h, i),
                p + "output.dense.bias": (h,),
                p + "output.LayerNorm.weight": (h,),
                p + "output.LayerNorm.bias": (h,),
            }
        return out

    @classmethod
    def refuse(cls, config: dict) -> str | None:
        if config.get("position_embedding_type", "absolute") != "absolute":
            return "only absolute position embeddings are supported"
        if config.get("is_decoder") or config.get("add_cross_attention"):
            return f"decoder {cls.title} checkpoints are not supported"
        return None

    def setup(self, config) -> None:
        self.n_layers = config.num_hidden_layers
        self.n_heads = config.num_attention_heads
        self.hidden = config.hidden_size
        self.eps = config.layer_norm_eps
        self.act = activation(getattr(config, "hidden_act", "gelu"))
        p = self.param
        pre = "embeddings."
        self.word_embeddings = p(pre + "word_embeddings.weight")  # [vocab, hidden]
        self.position_embeddings = self.position_table(p(pre + "position_embeddings.weight"))
        self.segment_embeddings = p(pre + "token_type_embeddings.weight")  # [types, hidden]
        self.emb_ln_w, self.emb_ln_b = p(pre + "LayerNorm.weight"), p(pre + "LayerNorm.bias")
        for i in range(self.n_layers):
            s = f"encoder.layer.{i}."
            a = s + "attention."
            self.layers.append(Layer(
                qkv_w=torch.cat([p(a + f"self.{m}.weight") for m in ("query", "key", "value")]),
                qkv_b=torch.cat([p(a + f"self.{m}.bias") for m in ("query", "key", "value")]),
                out_w=p(a + "output.dense.weight"),
                out_b=p(a + "output.dense.bias"),
                ln1_w=p(a + "output.LayerNorm.weight"),
                ln1_b=p(a + "output.LayerNorm.bias"),
                ff1_w=p(s + "intermediate.dense.weight"),
                ff1_b=p(s + "intermediate.dense.bias"),
                ff2_w=p(s + "output.dense.weight"),
                ff2_b=p(s + "output.dense.bias"),
                ln2_w=p(s + "output.LayerNorm.weight"),
                ln2_b=p(s + "output.LayerNorm.bias"),
            ))

    def position_table(self, table: torch.Tensor) -> torch.Tensor:
        """The rows that positions 0, 1, 2, ... use ([positions, hidden])."""
        return table

    def positions_for(self, ids, positions: str, seed: int):
        """e^1..e^n and the position ids (engine.positions on this family's table)."""
        return self.position_table_vectors(positions, len(ids), seed)

    def segment_ids(self, segments) -> torch.Tensor:
        """The segment ids the model adds (BERT: the tokenizer's token_type_ids)."""
        return torch.as_tensor(segments, device=self.device)

    def embed(self, ids, segments, positions: str = "learned",
              seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
        """a^i = LayerNorm(word[x_i] + e^i + segment[s_i]) -> ([tokens, hidden], position ids)."""
        ids_t = torch.as_tensor(ids, device=self.device)
        seg_t = self.segment_ids(segments)
        if len(ids) and (int(seg_t.max()) >= self.segment_embeddings.shape[0]
                         or int(seg_t.min()) < 0):
            raise ValueError(f"segment ids must be 0..{self.segment_embeddings.shape[0] - 1}")
        x = self.word_embeddings[ids_t] + self.segment_embeddings[seg_t]  # [n, hidden]
        e, pos_ids = self.positions_for(ids, positions, seed)
        if e is not None:
            x = x + e
        x = F.layer_norm(x, (self.hidden,), self.emb_ln_w, self.emb_ln_b, self.eps)
        return x, pos_ids
