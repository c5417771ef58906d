"""Gemma 2 (Gemma Team 2024) and Gemma 3 (text; Gemma Team 2025): the Llama decoder
(engine/families/llama.py) with what Gemma changes:

- sliding and global layers alternate (config.layer_types: Gemma 2 every other layer, Gemma 3
  five local layers of window W for each global one), and Gemma 3's two kinds of layer turn q
  and k with their own RoPE base (rope_parameters per layer type);
- the scores are scaled by query_pre_attn_scalar^(-1/2), not head_dim^(-1/2);
- Gemma 2 soft-caps the scaled scores before the softmax, cap · tanh(s / cap)
  (attn_logit_softcapping, engine.attention.capped_attention), and the output logits
  (final_logit_softcapping, Llama.next_token_logits);
- every RMSNorm multiplies by (1 + w), and there are four per layer: before and after the
  attention, before and after the feed-forward (the one after is applied to the sublayer's
  output before the residual sum);
- Gemma 3 norms each head's q and k (as Qwen3);
- the word vectors are multiplied by sqrt(hidden);
- the feed-forward's gate is GELU (tanh approximation).
"""

from __future__ import annotations

import math

from .llama import Llama


class Gemma2(Llama):
    model_types = ("gemma2",)
    title = "Gemma 2"
    windows = "types"
    sandwich = True
    norm_offset = 1.0
    embed_scaled = True

    def setup(self, config) -> None:
        self.query_scalar = float(config.query_pre_attn_scalar)
        super().setup(config)

    @property
    def attention_scale(self) -> float:
        return 1.0 / math.sqrt(self.query_scalar)


class Gemma3(Gemma2):
    model_types = ("gemma3_text",)
    title = "Gemma 3"
    qk_norm = True
