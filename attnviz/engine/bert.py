"""The BERT encoder forward pass, written out so every intermediate can be recorded.

Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional Transformers". Per token:

    a^i = LayerNorm(word[x_i] + e^i + segment[s_i])            embeddings (e^i: position)
and per layer, for each head h (queries, keys, values as in the seeds, row convention):
    Q_h = A W^q_h + b,  K_h = A W^k_h + b,  V_h = A W^v_h + b   [tokens, head_dim]
    S_h = Q_h K_h^T,  W_h = softmax(S_h / sqrt(d_k)),  Y_h = W_h V_h
    A' = LayerNorm(A + concat_h(Y_h) W_O + b_O)                 add & norm
    A  = LayerNorm(A' + GELU(A' W_1 + b_1) W_2 + b_2)           feed-forward, add & norm

Weights come from a Hugging Face BERT checkpoint (loaded by transformers); the computation
here is ours and is checked against transformers' eager BertModel in the tests.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from .attention import AttentionBuffers, attention, build_mask
from .buffers import BufferPool
from .positions import position_vectors
from .request import TraceRequest
from .trace import Trace


@dataclass
class Layer:
    """One encoder layer's parameters (Linear weights stored [out, in] as in torch)."""

    qkv_w: torch.Tensor  # [3 * hidden, hidden]  W^q, W^k, W^v stacked: one matrix product
    qkv_b: torch.Tensor  # [3 * hidden]
    out_w: torch.Tensor  # [hidden, hidden]      W_O
    out_b: torch.Tensor
    ln1_w: torch.Tensor
    ln1_b: torch.Tensor
    ff1_w: torch.Tensor  # [intermediate, hidden]
    ff1_b: torch.Tensor
    ff2_w: torch.Tensor  # [hidden, intermediate]
    ff2_b: torch.Tensor
    ln2_w: torch.Tensor
    ln2_b: torch.Tensor

    @property
    def w_q(self) -> torch.Tensor:  # [hidden, hidden]
        return self.qkv_w.chunk(3)[0]

    @property
    def w_k(self) -> torch.Tensor:
        return self.qkv_w.chunk(3)[1]

    @property
    def w_v(self) -> torch.Tensor:
        return self.qkv_w.chunk(3)[2]


@dataclass
class Encoded:
    """Tensors from `Model.encode` (kept on the model's device, autograd-friendly)."""

    hidden_states: list[torch.Tensor]  # layers + 1 of [tokens, hidden]
    queries: torch.Tensor | None = None  # [layers, heads, tokens, head_dim]
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    scores: torch.Tensor | None = None  # [layers, heads, tokens, tokens]
    weights: torch.Tensor | None = None
    outputs: torch.Tensor | None = None  # [layers, heads, tokens, head_dim]
    stacked_states: torch.Tensor | None = None  # [layers + 1, tokens, hidden] when pooled


