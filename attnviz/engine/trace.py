"""The Trace: every intermediate of one forward pass, under stable names.

Shape convention (one for the whole project, as in TransformerLens):
[layer, head, query_pos, key_pos] for attention matrices, [layer, head, pos, head_dim] for
per-head vectors. Rows = queries (who looks), columns = keys (who is looked at).
The export (`save_npz`) uses exactly these field names.

Grouped-query attention (Llama 3, SmolLM2, Qwen, Mistral, Gemma): a key/value head is read by
a group of query heads. The Trace stores it once (`keys`, `values`: [layer, kv head, ...]) and
says which one each query head reads (`kv_heads`); `head_keys(layer, head)` and
`head_values(layer, head)` are head h's, the same array for every head of a group. Code that
wants one key array per query head asks for `keys_per_head` / `values_per_head` (a copy).
Sliding windows differ by layer: `mask_of(layer)` is layer l's mask. `weights_of(layer, head)`
is a head's weights; `recompute_weights(layer)` computes them again from the kept queries and
keys. A trace that does not hold its weights (a long decoder input) carries what the forward
pass took of them, `weight_summary` (analysis.head_stats reads it).

Every family fills the same fields (an encoder-decoder's encoder, a decoder's causal
self-attention, a vision transformer's [CLS] and patches). An encoder-decoder adds its
decoder's self-attention and cross-attention under DECODER_FIELDS (cross-attention rows =
decoder tokens, columns = encoder tokens); a vision transformer adds the image it saw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields

import numpy as np

from .request import TraceRequest

# The arrays a Trace carries, in export order, with their shapes. A test pins this list.
ARRAY_FIELDS: dict[str, str] = {
    "token_ids": "[tokens]  (-1: not a vocabulary token, e.g. an image patch)",
    "segments": "[tokens]  0 = sentence A, 1 = sentence B",
    "position_ids": "[tokens]  which position vector each token got (-1: none)",
    "embeddings": "[tokens, hidden]  the first layer's input: word (or patch) + position "
                  "(+ segment), after the embedding LayerNorm where the family has one",
    "queries": "[layers, heads, tokens, head_dim]",
    "keys": "[layers, kv heads, tokens, head_dim]  one per key/value head (kv heads = heads "
            "except in grouped-query attention): head h reads keys[:, kv_heads[h]]",
    "values": "[layers, kv heads, tokens, head_dim]  as keys",
    "kv_heads": "[heads]  which key/value head each query head reads (0, 1, 2, ... where "
                "every head has its own)",
    "scores": "[layers, heads, tokens, tokens]  raw q.k, before 1/sqrt(d) (None where the "
              "trace does not hold them: a long decoder input, see holds_weights)",
    "weights": "[layers, heads, tokens, tokens]  softmax, rows sum to 1 (None as scores; "
               "layer_weights and weights_of compute them again from queries and keys)",
    "outputs": "[layers, heads, tokens, head_dim]  weights @ values",
    "hidden_states": "[layers + 1, tokens, hidden]  embeddings, then each layer's output "
                     "(GPT-2's last one after its final LayerNorm, as transformers reports it)",
    "mask": "[tokens, tokens]  True where a query may attend to a key (in every layer; "
            "a layer with a sliding window masks more: layer_windows, Trace.mask_of)",
}

# An encoder-decoder's decoder (m decoder tokens, n encoder tokens). None for other families.
DECODER_FIELDS: dict[str, str] = {
    "decoder_token_ids": "[m]  the decoder's input: the target shifted right by one",
    "decoder_position_ids": "[m]",
    "decoder_embeddings": "[m, hidden]",
    "decoder_queries": "[decoder layers, heads, m, head_dim]",
    "decoder_keys": "[decoder layers, heads, m, head_dim]",
    "decoder_values": "[decoder layers, heads, m, head_dim]",
    "decoder_scores": "[decoder layers, heads, m, m]  raw q.k",
    "decoder_weights": "[decoder layers, heads, m, m]  causal: 0 above the diagonal",
    "decoder_outputs": "[decoder layers, heads, m, head_dim]",
    "decoder_hidden_states": "[decoder layers + 1, m, hidden]",
    "decoder_mask": "[m, m]  True where a decoder query may attend to a decoder key",
    "cross_queries": "[decoder layers, heads, m, head_dim]  from the decoder",
    "cross_keys": "[decoder layers, heads, n, head_dim]  from the encoder's last layer",
    "cross_values": "[decoder layers, heads, n, head_dim]",
    "cross_scores": "[decoder layers, heads, m, n]  raw q.k",
    "cross_weights": "[decoder layers, heads, m, n]  rows = decoder tokens, cols = encoder",
    "cross_outputs": "[decoder layers, heads, m, head_dim]",
}

# Further arrays some families record (None for the others).
EXTRA_FIELDS: dict[str, str] = {
    "layer_inputs": "[layers, tokens, hidden]  what each layer's Q, K, V are projected from, "
                    "when that is not hidden_states[layer] (pre-LayerNorm families: GPT-2, "
                    "ViT)",
    "image": "[height, width, 3] uint8  a vision transformer's input, at the model's size",
    "layer_windows": "[layers]  each layer's sliding window W in tokens (query i sees keys "
                     "i - W + 1 .. i), -1 for a layer without one; present where any layer "
                     "has one (Mistral, Gemma 2/3, Qwen2 with use_sliding_window)",
}


@dataclass
class Trace:
    """Everything one `Model.trace` call computed, as CPU NumPy arrays."""

    tokens: list[str]
    token_ids: np.ndarray
    segments: np.ndarray
    position_ids: np.ndarray
    embeddings: np.ndarray
    queries: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    outputs: np.ndarray
    hidden_states: np.ndarray
    mask: np.ndarray
    scale: float  # 1 / sqrt(head_dim), applied to scores before the softmax
    request: TraceRequest  # what was asked for: the input and the options
    dropped: int = 0  # tokens cut off because the input exceeded the model's positions
    model_name: str = ""
    model_key: str = ""  # the model's identity (Model.key): weights' folder and device
    device: str = "cpu"
    family: str = "bert"  # the checkpoint's model_type
    kind: str = "encoder"  # "encoder" | "decoder" | "encoder-decoder" | "vision"
    pieces: list[str] | None = None  # the tokenizer's own strings ('##ing', 'Ġsaw'); tokens
    #                                   are these without subword markers ('ing', 'saw')
    typed_control_tokens: tuple[str, ...] = ()  # control tokens the user typed ([SEP], [MASK])
    notes: tuple[str, ...] = ()  # plain sentences a page shows with this trace
    patch_grid: tuple[int, int] | None = None  # a vision transformer's patches: (rows, cols)
    decoder_tokens: list[str] | None = None
    decoder_pieces: list[str] | None = None
    layer_inputs: np.ndarray | None = None
    image: np.ndarray | None = None
    kv_heads: np.ndarray | None = None  # filled in: 0 .. heads-1 when not given
    layer_windows: np.ndarray | None = None
    logit_cap: float | None = None  # Gemma 2: weights = softmax(cap·tanh(scores·scale/cap))
    weight_summary: dict[str, np.ndarray] | None = None  # where weights are not held: {name:
    #   [layers, heads, tokens]} of every head's weights, taken in the forward pass
    #   (engine.attention.ROW_SUMMARY: first, self, previous, next, entropy, received)
    decoder_token_ids: np.ndarray | None = None
    decoder_position_ids: np.ndarray | None = None
    decoder_embeddings: np.ndarray | None = None
    decoder_queries: np.ndarray | None = None
    decoder_keys: np.ndarray | None = None
    decoder_values: np.ndarray | None = None
    decoder_scores: np.ndarray | None = None
    decoder_weights: np.ndarray | None = None
    decoder_outputs: np.ndarray | None = None
    decoder_hidden_states: np.ndarray | None = None
    decoder_mask: np.ndarray | None = None
    cross_queries: np.ndarray | None = None
    cross_keys: np.ndarray | None = None
    cross_values: np.ndarray | None = None
    cross_scores: np.ndarray | None = None
    cross_weights: np.ndarray | None = None
    cross_outputs: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kv_heads is None:
            self.kv_heads = np.arange(self.queries.shape[1], dtype=np.int64)
        self.kv_heads = np.asarray(self.kv_heads, dtype=np.int64)

    @property
    def n_kv_heads(self) -> int:
        """Key/value heads per layer (= n_heads except in grouped-query attention)."""
        return self.keys.shape[1]

    def kv_group(self, head: int) -> list[int]:
        """The query heads that read the same key/value head as `head` (itself included)."""
        return [int(h) for h in np.flatnonzero(self.kv_heads == self.kv_heads[head])]

    def head_keys(self, layer: int, head: int) -> np.ndarray:
        """Query head `head`'s keys in `layer`, [tokens, head_dim]: its key/value head's (the
        same memory for every head of a group)."""
        return self.keys[layer, self.kv_heads[head]]

    def head_values(self, layer: int, head: int) -> np.ndarray:
        """Query head `head`'s values in `layer`, [tokens, head_dim] (shared as head_keys)."""
        return self.values[layer, self.kv_heads[head]]

    @property
    def keys_per_head(self) -> np.ndarray:
        """[layers, heads, tokens, head_dim]: each query head's keys (a copy where heads share
        a key/value head; `keys` itself where they do not)."""
        return self._per_head(self.keys)

    @property
    def values_per_head(self) -> np.ndarray:
        """[layers, heads, tokens, head_dim]: each query head's values (as keys_per_head)."""
        return self._per_head(self.values)

    def _per_head(self, array: np.ndarray) -> np.ndarray:
        if array.shape[1] == len(self.kv_heads) and np.array_equal(
                self.kv_heads, np.arange(len(self.kv_heads))):
            return array
        return array[:, self.kv_heads]

    def mask_of(self, layer: int) -> np.ndarray:
        """[tokens, tokens]: layer `layer`'s mask, `mask` and its sliding window if it has one."""
        if self.layer_windows is None or self.layer_windows[layer] < 0:
            return self.mask
        n = self.mask.shape[0]
        idx = np.arange(n)
        return self.mask & ((idx[:, None] - idx[None, :]) < int(self.layer_windows[layer]))

    def weights_of(self, layer: int, head: int) -> np.ndarray:
        """[tokens, tokens]: head `head`'s weights in `layer` (the recorded ones, or computed
        again from its queries and keys where the trace does not hold them)."""
        if self.weights is not None:
            return self.weights[layer, head]
        return self.recompute_weights(layer, [head])[0]

    def recompute_weights(self, layer: int, heads=None) -> np.ndarray:
        """[heads, tokens, tokens] float32: weights computed again from the kept queries and
        keys, softmax(scores · scale) where mask_of(layer) allows (soft-capped first where
        logit_cap is set): what a head change needs when the weights are not held. `heads`:
        which (default all)."""
        heads = range(self.queries.shape[1]) if heads is None else heads
        q = self.queries[layer, list(heads)]  # [h, n, d]
        k = self.keys[layer, self.kv_heads[list(heads)]]  # [h, n, d]: shared ones read again
        logits = q @ k.transpose(0, 2, 1)  # [h, n, n]: the one array made, all else in place
        logits *= np.float32(self.scale)
        if self.logit_cap:
            cap = np.float32(self.logit_cap)
            logits /= cap
            np.tanh(logits, out=logits)
            logits *= cap
        np.copyto(logits, np.float32(-np.inf), where=~self.mask_of(layer))
        logits -= logits.max(axis=-1, keepdims=True)
        e = np.exp(logits, out=logits)
        e /= e.sum(axis=-1, keepdims=True)
        return e

    @property
    def nbytes(self) -> int:
        """Bytes of the trace's arrays."""
        return sum(v.nbytes for v in (getattr(self, f.name) for f in fields(self))
                   if isinstance(v, np.ndarray)) + sum(
            v.nbytes for v in (self.weight_summary or {}).values())

    @property
    def key(self) -> tuple[str, TraceRequest]:
        """This trace's identity, (model key, request): the cache key of everything made
        from it (figures, statistics)."""
        return self.model_key, self.request

    @property
    def word_pieces(self) -> list[str]:
        """The tokenizer's own strings, with the markers that say where a word starts or goes
        on ('##ing', 'Ġsaw'): what word-level views group by (`tokens` has them removed)."""
        return self.pieces if self.pieces is not None else self.tokens

    @property
    def n_layers(self) -> int:
        return self.queries.shape[0]

    @property
    def n_heads(self) -> int:
        return self.queries.shape[1]

    @property
    def holds_weights(self) -> bool:
        """Whether `scores` and `weights` are held. A decoder's trace of a long input keeps
        queries, keys and values only (30 layers x 9 heads x 2,048^2 weights are 4.5 GB):
        `layer_weights(layer)` and `weights_of(layer, head)` compute them when asked."""
        return self.weights is not None

    def layer_weights(self, layer: int) -> np.ndarray:
        """[heads, tokens, tokens]: every head's weights in `layer`, held or computed again
        (one layer at a time: a statistic over all heads streams through the layers)."""
        return self.weights[layer] if self.weights is not None else self.recompute_weights(layer)

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    @property
    def head_dim(self) -> int:
        return self.queries.shape[-1]

    @property
    def labels(self) -> list[str]:
        """One unique label per position, e.g. 'saw #2' and 'saw #4' for the two saws."""
        return token_labels(self.tokens)

    @property
    def decoder_labels(self) -> list[str]:
        """An encoder-decoder's decoder tokens, one unique label per position."""
        return token_labels(self.decoder_tokens or [])

    @property
    def attention_inputs(self) -> np.ndarray:
        """[layers, tokens, hidden]: the vectors a^i each layer's queries, keys and values are
        projected from (hidden_states[layer], or its LayerNorm in pre-LayerNorm families)."""
        return self.hidden_states[:-1] if self.layer_inputs is None else self.layer_inputs

    @property
    def has_decoder(self) -> bool:
        return self.cross_weights is not None

    def save_npz(self, path) -> None:
        """Write every array under its field name, plus `tokens`, `scale` (and `logit_cap`
        where set) and the request (as JSON);
        a family's extra arrays, and the tokenizer's own `pieces` where they differ from the
        tokens, when there are any."""
        arrays = {name: getattr(self, name) for name in ARRAY_FIELDS
                  if getattr(self, name) is not None}  # scores, weights: see holds_weights
        for name in (*DECODER_FIELDS, *EXTRA_FIELDS):
            if getattr(self, name) is not None:
                arrays[name] = getattr(self, name)
        text = {"tokens": self.tokens}
        if self.pieces is not None and self.pieces != self.tokens:
            text["pieces"] = self.pieces
        if self.decoder_tokens is not None:
            text["decoder_tokens"] = self.decoder_tokens
            if self.decoder_pieces is not None and self.decoder_pieces != self.decoder_tokens:
                text["decoder_pieces"] = self.decoder_pieces
        if self.logit_cap is not None:
            arrays["logit_cap"] = np.float32(self.logit_cap)
        np.savez_compressed(
            path,
            **{k: np.array(v, dtype=str) for k, v in text.items()},
            scale=np.float32(self.scale),
            request=np.array(json.dumps(self.request.as_dict(), ensure_ascii=False)),
            **arrays,
        )


START_TOKENS = frozenset({"[CLS]", "<s>", "<|endoftext|>", "<bos>", "[BOS]", "<|begin_of_text|>",
                          "<pad>"})


def token_labels(tokens: list[str], positions=None) -> list[str]:
    """Unique labels for possibly repeated tokens: '<token> #<number>' ('saw #2', 'saw #4').

    One numbering everywhere, the lecture's a^1..a^4: a word's number is its place counted
    from 1 (I #1, saw #2, a #3, saw #4), and a start token a model adds ([CLS], <s>) is #0,
    so BERT's and GPT-2's saws carry the same numbers. `positions` are the tokens' places in
    the sentence (0, 1, 2, ... by default) when only some are shown; a view leaves position 0
    out only where it is a start token (hidden [CLS]), so the numbers then are the positions."""
    positions = list(range(len(tokens)) if positions is None else positions)
    first = int(positions[0]) if positions else 0
    if first == 0:
        start = 0 if tokens and tokens[0] in START_TOKENS else 1
    else:  # position 0 is left out of a view only where it is a start token ([CLS] hidden)
        start = 0
    return [f"{tok} #{int(p) + start}" for tok, p in zip(tokens, positions, strict=True)]
