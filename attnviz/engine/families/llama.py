"""Llama (Touvron et al. 2023, "LLaMA"; Llama 2 and 3) and the decoders built like it
(SmolLM2, TinyLlama): today's decoder-only transformer. Mistral, Qwen2/2.5, Qwen3 and Gemma 2/3
(engine/families/) are this class with what they change.

Per layer, A the layer's input [tokens, hidden], H query heads, G key/value heads:

    a    = RMSNorm_1(A)            RMSNorm(x) = x / sqrt(mean(x²) + eps) · w   (no mean, no bias)
    Q_h  = a W^q_h                 h = 0 .. H-1                               [tokens, head_dim]
    K_g  = a W^k_g,  V_g = a W^v_g g = 0 .. G-1: one key/value head for a group of H/G query
                                   heads (grouped-query attention, Ainslie et al. 2023); query
                                   head h reads key/value head kv_heads[h] = h // (H/G)
    Q_h, K_g turned by their positions (rotary positions, engine.rope; no position vector is
                                   added to the input)
    S_h  = Q_h K_g^T,  W_h = softmax(S_h · scale where the mask allows),  Y_h = W_h V_g
    A'   = A + concat_h(Y_h) W_O
    A    = A' + FF(RMSNorm_2(A')),     FF(x) = (act(x W_gate) ⊙ x W_up) W_down
    after the last layer: RMSNorm_final (in the last hidden state, as transformers reports it)

The mask is causal, always (token i sees j <= i), combined with the request's window and, in
the layers that have one, the checkpoint's sliding window (a layer with window W lets query i
see keys i - W + 1 .. i: `layer_windows`, engine.attention.window_mask with w = W - 1).

In the Trace, `keys` and `values` are stored once per key/value head ([layers, G, ...]) and
`kv_heads` says which one each query head reads: a shared key is shared there too
(Trace.head_keys(layer, head) gives head h's). `queries` and `keys` are what `attention()` is
given: after the q/k norms where a family has them, after the rotation.

Rotary frequencies (`rope_frequencies`) follow the config's rope_type as transformers reads it:
"default" (θ_i = base^(-2i/d)), "linear" (θ_i / factor), "llama3" (Llama 3.1's: long
wavelengths divided by factor, short ones kept, a smooth ramp between) and "yarn" (Peng et al.
2023: the same ramp over dimensions, and cos/sin multiplied by an attention factor). Any other
rope_type is refused by name.

A long input: every head's [n, n] weights of every layer do not fit (SmolLM2 at 2,048 tokens:
30 x 9 x 2,048² floats are 4.5 GB, and the scores as much again). Past KEEP_WEIGHTS_BYTES the
Trace holds queries, keys and values but no scores or weights (Trace.holds_weights is False);
each layer's attention runs on blocks of QUERY_BLOCK query rows (engine.attention.
attention_rows: `attention()`'s steps on fewer rows, each block meeting only the keys its mask
allows, so a causal layer computes half of the [n, n] scores), no [n, n] matrix of all heads is
ever formed, and what the overview and the head statistics read of every head's weights is
taken in the same pass (Trace.weight_summary: the weight on the first token, on itself, on the
previous and the next token, each row's entropy, the weight each key receives).
`Trace.layer_weights(layer)` / `weights_of(layer, head)` compute the weights themselves again
from the kept q and k (one layer at a time).

Position modes (TraceRequest.positions): "learned" is the model's own rotary positions
0 .. n-1; "none" turns nothing (what remains of order is the causal mask alone); "shuffled"
gives the tokens a seeded permutation of 0 .. n-1 as their rotary positions. "sinusoidal"
adds a position vector, which a rotary model has none of: refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from ...i18n import N_
from ..attention import (
    ROW_SUMMARY,
    attention,
    attention_rows,
    capped_attention,
    causal_mask,
    row_blocks,
    window_mask,
)
from ..model import DECODER, Encoded, Model, Tokenized, activation
from ..positions import shuffled_order
from ..request import Ablation, TraceRequest
from ..rope import cos_sin, frequencies, rotate
from ..tokens import BYTE_BPE, SENTENCEPIECE, display_tokens

ROPE_TYPES = ("default", "linear", "llama3", "yarn")
# A trace holds every head's scores and weights up to this many bytes (float32, both); past it
# (SmolLM2's 30 x 9 heads: past ~700 tokens) it keeps queries, keys and values, and
# Trace.layer_weights / weights_of compute a layer's or a head's weights again when asked.
KEEP_WEIGHTS_BYTES = 1 << 30
# Past it, attention runs on this many query rows at a time: few enough that a block's logits
# (heads x rows x keys: 9 x 64 x 2,048 floats, 4.7 MB, at SmolLM2's longest) stay in the cache
# from the softmax to the summaries, enough that each product is one large matrix product.
QUERY_BLOCK = 64
ROTARY_POSITIONS = ("learned", "none", "shuffled")


# ------------------------------------------------------------------------------ RoPE scaling
def rope_type_of(params: dict | None) -> str:
    """The rope_type a (transformers) rope parameters dict names ('default' when none)."""
    params = params or {}
    return str(params.get("rope_type") or params.get("type") or "default")


def rope_frequencies(params: dict, head_dim: int,
                     max_positions: int) -> tuple[torch.Tensor, float]:
    """(θ [head_dim/2] float32, attention factor) for one rope parameters dict (rope_theta,
    rope_type and its fields), computed as transformers computes them.

    linear:  θ_i / factor
    llama3:  λ_i = 2π/θ_i;  λ_i > L/low: θ_i / factor;  λ_i < L/high: θ_i;  between:
             (1 - s) θ_i / factor + s θ_i,  s = (L/λ_i - low) / (high - low)
             (L = original_max_position_embeddings, low/high = low_freq_factor/high_freq_factor)
    yarn:    (1 - r_i) θ_i / factor + r_i θ_i with r_i = 1 - clamp((i - lo)/(hi - lo), 0, 1),
             lo, hi the dimensions that turn beta_fast and beta_slow times over L; cos and sin
             multiplied by the attention factor 0.1 ln(factor) + 1 (or the config's).
    """
    kind = rope_type_of(params)
    if kind not in ROPE_TYPES:
        raise ValueError(f"RoPE scaling {kind!r} is not supported (supported: "
                         f"{', '.join(ROPE_TYPES)})")
    if float(params.get("partial_rotary_factor") or 1.0) != 1.0:
        raise ValueError("RoPE on part of each head (partial_rotary_factor) is not supported")
    base = float(params.get("rope_theta") or 10000.0)
    inv_freq = frequencies(head_dim, base)  # θ_i = base^(-2i/d)
    if kind == "default":
        return inv_freq, 1.0
    factor = params.get("factor")
    if kind == "linear":
        return inv_freq / float(factor), 1.0
    original = int(params.get("original_max_position_embeddings") or max_positions)
    if kind == "llama3":
        low, high = float(params["low_freq_factor"]), float(params["high_freq_factor"])
        low_wavelen, high_wavelen = original / low, original / high
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (original / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, scaled), 1.0
    # yarn
    if factor is None:
        factor = max_positions / original
    factor = float(factor)

    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention_factor = params.get("attention_factor")
    if attention_factor is None:
        m, m_all = params.get("mscale"), params.get("mscale_all_dim")
        attention_factor = (mscale(factor, m) / mscale(factor, m_all) if m and m_all
                            else mscale(factor))
    fast, slow = params.get("beta_fast") or 32, params.get("beta_slow") or 1

    def dimension(turns: float) -> float:  # the dimension that turns `turns` times over L
        return head_dim * math.log(original / (turns * 2 * math.pi)) / (2 * math.log(base))

    lo, hi = dimension(fast), dimension(slow)
    if params.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, head_dim - 1)
    if lo == hi:
        hi += 0.001
    ramp = ((torch.arange(head_dim // 2, dtype=torch.float32) - lo) / (hi - lo)).clamp(0, 1)
    keep = 1 - ramp  # 1: the dimension keeps its frequency (extrapolation)
    pos_freqs = base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    inv = (1.0 / (factor * pos_freqs)) * (1 - keep) + (1.0 / pos_freqs) * keep
    return inv, float(attention_factor)


def rope_parameters(config, layer_type: str | None = None) -> dict:
    """The rope parameters dict of a transformers config (of one layer type where they differ
    by layer type, as in Gemma 3), with rope_theta filled in."""
    params = dict(getattr(config, "rope_parameters", None) or {})
    nested = {k: v for k, v in params.items() if isinstance(v, dict)}
    if nested:
        params = dict(nested.get(layer_type) or next(iter(nested.values())))
    if "rope_theta" not in params and getattr(config, "rope_theta", None) is not None:
        params["rope_theta"] = config.rope_theta
    return params


def raw_rope_types(config: dict) -> list[str]:
    """Every rope_type a config.json names (rope_scaling or rope_parameters, nested or not)."""
    found = []
    for key in ("rope_scaling", "rope_parameters"):
        value = config.get(key)
        if not isinstance(value, dict):
            continue
        nested = [v for v in value.values() if isinstance(v, dict)]
        for d in nested or [value]:
            found.append(rope_type_of(d))
    return found


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm (Zhang & Sennrich 2019): w · x / sqrt(mean(x²) + eps) over the last dimension."""
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


# ------------------------------------------------------------------------------ parameters
@dataclass
class DecoderLayer:
    """One layer's parameters (Linear weights [out, in]; a bias None where the family has
    none). norm_attn is RMSNorm_1 (before the attention), norm_ff RMSNorm_2 (before the
    feed-forward); Gemma 2/3 add norms after each sublayer, Qwen3 and Gemma 3 norms on each
    head's q and k."""

    q_w: torch.Tensor  # [heads * head_dim, hidden]
    k_w: torch.Tensor  # [kv_heads * head_dim, hidden]
    v_w: torch.Tensor  # [kv_heads * head_dim, hidden]
    o_w: torch.Tensor  # [hidden, heads * head_dim]  W_O
    gate_w: torch.Tensor  # [intermediate, hidden]
    up_w: torch.Tensor  # [intermediate, hidden]
    down_w: torch.Tensor  # [hidden, intermediate]
    norm_attn: torch.Tensor  # [hidden]
    norm_ff: torch.Tensor  # [hidden]
    q_b: torch.Tensor | None = None
    k_b: torch.Tensor | None = None
    v_b: torch.Tensor | None = None
    o_b: torch.Tensor | None = None
    gate_b: torch.Tensor | None = None
    up_b: torch.Tensor | None = None
    down_b: torch.Tensor | None = None
    q_norm: torch.Tensor | None = None  # [head_dim]  Qwen3, Gemma 3
    k_norm: torch.Tensor | None = None
    post_attn: torch.Tensor | None = None  # [hidden]  Gemma 2/3: after the attention
    post_ff: torch.Tensor | None = None  # [hidden]  Gemma 2/3: after the feed-forward

    @property
    def out_w(self) -> torch.Tensor:  # W_O under the name every family's Layer gives it
        return self.o_w


def _scheme(tokenizer) -> str:
    """How the tokenizer marks a leading space: '▁' (SentencePiece: Llama 2, TinyLlama, Gemma)
    or byte-level BPE's 'Ġ' (Llama 3, SmolLM2, Qwen, Mistral's newer ones)."""
    try:
        ids = tokenizer(" saw", add_special_tokens=False)["input_ids"]
        pieces = tokenizer.convert_ids_to_tokens(ids)
    except Exception:  # a tokenizer that cannot say: byte-level, the common case today
        return BYTE_BPE
    return SENTENCEPIECE if any(p.startswith("▁") for p in pieces) else BYTE_BPE


class Llama(Model):
    """A Llama-shaped decoder (see the module docstring); subclasses say what differs."""

    model_types = ("llama",)
    title = "Llama"
    kind = DECODER
    token_scheme = BYTE_BPE  # set per tokenizer in setup
    pre_norm = True
    takes_pair = False
    base_prefixes = ("model.",)
    ignorable = (r"rotary_emb\.inv_freq$",)
    # what a family adds (class attributes)
    windows: ClassVar[str] = "none"  # sliding windows: "none", "all" layers (Mistral), or by
    #                                  config.layer_types (Qwen2/3, Gemma 2/3)
    qk_norm: ClassVar[bool] = False  # RMSNorm on each head's q and k (Qwen3, Gemma 3)
    sandwich: ClassVar[bool] = False  # norms after each sublayer too (Gemma 2/3)
    norm_offset: ClassVar[float] = 0.0  # Gemma's RMSNorm scales by (1 + w): offset 1
    embed_scaled: ClassVar[bool] = False  # Gemma: word vectors times sqrt(hidden)
    attention_bias: ClassVar[bool | None] = None  # q/k/v biases: None = config.attention_bias

    # --- sizes and tensors ----------------------------------------------------------------
    @classmethod
    def sizes(cls, config) -> dict[str, int]:
        return dict(layers=config.num_hidden_layers, heads=config.num_attention_heads,
                    hidden=config.hidden_size, intermediate=config.intermediate_size,
                    positions=min(int(config.max_position_embeddings), 65536),
                    vocab=config.vocab_size)

    @classmethod
    def head_dim_of(cls, config) -> int:
        return int(getattr(config, "head_dim", None)
                   or config.hidden_size // config.num_attention_heads)

    @classmethod
    def kv_heads_of(cls, config) -> int:
        return int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)

    @classmethod
    def biases(cls, config) -> tuple[bool, bool, bool]:
        """(q/k/v biases, output projection bias, feed-forward biases)."""
        bias = bool(getattr(config, "attention_bias", False))
        return bias, bias, bool(getattr(config, "mlp_bias", False))

    @classmethod
    def parameter_shapes(cls, config) -> dict[str, tuple[int, ...]]:
        s = cls.sizes(config)
        h, i, d = s["hidden"], s["intermediate"], cls.head_dim_of(config)
        q, kv = s["heads"] * d, cls.kv_heads_of(config) * d
        qkv_bias, o_bias, mlp_bias = cls.biases(config)
        out = {"embed_tokens.weight": (s["vocab"], h), "norm.weight": (h,)}
        for li in range(s["layers"]):
            p = f"layers.{li}."
            a = p + "self_attn."
            m = p + "mlp."
            out |= {a + "q_proj.weight": (q, h), a + "k_proj.weight": (kv, h),
                    a + "v_proj.weight": (kv, h), a + "o_proj.weight": (h, q),
                    m + "gate_proj.weight": (i, h), m + "up_proj.weight": (i, h),
                    m + "down_proj.weight": (h, i),
                    p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,)}
            if qkv_bias:
                out |= {a + "q_proj.bias": (q,), a + "k_proj.bias": (kv,), a + "v_proj.bias": (kv,)}
            if o_bias:
                out[a + "o_proj.bias"] = (h,)
            if mlp_bias:
                out |= {m + "gate_proj.bias": (i,), m + "up_proj.bias": (i,),
                        m + "down_proj.bias": (h,)}
            if cls.qk_norm:
                out |= {a + "q_norm.weight": (d,), a + "k_norm.weight": (d,)}
            if cls.sandwich:
                out |= {p + "pre_feedforward_layernorm.weight": (h,),
                        p + "post_feedforward_layernorm.weight": (h,)}
        return out

    @classmethod
    def refuse(cls, config: dict) -> str | None:
        for kind in raw_rope_types(config):
            if kind not in ROPE_TYPES:
                return (f"RoPE scaling {kind!r} is not supported (supported: "
                        f"{', '.join(ROPE_TYPES)})")
        if float(config.get("partial_rotary_factor") or 1.0) != 1.0:
            return "RoPE on part of each head (partial_rotary_factor) is not supported"
        if config.get("use_bidirectional_attention"):
            return "bidirectional variants of this decoder are not supported"
        heads, kv = config.get("num_attention_heads"), config.get("num_key_value_heads")
        if isinstance(heads, int) and isinstance(kv, int) and kv > 0 and heads % kv:
            return (f"{heads} query heads cannot be shared evenly by {kv} key/value heads")
        return None

    # --- building ---------------------------------------------------------------------------
    def setup(self, config) -> None:
        s = self.sizes(config)
        self.n_layers, self.n_heads, self.hidden = s["layers"], s["heads"], s["hidden"]
        self.head_dim = self.head_dim_of(config)
        self.n_kv_heads = self.kv_heads_of(config)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"{self.n_heads} query heads cannot be shared evenly by "
                             f"{self.n_kv_heads} key/value heads")
        self.eps = float(config.rms_norm_eps)
        act = getattr(config, "hidden_activation", None) or config.hidden_act
        self.act = activation(act)
        self.positions_limit = int(config.max_position_embeddings)
        if self.tokenizer is not None:
            self.token_scheme = _scheme(self.tokenizer)
        p = self.param
        self.word_embeddings = p("embed_tokens.weight")
        self.embed_scale = self.hidden ** 0.5 if self.embed_scaled else 1.0
        self.final_norm = self.norm_weight(p("norm.weight"))
        self.layer_types = list(getattr(config, "layer_types", None) or
                                ["full_attention"] * self.n_layers)
        self.layer_windows = [self.window_of(config, li) for li in range(self.n_layers)]
        self.rotary = {}  # layer type -> (θ [d/2], attention factor)
        for kind in dict.fromkeys(self.layer_types):
            self.rotary[kind] = rope_frequencies(rope_parameters(config, kind), self.head_dim,
                                                 self.positions_limit)
        self.logit_cap = getattr(config, "attn_logit_softcapping", None)
        self.final_logit_cap = getattr(config, "final_logit_softcapping", None)
        self.tied_output = bool(getattr(config, "tie_word_embeddings", True))
        self.layers = [self.layer(f"layers.{li}.") for li in range(self.n_layers)]

    def window_of(self, config, li: int) -> int | None:
        """Layer li's sliding window W in tokens (query i sees keys i - W + 1 .. i), or None."""
        size = getattr(config, "sliding_window", None)
        if self.windows == "none" or not size:
            return None
        if self.windows == "all":
            return int(size)
        types = getattr(config, "layer_types", None)
        return int(size) if types is not None and types[li] == "sliding_attention" else None

    def norm_weight(self, w: torch.Tensor) -> torch.Tensor:
        """The factor an RMSNorm multiplies by: w, or (1 + w) in Gemma."""
        return w + self.norm_offset if self.norm_offset else w

    def layer(self, s: str) -> DecoderLayer:
        p = self.param
        get = lambda key: p(key) if key in self._state else None  # noqa: E731
        a, m = s + "self_attn.", s + "mlp."
        n = self.norm_weight
        return DecoderLayer(
            q_w=p(a + "q_proj.weight"), k_w=p(a + "k_proj.weight"), v_w=p(a + "v_proj.weight"),
            o_w=p(a + "o_proj.weight"), gate_w=p(m + "gate_proj.weight"),
            up_w=p(m + "up_proj.weight"), down_w=p(m + "down_proj.weight"),
            norm_attn=n(p(s + "input_layernorm.weight")),
            norm_ff=n(p(s + ("pre_feedforward_layernorm.weight" if self.sandwich
                             else "post_attention_layernorm.weight"))),
            q_b=get(a + "q_proj.bias"), k_b=get(a + "k_proj.bias"), v_b=get(a + "v_proj.bias"),
            o_b=get(a + "o_proj.bias"), gate_b=get(m + "gate_proj.bias"),
            up_b=get(m + "up_proj.bias"), down_b=get(m + "down_proj.bias"),
            q_norm=n(p(a + "q_norm.weight")) if self.qk_norm else None,
            k_norm=n(p(a + "k_norm.weight")) if self.qk_norm else None,
            post_attn=n(p(s + "post_attention_layernorm.weight")) if self.sandwich else None,
            post_ff=n(p(s + "post_feedforward_layernorm.weight")) if self.sandwich else None,
        )

    # --- what pages ask ---------------------------------------------------------------------
    @property
    def model_positions(self) -> int:
        """How many tokens the checkpoint was made for (max_position_embeddings: rotary
        positions have no table)."""
        return self.positions_limit

    @property
    def attention_scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim)

    @property
    def kv_heads(self) -> np.ndarray:
        """[heads]: which key/value head each query head reads (h // (heads / kv heads))."""
        return np.arange(self.n_heads) // (self.n_heads // self.n_kv_heads)

    def kv_group(self, head: int) -> tuple[int, ...]:
        """The query heads that read the same key/value head as `head` (itself included)."""
        kv = self.kv_heads
        return tuple(int(h) for h in np.flatnonzero(kv == kv[head]))

    @property
    def capabilities(self) -> dict:
        """Model.capabilities, and: rotary (positions are RoPE), kv_heads (key/value heads) and
        kv_group (query heads per key/value head), sliding_window (the layers' windows W in
        tokens, None for a global layer; None when no layer has one), logit_cap."""
        windows = self.layer_windows if any(self.layer_windows) else None
        return super().capabilities | {
            "pair": False, "causal": "always", "bidirectional": False,
            "positions": ROTARY_POSITIONS, "rotary": True, "kv_heads": self.n_kv_heads,
            "kv_group": self.n_heads // self.n_kv_heads, "sliding_window": windows,
            "logit_cap": self.logit_cap}

    def notes(self, request: TraceRequest, tok: Tokenized) -> tuple[str, ...]:
        notes = list(super().notes(request, tok))
        notes.append(N_("This model is a decoder: each token attends only to itself and the "
                        "tokens before it (a causal mask, always on)."))
        if self.n_kv_heads < self.n_heads and isinstance(request.ablate, Ablation) and \
                request.ablate.heads:
            notes.append(N_("Heads are query heads: switching one off removes its own output; "
                            "the key/value head it shares with its group stays. Switch off the "
                            "whole group to remove a key/value head."))
        return tuple(notes)

    def check_request(self, request: TraceRequest) -> TraceRequest:
        request = super().check_request(request)
        if request.positions not in ROTARY_POSITIONS:
            raise ValueError(f"{self.title} has rotary positions (RoPE: q and k are turned by "
                             f"their position); there is no position vector to make "
                             f"{request.positions!r}. Choose its own positions, none or "
                             "shuffled")
        return request if request.causal else request.with_options(causal=True)

    # --- the forward pass -------------------------------------------------------------------
    def embed(self, ids, segments, positions: str = "learned",
              seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
        """a^i = s · embed_tokens[x_i] (s = sqrt(hidden) in Gemma, else 1); no position vector
        (positions turn q and k): ([tokens, hidden], the rotary positions, -1 for none)."""
        x = self.word_embeddings[torch.as_tensor(ids, device=self.device)]
        if self.embed_scaled:
            x = x * torch.tensor(self.embed_scale, dtype=x.dtype, device=x.device)
        n = len(ids)
        if positions == "learned":
            pos = np.arange(n)
        elif positions == "shuffled":
            pos = shuffled_order(n, seed)
        elif positions == "none":
            pos = np.full(n, -1)
        else:
            raise ValueError(f"{self.title} has rotary positions: {positions!r} does not apply")
        return x, pos

    def rotations(self, positions: torch.Tensor) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
        """cos and sin [n, head_dim] of every layer type's angles at these positions."""
        return {kind: cos_sin(positions, inv_freq.to(positions.device), factor)
                for kind, (inv_freq, factor) in self.rotary.items()}

    def layer_masks(self, mask: torch.Tensor | None, n: int,
                    device) -> list[torch.Tensor | None]:
        """Each layer's mask: `mask` (causal and the request's window) and, in a layer with a
        sliding window W, window_mask(n, W - 1)."""
        out, cache = [], {}
        for w in self.layer_windows:
            if w is None or w >= n:
                out.append(mask)
                continue
            if w not in cache:
                win = window_mask(n, w - 1, device)
                cache[w] = win if mask is None else mask & win
            out.append(cache[w])
        return out

    def attend(self, q, k, v, mask, scale):
        """attention() (with Gemma 2's soft cap where the model has one) on query heads grouped
        by the key/value head they read: q [..., G, H/G, n, d], k and v [..., G, 1, n, d]
        (broadcast, not copied)."""
        if self.logit_cap:
            return capped_attention(q, k, v, mask, scale, float(self.logit_cap))
        return attention(q, k, v, mask, scale)

    def encode(self, x: torch.Tensor, mask: torch.Tensor | None = None,
               record: bool = True, edit=None, start: int = 0,
               positions: torch.Tensor | None = None, keep_weights: bool = True) -> Encoded:
        """Model.encode for a Llama-shaped decoder (the module docstring's layer). `positions`
        [n]: the rotary positions (default 0 .. n-1; entries < 0: no rotation, i.e. all of
        them for positions="none"). Recorded keys and values are [layers, kv heads, n, d];
        `keep_weights` False records everything but the scores and weights (a long input)."""
        n, H, G, d = x.shape[-2], self.n_heads, self.n_kv_heads, self.head_dim
        per = H // G  # query heads per key/value head
        batch = x.shape[:-2]
        if (batch or start) and record:
            raise ValueError("a batch of sequences, or a start past layer 0, is encoded "
                             "without recording")
        c = causal_mask(n, x.device)
        mask = c if mask is None else mask & c
        masks = self.layer_masks(mask, n, x.device)
        if positions is None:
            positions = torch.arange(n, device=x.device)
        positions = torch.as_tensor(positions, device=x.device)
        turn = bool((positions >= 0).all())
        if not turn and bool((positions >= 0).any()):
            raise ValueError("rotary positions are given for all tokens or for none")
        turns = self.rotations(positions) if turn else {}
        scale = self.attention_scale
        L = self.n_layers
        kept: dict[str, torch.Tensor] = {}  # written layer by layer: no lists, no copies
        if record:
            kept = {"queries": x.new_empty(L, H, n, d), "keys": x.new_empty(L, G, n, d),
                    "values": x.new_empty(L, G, n, d), "outputs": x.new_empty(L, H, n, d),
                    "layer_inputs": x.new_empty(L, n, self.hidden)}
            if keep_weights:
                kept |= {"scores": x.new_empty(L, H, n, n), "weights": x.new_empty(L, H, n, n)}
            else:  # what the overview and the head statistics read of the weights
                summary = {name: x.new_zeros(L, H, n, dtype=torch.float64 if name == "received"
                                             else x.dtype) for name in ROW_SUMMARY}
        hidden_states = [x]
        blocks: dict[int, list] = {}
        for li, layer in enumerate(self.layers[start:], start):
            if edit is not None:
                x = edit.layer_input(li, x)
            a = rms_norm(x, layer.norm_attn, self.eps)  # [..., n, hidden]
            q = F.linear(a, layer.q_w, layer.q_b).view(*batch, n, H, d).transpose(-3, -2)
            k = F.linear(a, layer.k_w, layer.k_b).view(*batch, n, G, d).transpose(-3, -2)
            v = F.linear(a, layer.v_w, layer.v_b).view(*batch, n, G, d).transpose(-3, -2)
            if layer.q_norm is not None:  # each head's q and k normed (Qwen3, Gemma 3)
                q, k = rms_norm(q, layer.q_norm, self.eps), rms_norm(k, layer.k_norm, self.eps)
            if turn:  # rotary positions: q and k turned by their position (engine.rope)
                cos, sin = turns[self.layer_types[li]]
                q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            m = masks[li]
            if m is not None and m.dim() > 2:
                m = m.unsqueeze(-3)  # a mask per sequence [..., 1, n, n] -> [..., 1, 1, n, n]
            # each key/value head g meets its group's query heads: [..., G, H/G, n, ...]
            qg, kg, vg = q.view(*batch, G, per, n, d), k.unsqueeze(-3), v.unsqueeze(-3)
            if keep_weights:
                y, weights, scores = self.attend(qg, kg, vg, m, scale)
            else:  # a long input: attention on blocks of query rows, the weights summarised
                if id(m) not in blocks:  # layers with the same mask share its row blocks
                    blocks[id(m)] = row_blocks(m, QUERY_BLOCK)
                y, rows = attention_rows(qg, kg, vg, m, scale, QUERY_BLOCK,
                                         float(self.logit_cap) if self.logit_cap else None,
                                         blocks[id(m)])
                weights = scores = None
                if record:
                    for name, value in rows.items():
                        summary[name][li] = value.reshape(H, n)
            y = y.reshape(*batch, H, n, d)
            if edit is not None:
                y = edit.head_outputs(li, y)
            if record:
                for name, value in (("queries", q), ("keys", k), ("values", v), ("outputs", y),
                                    ("layer_inputs", a), ("scores", scores),
                                    ("weights", weights)):
                    if name in kept:
                        kept[name][li] = value.reshape(kept[name].shape[1:])
            z = F.linear(y.transpose(-3, -2).reshape(*batch, n, H * d), layer.o_w, layer.o_b)
            if edit is not None:
                z = edit.attention_output(li, z)
            if layer.post_attn is not None:
                z = rms_norm(z, layer.post_attn, self.eps)
            x = x + z
            h = rms_norm(x, layer.norm_ff, self.eps)
            ff = F.linear(self.act(F.linear(h, layer.gate_w, layer.gate_b))
                          * F.linear(h, layer.up_w, layer.up_b), layer.down_w, layer.down_b)
            if layer.post_ff is not None:
                ff = rms_norm(ff, layer.post_ff, self.eps)
            x = x + ff
            if li == self.n_layers - 1:
                x = rms_norm(x, self.final_norm, self.eps)
            hidden_states.append(x)
        out = Encoded(hidden_states=hidden_states, **kept)
        if record and not keep_weights:
            out.summary = summary
        return out

    def keeps_weights(self, n: int) -> bool:
        """Whether a trace of n tokens holds every head's scores and weights
        (KEEP_WEIGHTS_BYTES)."""
        return 2 * 4 * self.n_layers * self.n_heads * n * n <= KEEP_WEIGHTS_BYTES

    def next_token_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The scores of every vocabulary token as the next one, from last-layer vectors
        [..., hidden]: h · embed_tokens^T (the output layer tied to the word vectors), soft-
        capped as Gemma 2 does (final_logit_softcapping)."""
        if not self.tied_output:
            raise ValueError(f"{self.name}'s output layer is not its word vectors (untied "
                             "lm_head), which attnviz does not read")
        logits = F.linear(hidden, self.word_embeddings)
        if self.final_logit_cap:
            cap = float(self.final_logit_cap)
            logits = torch.tanh(logits / cap) * cap
        return logits

    @torch.inference_mode()
    def _record(self, tok: Tokenized, request: TraceRequest):
        ids = tok.ids
        n = len(ids)
        x, pos_ids = self.embed(ids, tok.segments, request.positions, request.seed)
        mask = causal_mask(n, self.device)
        if request.window is not None:
            mask = mask & window_mask(n, request.window, self.device)
        enc = self.encode(x, mask, edit=self.edit_of(request, n),
                          positions=torch.as_tensor(pos_ids, device=self.device),
                          keep_weights=self.keeps_weights(n))
        pieces = self.pieces_of(ids)
        windows = np.array([-1 if w is None else w for w in self.layer_windows], dtype=np.int64)
        return self._make_trace(
            enc, x, request, mask, pieces=pieces,
            tokens=display_tokens(pieces, self.token_scheme, self.special_pieces()),
            token_ids=np.asarray(ids, dtype=np.int64), segments=tok.segments, pos_ids=pos_ids,
            dropped=tok.dropped, controls=tok.controls, notes=self.notes(request, tok),
            kv_heads=self.kv_heads, logit_cap=None if not self.logit_cap else float(
                self.logit_cap), layer_windows=windows if (windows >= 0).any() else None,
            weight_summary=None if enc.summary is None else {
                name: self._to_numpy(value) for name, value in enc.summary.items()})
