"""The transformer forward pass every family shares, written out so every intermediate can be
recorded; one subclass per family in engine/families/ says where its weights are and what
differs (embeddings, where the LayerNorms sit, which inputs it takes).

Per layer, for each head h (queries, keys, values as in the lecture notes, row convention), A the
layer's input [tokens, hidden]:

    a   = A                    (post-LayerNorm: BERT, RoBERTa, DistilBERT, BART)
    a   = LayerNorm_1(A)       (pre-LayerNorm: GPT-2, ViT)
    Q_h = a W^q_h + b,  K_h = a W^k_h + b,  V_h = a W^v_h + b       [tokens, head_dim]
    S_h = Q_h K_h^T,  W_h = softmax(S_h / sqrt(d_k) where the mask allows),  Y_h = W_h V_h
    Z   = concat_h(Y_h) W_O + b_O
    post: A' = LayerNorm_1(A + Z);   A = LayerNorm_2(A' + FF(A'))
    pre:  A' = A + Z;                A = A' + FF(LayerNorm_2(A'))
    FF(x) = act(x W_1 + b_1) W_2 + b_2

Every trace is computed by one eager pass, `Model.encode`: each layer projects Q, K, V,
calls `attention()` (engine.attention, the function the pages teach) and keeps what it
returns; after the last layer the per-layer results are stacked into the Trace's
[layers, heads, ...] arrays. The same pass without recording (`last_hidden`) serves the
analyses that only need the last layer (integrated gradients' path points, the context
sweep's windows), with autograd.

Weights come from a Hugging Face checkpoint (read by engine.load, never instantiated through
transformers); the computation is ours and the tests check it against transformers' eager
implementation of each family.
"""

from __future__ import annotations

import functools
import math
import threading
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import torch
import torch.nn.functional as F

from .attention import attention, build_mask, causal_mask
from .images import ImageInput
from .intervene import Edit, ablation_edit, patch_edit
from .kinds import DECODER, ENCODER, ENCODER_DECODER, VISION  # noqa: F401 - the families import them here
from .positions import POSITION_MODES, position_vectors
from .request import Ablation, TraceRequest
from .tokens import WORDPIECE, control_token_note, display_tokens, typed_control_tokens
from .trace import Trace
from .weights import state_digest


@dataclass
class Layer:
    """One layer's parameters (Linear weights [out, in] as in torch). ln1 is the attention's
    LayerNorm (after the residual sum in post-LN families, before the attention in pre-LN
    ones); ln2 is the feed-forward's."""

    qkv_w: torch.Tensor  # [3 * hidden, hidden]  W^q, W^k, W^v stacked (each applied alone)
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


# What `encode` records per layer, in the order it is recorded (an Encoded field each).
RECORDED = ("queries", "keys", "values", "scores", "weights", "outputs", "layer_inputs")


@dataclass
class Encoded:
    """Tensors from `Model.encode` (kept on the model's device, autograd-friendly)."""

    hidden_states: list[torch.Tensor]  # layers + 1 of [tokens, hidden]
    queries: torch.Tensor | None = None  # [layers, heads, tokens, head_dim]
    keys: torch.Tensor | None = None
    values: torch.Tensor | None = None
    scores: torch.Tensor | None = None  # [layers, heads, tokens, tokens]  raw q.k
    weights: torch.Tensor | None = None  # [layers, heads, tokens, tokens]
    outputs: torch.Tensor | None = None  # [layers, heads, tokens, head_dim]
    layer_inputs: torch.Tensor | None = None  # [layers, tokens, hidden] (pre-LN families)
    summary: dict[str, torch.Tensor] | None = None  # {name: [layers, heads, tokens]} where the
    #                       weights are not kept (engine.attention.attention_rows, ROW_SUMMARY)


@dataclass(frozen=True)
class Tokenized:
    """A text as token ids, with what the page needs to know about how it was read."""

    ids: list[int]
    segments: list[int]
    dropped: int  # tokens cut off at the model's positions
    controls: tuple[str, ...] = ()  # control tokens the user typed ([SEP], [MASK], ...)