class Model:
    """A BERT-family encoder: parameters, tokenizer, and the forward pass that records."""

    def __init__(
        self, state: dict, config, tokenizer, name: str, device: torch.device, source: str = ""
    ):
        self.config = config
        self.source = source  # the checkpoint folder it came from
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.n_layers: int = config.num_hidden_layers
        self.n_heads: int = config.num_attention_heads
        self.hidden: int = config.hidden_size
        self.head_dim: int = self.hidden // self.n_heads
        self.max_positions: int = config.max_position_embeddings
        self.eps: float = config.layer_norm_eps
        self.act = _activation(getattr(config, "hidden_act", "gelu"))
        self._tok_lock = threading.Lock()  # fast tokenizers are not safe across threads
        self._pool = BufferPool()  # reuses big trace arrays once nothing references them

        def p(key: str) -> torch.Tensor:
            return state[key].detach().to(device=device, dtype=torch.float32).contiguous()

        pre = "embeddings."
        self.word_embeddings = p(pre + "word_embeddings.weight")  # [vocab, hidden]
        self.position_embeddings = p(pre + "position_embeddings.weight")  # [max_pos, hidden]
        self.segment_embeddings = p(pre + "token_type_embeddings.weight")  # [types, hidden]
        self.emb_ln_w, self.emb_ln_b = p(pre + "LayerNorm.weight"), p(pre + "LayerNorm.bias")
        self.layers: list[Layer] = []
        for i in range(self.n_layers):
            s = f"encoder.layer.{i}."
            a = s + "attention."
            self.layers.append(
                Layer(
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
                )
            )

    @property
    def key(self) -> str:
        """A stable identity for caches: where the weights came from, and the device."""
        return f"{self.source}|{self.device}"

    # ------------------------------------------------------------------ tokens
    def tokenize(self, text: str, text_pair: str | None = None) -> tuple[list[int], list[int], int]:
        """WordPiece ids with [CLS]/[SEP], segment ids, and how many tokens were cut off.

        Inputs longer than the model's positions are truncated (longest sentence first).
        """
        with self._tok_lock:
            full = self.tokenizer(text, text_pair, add_special_tokens=True)
            enc = self.tokenizer(
                text, text_pair, add_special_tokens=True, truncation=True,
                max_length=self.max_positions,
            )
        ids = list(enc["input_ids"])
        segments = list(enc.get("token_type_ids") or [0] * len(ids))
        return ids, segments, len(full["input_ids"]) - len(ids)

    def tokens_of(self, ids) -> list[str]:
        with self._tok_lock:
            return self.tokenizer.convert_ids_to_tokens(list(ids))

    # ------------------------------------------------------------- embeddings
    def embed(
        self, ids, segments, positions: str = "learned", seed: int = 0
    ) -> tuple[torch.Tensor, np.ndarray]:
        """a^i = LayerNorm(word[x_i] + e^i + segment[s_i]) -> ([tokens, hidden], position ids)."""
        n = len(ids)
        ids_t = torch.as_tensor(ids, device=self.device)
        seg_t = torch.as_tensor(segments, device=self.device)
        x = self.word_embeddings[ids_t] + self.segment_embeddings[seg_t]  # [n, hidden]
        e, pos_ids = position_vectors(positions, self.position_embeddings, n, seed)
        if e is not None:
            x = x + e
        x = F.layer_norm(x, (self.hidden,), self.emb_ln_w, self.emb_ln_b, self.eps)
        return x, (pos_ids if pos_ids is not None else np.full(n, -1))

    # ---------------------------------------------------------------- encoder
    def encode(
        self,
        x: torch.Tensor,
        mask: torch.Tensor | None = None,
        record: bool = True,
        alloc=torch.empty,
    ) -> Encoded:
        """Run every layer on input vectors x [tokens, hidden]; record per-head intermediates.

        Each layer calls `attention()` (engine.attention), the function the pages teach. With
        record=True and no autograd, its results are written straight into [layers, heads, ...]
        arrays made by `alloc` (the trace's buffer pool): nothing is copied afterwards.
        """
        n, H, d = x.shape[0], self.n_heads, self.head_dim
        scale = 1.0 / math.sqrt(d)
        L = self.n_layers
        fast = record and not x.requires_grad
        out = Encoded(hidden_states=[x])
        if fast:
            kw = dict(dtype=x.dtype)
            states = _alloc(alloc, x.device, (L + 1, n, self.hidden), **kw)
            out.hidden_states = [states[0].copy_(x)]
            out.queries, out.keys, out.values, out.outputs = (
                _alloc(alloc, x.device, (L, H, n, d), **kw) for _ in range(4))
            out.scores = _alloc(alloc, x.device, (L, H, n, n), **kw)
            out.weights = _alloc(alloc, x.device, (L, H, n, n), **kw)
        elif record:
            rec: dict[str, list[torch.Tensor]] = {k: [] for k in
                                                   ("queries", "keys", "values", "scores",
                                                    "weights", "outputs")}
        buffers = None
        for li, layer in enumerate(self.layers):
            qkv = F.linear(x, layer.qkv_w, layer.qkv_b)  # [n, 3 * hidden]
            q, k, v = qkv.view(n, 3, H, d).permute(1, 2, 0, 3).unbind(0)  # 3 x [H, n, d]
            if fast:  # the trace's arrays are the attention's own output buffers
                q, k, v = out.queries[li].copy_(q), out.keys[li].copy_(k), out.values[li].copy_(v)
                buffers = AttentionBuffers(out.scores[li], out.weights[li], out.outputs[li])
            # S = Q K^T; W = softmax(S / sqrt(d_k)) where the mask allows; Y = W V
            y, weights, scores = attention(q, k, v, mask, scale, out=buffers)  # [H, n, d] ...
            if record and not fast:
                for name, val in zip(rec, (q, k, v, scores, weights, y), strict=True):
                    rec[name].append(val)
            concat = y.transpose(0, 1).reshape(n, self.hidden)  # heads side by side
            x = F.layer_norm(
                x + F.linear(concat, layer.out_w, layer.out_b), (self.hidden,),
                layer.ln1_w, layer.ln1_b, self.eps,
            )
            ff = F.linear(self.act(F.linear(x, layer.ff1_w, layer.ff1_b)), layer.ff2_w, layer.ff2_b)
            x = F.layer_norm(x + ff, (self.hidden,), layer.ln2_w, layer.ln2_b, self.eps)
            if fast:
                x = states[li + 1].copy_(x)
            out.hidden_states.append(x)
        if fast:
            out.stacked_states = states
        if record and not fast:
            for name, vals in rec.items():
                setattr(out, name, torch.stack(vals))
        return out

    # ------------------------------------------------------------------ trace
    def trace(self, request: TraceRequest | str, pair: str | None = None, **options) -> Trace:
        """Run the encoder on a request and record every intermediate.

            model.trace(TraceRequest("I saw a saw", window=1))
            model.trace("I saw a saw", window=1)          # the same request, made here

        A text is tokenized with [CLS]/[SEP] (and a second sentence as segment B); inputs
        longer than the model's positions are cut and `Trace.dropped` says how many tokens.
        """
        if not isinstance(request, TraceRequest):
            request = TraceRequest(request, pair, **options)
        elif pair is not None or options:
            raise ValueError("put the second sentence and the options in the TraceRequest")
        if request.ids is None:
            ids, segments, dropped = self.tokenize(request.text, request.pair)
        else:
            ids, segments, dropped = list(request.ids), list(request.segments), 0
        return self._record(ids, segments, request, dropped)

    def trace_ids(self, ids, segments=None, **options) -> Trace:
        """Like `trace`, for token ids already made (e.g. a permuted sentence)."""
        return self.trace(TraceRequest(ids=tuple(ids), segments=segments and tuple(segments),
                                       **options))

    @torch.inference_mode()
    def _record(self, ids: list[int], segments: list[int], request: TraceRequest,
                dropped: int) -> Trace:
        n = len(ids)
        x, pos_ids = self.embed(ids, segments, request.positions, request.seed)
        mask = build_mask(n, request.window, request.causal, self.device)
        enc = self.encode(x, mask, record=True, alloc=self._pool.empty)
        cpu = self._to_numpy
        return Trace(
            tokens=self.tokens_of(ids),
            token_ids=np.asarray(ids, dtype=np.int64),
            segments=np.asarray(segments, dtype=np.int64),
            position_ids=np.asarray(pos_ids, dtype=np.int64),
            embeddings=cpu(x),
            queries=cpu(enc.queries),
            keys=cpu(enc.keys),
            values=cpu(enc.values),
            scores=cpu(enc.scores),
            weights=cpu(enc.weights),
            outputs=cpu(enc.outputs),
            hidden_states=cpu(enc.stacked_states if enc.stacked_states is not None
                              else torch.stack(enc.hidden_states)),
            mask=np.ones((n, n), dtype=bool) if mask is None else cpu(mask),
            scale=1.0 / math.sqrt(self.head_dim),
            request=request,
            dropped=dropped,
            model_name=self.name,
            model_key=self.key,
            device=str(self.device),
        )

    def _to_numpy(self, t: torch.Tensor) -> np.ndarray:
        """CPU NumPy view of a result; GPU results are copied into pooled CPU memory."""
        t = t.detach()
        if t.device.type != "cpu":
            t = self._pool.empty(*t.shape, dtype=t.dtype).copy_(t)
        return self._pool.to_numpy(t)

    def __repr__(self) -> str:
        return (f"Model({self.name!r}, layers={self.n_layers}, heads={self.n_heads}, "
                f"hidden={self.hidden}, device={self.device})")


def _activation(name: str):
    table = {
        "gelu": F.gelu,  # exact erf GELU, as BERT
        "gelu_new": lambda t: F.gelu(t, approximate="tanh"),
        "gelu_pytorch_tanh": lambda t: F.gelu(t, approximate="tanh"),
        "relu": F.relu,
        "silu": F.silu,
        "swish": F.silu,
    }
    if name not in table:
        raise ValueError(f"unsupported activation {name!r}")
    return table[name]


def _alloc(alloc, device: torch.device, shape: tuple, dtype: torch.dtype) -> torch.Tensor:
    """Trace buffers: from the CPU pool, or plain device memory on a GPU."""
    if device.type == "cpu":
        return alloc(*shape, dtype=dtype)
    return torch.empty(*shape, dtype=dtype, device=device)