class Model:
    """A transformer checkpoint in the attnviz engine: parameters, tokenizer, and the forward
    pass that records. Subclasses (engine/families/) fill the family's parameters and say what
    differs; `load_model` picks the subclass from config.model_type."""

    # --- what a family declares (class attributes) ---------------------------------------
    model_types: ClassVar[tuple[str, ...]] = ()  # config.model_type values it reads
    title: ClassVar[str] = "model"  # 'BERT', 'GPT-2': how pages name it
    kind: ClassVar[str] = ENCODER
    token_scheme: ClassVar[str] = WORDPIECE  # how its tokenizer marks word pieces
    pre_norm: ClassVar[bool] = False  # LayerNorm before (GPT-2, ViT) or after each sublayer
    takes_pair: ClassVar[bool] = True  # reads a second sentence (segment B)
    base_prefixes: ClassVar[tuple[str, ...]] = ()  # task checkpoints' prefix ('bert.')
    ignorable: ClassVar[tuple[str, ...]] = ()  # regexes: checkpoint keys it does not read
    needs_tokenizer: ClassVar[bool] = True

    def __init__(self, state: dict, config, tokenizer, name: str, device: torch.device,
                 source: str = "", max_tokens: int | None = None):
        self.config = config
        self.source = source  # the checkpoint folder it came from
        self.tokenizer = tokenizer
        self.name = name
        self.device = device
        self.n_layers: int = 0
        self.n_heads: int = 0
        self.hidden: int = 0
        self.eps: float = 1e-12
        self.act = F.gelu
        self.layers: list[Layer] = []
        self.final_ln: tuple[torch.Tensor, torch.Tensor] | None = None  # in hidden_states[-1]
        self.word_embeddings: torch.Tensor | None = None  # [vocab, hidden]
        self.position_embeddings: torch.Tensor | None = None  # [positions, hidden]
        self._cap = max_tokens  # a server's limit on tokens per trace (None: the model's)
        self._tok_lock = threading.Lock()  # fast tokenizers are not safe across threads
        self._state = state
        self.weights_digest = state_digest(state)  # Model.key: caches keyed by the weights
        self.setup(config)
        del self._state
        self.head_dim: int = getattr(self, "head_dim", 0) or self.hidden // self.n_heads

    # --- what a family implements ---------------------------------------------------------
    @classmethod
    def sizes(cls, config) -> dict[str, int]:
        """The config's sizes (layers, heads, hidden, intermediate, positions, vocab), read
        before anything is built so a server can refuse what is too big."""
        raise NotImplementedError

    @classmethod
    def parameter_shapes(cls, config) -> dict[str, tuple[int, ...]]:
        """Every tensor the family reads from a checkpoint (names without the task prefix)
        and the shape the config implies."""
        raise NotImplementedError

    @classmethod
    def aliases(cls, config) -> dict[str, tuple[str, ...]]:
        """Other names under which a checkpoint may store a tensor (tied copies)."""
        return {}

    @classmethod
    def refuse(cls, config: dict) -> str | None:
        """A plain reason why this config.json cannot be run, or None."""
        return None

    def setup(self, config) -> None:
        """Fill the parameters from `self._state` (a name -> float32 tensor dict)."""
        raise NotImplementedError

    def embed(self, ids, segments, positions: str = "learned",
              seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
        """The first layer's input vectors [tokens, hidden] and the position ids used."""
        raise NotImplementedError

    # --- shared ----------------------------------------------------------------------------
    def param(self, key: str) -> torch.Tensor:
        """One checkpoint tensor on the model's device, float32."""
        return self._state[key].detach().to(device=self.device, dtype=torch.float32).contiguous()

    @property
    def key(self) -> str:
        """A stable identity for caches: where the weights came from, their digest
        (engine.weights.state_digest), the device (and a server's token limit)."""
        capped = self._cap is not None and self._cap < self.model_positions
        return (f"{self.source}|{self.weights_digest}|{self.device}"
                + (f"|max{self._cap}" if capped else ""))

    @property
    def device_type(self) -> str:
        """'cpu' or 'cuda': where the model runs, as the sidebar names it."""
        return self.device.type

    @property
    def family(self) -> str:
        return self.model_types[0]

    @property
    def model_positions(self) -> int:
        """How many tokens the checkpoint's positions cover."""
        return int(self.position_embeddings.shape[0])

    @property
    def attention_scale(self) -> float:
        """What scores are multiplied by before the softmax: 1/sqrt(d_k) (Gemma: its own)."""
        return 1.0 / math.sqrt(self.head_dim)

    @property
    def max_positions(self) -> int:
        """Tokens per trace: the model's positions, or a server's lower limit."""
        n = self.model_positions
        return n if self._cap is None else min(n, self._cap)

    @property
    def capabilities(self) -> dict:
        """What this model takes and which options apply, for pages to ask before offering:
        inputs ('text' or 'image'), pair, target, positions (modes), window, causal
        ('option': a mask laid on a bidirectional model, 'always': a decoder)."""
        return {"input": "text", "pair": self.takes_pair, "target": False,
                "positions": POSITION_MODES, "window": True, "causal": "option",
                "bidirectional": True, "pre_norm": self.pre_norm}

    @functools.cached_property
    def _special(self) -> frozenset[str]:
        return frozenset(getattr(self.tokenizer, "all_special_tokens", ()) or ())

    def special_pieces(self) -> frozenset[str]:
        """The tokenizer's control tokens ([CLS], [SEP], <s>, <|endoftext|>, ...)."""
        return self._special

    # ------------------------------------------------------------------ tokens
    def tokenize(self, text: str, text_pair: str | None = None) -> tuple[list[int], list[int], int]:
        """Token ids with the tokenizer's own [CLS]/[SEP] (or <s>/</s>), segment ids, and how
        many tokens were cut off (inputs longer than the model's positions are truncated,
        longest sentence first)."""
        t = self.tokenized(text, text_pair)
        return t.ids, t.segments, t.dropped

    def tokenized(self, text: str, text_pair: str | None = None) -> Tokenized:
        """`tokenize`, plus the control tokens the user typed."""
        if text_pair is not None and not self.takes_pair:
            raise ValueError(f"{self.title} reads one text; a second sentence is not offered "
                             "(clear it)")
        with self._tok_lock:
            full = self.tokenizer(text, text_pair, add_special_tokens=True,
                                  return_special_tokens_mask=True)
            enc = full
            if len(full["input_ids"]) > self.max_positions:
                enc = self.tokenizer(text, text_pair, add_special_tokens=True, truncation=True,
                                     max_length=self.max_positions)
            pieces = self.tokenizer.convert_ids_to_tokens(list(full["input_ids"]))
        ids = list(enc["input_ids"])
        if not ids:
            raise ValueError(f"no tokens to encode: {self.title} adds no start token, so type "
                             "some text")
        unk = getattr(self.tokenizer, "unk_token", None)
        controls = typed_control_tokens(pieces, full["special_tokens_mask"],
                                        self.special_pieces() - {unk})
        return Tokenized(ids, self.segments_of(enc, len(ids), text_pair is not None),
                         len(full["input_ids"]) - len(ids), controls)

    def segments_of(self, enc, n: int, has_pair: bool) -> list[int]:
        """0 = sentence A, 1 = sentence B: the tokenizer's token_type_ids where it makes them,
        else which sentence each token came from (special tokens go with the one before)."""
        types = enc.get("token_type_ids")
        if types is not None and (not has_pair or any(types)):
            return list(types)
        if not has_pair:
            return [0] * n
        try:
            seq = enc.sequence_ids()
        except (AttributeError, ValueError):  # a slow tokenizer: no record of the sentences
            return [0] * n
        out, last = [], 0
        for s in seq:
            last = last if s is None else s
            out.append(last)
        return out

    def pieces_of(self, ids) -> list[str]:
        """The tokenizer's own strings for ids ('##ing', 'Ġsaw')."""
        with self._tok_lock:
            return self.tokenizer.convert_ids_to_tokens(list(ids))

    def tokens_of(self, ids) -> list[str]:
        """Tokens as a reader sees them: the pieces without subword markers ('ing', 'saw')."""
        return display_tokens(self.pieces_of(ids), self.token_scheme, self.special_pieces())

    # ------------------------------------------------------------- embeddings
    def position_table_vectors(self, positions: str, n: int,
                               seed: int = 0) -> tuple[torch.Tensor | None, np.ndarray]:
        """e^1..e^n from the family's position table (engine.positions), and the ids used
        (-1 everywhere for positions="none")."""
        e, pos_ids = position_vectors(positions, self.position_embeddings, n, seed)
        return e, (pos_ids if pos_ids is not None else np.full(n, -1))

    # ---------------------------------------------------------------- encoder
    def encode(self, x: torch.Tensor, mask: torch.Tensor | None = None,
               record: bool = True, edit: Edit | None = None, start: int = 0) -> Encoded:
        """Run every layer on input vectors x [tokens, hidden] and record, per layer and head,
        what `attention()` (engine.attention) is given and returns. Without recording, x may
        carry leading batch dimensions [..., tokens, hidden] (each sequence is encoded on its
        own: integrated gradients' path points in one batch) and `mask` may be one per
        sequence ([..., 1, tokens, tokens]). A decoder's causal mask is always applied
        (combined with `mask`). Autograd flows through it.

        `edit` (engine.intervene) switches heads off or patches activations on the way: a
        head's output Y_h before W_O, a layer's attention output Z, a layer's input. Without
        recording, `start` runs layers start.. on x taken as layer `start`'s input
        (hidden_states then begins there): what comes before an edit need not be recomputed.
        """
        n, H, d = x.shape[-2], self.n_heads, self.head_dim
        batch = x.shape[:-2]
        if (batch or start) and record:
            raise ValueError("a batch of sequences, or a start past layer 0, is encoded "
                             "without recording")
        if self.kind == DECODER:
            c = causal_mask(n, x.device)
            mask = c if mask is None else mask & c
        scale = 1.0 / math.sqrt(d)
        pre = self.pre_norm
        kept: dict[str, list[torch.Tensor]] = {name: [] for name in RECORDED}
        hidden_states = [x]
        for li, layer in enumerate(self.layers[start:], start):
            if edit is not None:
                x = edit.layer_input(li, x)  # residual-stream patching
                hidden_states[-1] = x  # layer li's input as the layer reads it
            # a: what Q, K, V are projected from (the LayerNorm of x in pre-LN families)
            a = F.layer_norm(x, (self.hidden,), layer.ln1_w, layer.ln1_b, self.eps) if pre else x
            # Q, K, V: each [..., H, n, d] (a's projections, cut into heads)
            q, k, v = (F.linear(a, w, b).view(*batch, n, H, d).transpose(-3, -2)
                       for w, b in zip(layer.qkv_w.chunk(3), layer.qkv_b.chunk(3), strict=True))
            # S = Q K^T; W = softmax(S / sqrt(d_k)) where the mask allows; Y = W V
            y, weights, scores = attention(q, k, v, mask, scale)  # [.., H, n, d], [.., H, n, n]
            if edit is not None:
                y = edit.head_outputs(li, y)  # a head switched off or patched: Y_h replaced
            if record:
                for name, value in zip(RECORDED, (q, k, v, scores, weights, y, a), strict=True):
                    kept[name].append(value)
            concat = y.transpose(-3, -2).reshape(*batch, n, self.hidden)  # heads side by side
            z = F.linear(concat, layer.out_w, layer.out_b)  # [..., n, hidden]
            if edit is not None:
                z = edit.attention_output(li, z)  # a whole attention sublayer left out
            if pre:
                x = x + z
                h = F.layer_norm(x, (self.hidden,), layer.ln2_w, layer.ln2_b, self.eps)
                x = x + F.linear(self.act(F.linear(h, layer.ff1_w, layer.ff1_b)),
                                 layer.ff2_w, layer.ff2_b)
            else:
                x = F.layer_norm(x + z, (self.hidden,), layer.ln1_w, layer.ln1_b, self.eps)
                ff = F.linear(self.act(F.linear(x, layer.ff1_w, layer.ff1_b)),
                              layer.ff2_w, layer.ff2_b)
                x = F.layer_norm(x + ff, (self.hidden,), layer.ln2_w, layer.ln2_b, self.eps)
            if self.final_ln is not None and li == self.n_layers - 1:
                x = F.layer_norm(x, (self.hidden,), *self.final_ln, self.eps)
            hidden_states.append(x)
        out = Encoded(hidden_states=hidden_states)
        if record:  # each [layers, ...]
            for name, values in kept.items():
                if name != "layer_inputs" or pre:
                    setattr(out, name, torch.stack(values))
        return out

    def last_hidden(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """The last layer's vectors, encode(x, mask, record=False).hidden_states[-1], for x
        [tokens, hidden] or a batch [b, tokens, hidden] (mask [tokens, tokens] or one per
        sequence [b, 1, tokens, tokens]); autograd flows through it."""
        return self.encode(x, mask, record=False).hidden_states[-1]

    # ------------------------------------------------------------------ trace
    def trace(self, request, pair: str | None = None, **options) -> Trace:
        """Run the model on a request and record every intermediate.

            model.trace(TraceRequest("I saw a saw", window=1))
            model.trace("I saw a saw", window=1)          # the same request, made here
            vit.trace(rgb_array)                          # an image (vision transformers)

        A text is tokenized with the tokenizer's own special tokens (and a second sentence as
        segment B); inputs longer than the model's positions are cut and `Trace.dropped` says
        how many tokens. What a family cannot do is refused with a plain sentence (ValueError).
        """
        request = as_request(request, pair, options)
        request = self.check_request(request)
        return self.record(request)

    def trace_ids(self, ids, segments=None, **options) -> Trace:
        """Like `trace`, for token ids already made (e.g. a permuted sentence)."""
        return self.trace(TraceRequest(ids=tuple(ids), segments=segments and tuple(segments),
                                       **options))

    def check_request(self, request: TraceRequest) -> TraceRequest:
        """The request this family runs (a decoder's is always causal), or a ValueError that
        says plainly what it cannot do."""
        if request.image is not None:
            raise ValueError(f"{self.title} reads text, not images: choose a vision "
                             "transformer (ViT) for an image")
        if request.target is not None:
            raise ValueError(f"{self.title} has no decoder: a target text needs an "
                             "encoder-decoder such as BART")
        if request.pair is not None and not self.takes_pair:
            raise ValueError(f"{self.title} reads one text; a second sentence is not offered "
                             "(clear it)")
        return request

    def record(self, request: TraceRequest) -> Trace:
        if request.ids is None:
            tok = self.tokenized(request.text, request.pair)
        else:
            tok = Tokenized(list(request.ids), list(request.segments), 0)
        return self._record(tok, request)

    def edit_of(self, request: TraceRequest, n: int) -> Edit | None:
        """The request's intervention (engine.intervene) as tensors for encode, or None. A
        patch's source is traced first, with this request's options."""
        if request.ablate is None:
            return None
        if isinstance(request.ablate, Ablation):
            return ablation_edit(self, request.ablate, request)
        source = request.ablate.source.with_options(**request.options())
        return patch_edit(self, request.ablate, self.trace(source), n)

    def notes(self, request: TraceRequest, tok: Tokenized) -> tuple[str, ...]:
        """Plain sentences a page shows with the trace."""
        return (control_token_note(tok.controls, self.title),) if tok.controls else ()

    @torch.inference_mode()
    def _record(self, tok: Tokenized, request: TraceRequest) -> Trace:
        ids, segments = tok.ids, tok.segments
        n = len(ids)
        x, pos_ids = self.embed(ids, segments, request.positions, request.seed)
        mask = build_mask(n, request.window, request.causal, self.device)
        enc = self.encode(x, mask, edit=self.edit_of(request, n))
        pieces = self.pieces_of(ids)
        return self._make_trace(
            enc, x, request, mask, pieces=pieces,
            tokens=display_tokens(pieces, self.token_scheme, self.special_pieces()),
            token_ids=np.asarray(ids, dtype=np.int64), segments=segments, pos_ids=pos_ids,
            dropped=tok.dropped, controls=tok.controls, notes=self.notes(request, tok))

    def _make_trace(self, enc: Encoded, x: torch.Tensor, request: TraceRequest, mask,
                    *, tokens, pieces, token_ids, segments, pos_ids, dropped=0,
                    controls=(), notes=(), **more) -> Trace:
        n = x.shape[0]
        cpu = self._to_numpy
        if mask is None and self.kind == DECODER:
            mask = causal_mask(n, self.device)
        return Trace(
            tokens=tokens,
            token_ids=token_ids,
            segments=np.asarray(segments, dtype=np.int64),
            position_ids=np.asarray(pos_ids, dtype=np.int64),
            embeddings=cpu(x),
            queries=cpu(enc.queries),
            keys=cpu(enc.keys),
            values=cpu(enc.values),
            scores=cpu(enc.scores),
            weights=cpu(enc.weights),
            outputs=cpu(enc.outputs),
            hidden_states=cpu(torch.stack(enc.hidden_states)),
            mask=np.ones((n, n), dtype=bool) if mask is None else cpu(mask),
            scale=self.attention_scale,
            request=request,
            dropped=dropped,
            model_name=self.name,
            model_key=self.key,
            device=str(self.device),
            family=self.family,
            kind=self.kind,
            pieces=pieces,
            typed_control_tokens=tuple(controls),
            notes=tuple(notes),
            layer_inputs=None if enc.layer_inputs is None else cpu(enc.layer_inputs),
            **more,
        )

    @staticmethod
    def _to_numpy(t: torch.Tensor) -> np.ndarray:
        """A result as a NumPy array (a view of CPU memory; a GPU result is copied); None stays
        None (what a trace does not hold)."""
        return None if t is None else t.detach().cpu().numpy()

    def __repr__(self) -> str:
        return (f"Model({self.name!r}, {self.title}, layers={self.n_layers}, "
                f"heads={self.n_heads}, hidden={self.hidden}, device={self.device})")


def as_request(request, pair: str | None = None, options: dict | None = None) -> TraceRequest:
    """A TraceRequest from what `Model.trace` was given: a request, a text or an image."""
    options = options or {}
    if isinstance(request, TraceRequest):
        if pair is not None or options:
            raise ValueError("put the second sentence and the options in the TraceRequest")
        return request
    if isinstance(request, (np.ndarray, ImageInput)) or (
            hasattr(request, "convert") and hasattr(request, "size")):
        if pair is not None:
            raise ValueError("an image goes alone: no second sentence")
        return TraceRequest(image=request, **options)
    return TraceRequest(request, pair, **options)


ACTIVATIONS = {
    "gelu": F.gelu,  # exact erf GELU, as BERT
    "gelu_new": lambda t: F.gelu(t, approximate="tanh"),
    "gelu_pytorch_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
}


def activation(name: str):
    """The feed-forward's nonlinearity by its transformers name."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unsupported activation {name!r} "
                         f"(supported: {', '.join(ACTIVATIONS)})")
    return ACTIVATIONS[name]

