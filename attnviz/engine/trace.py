"""The Trace: every intermediate of one forward pass, under stable names.

Shape convention (one for the whole project, as in TransformerLens):
[layer, head, query_pos, key_pos] for attention matrices, [layer, head, pos, head_dim] for
per-head vectors. Rows = queries (who looks), columns = keys (who is looked at).
The export (`save_npz`) uses exactly these field names.

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
    "keys": "[layers, heads, tokens, head_dim]",
    "values": "[layers, heads, tokens, head_dim]",
    "scores": "[layers, heads, tokens, tokens]  raw q.k, before 1/sqrt(d)",
    "weights": "[layers, heads, tokens, tokens]  softmax, rows sum to 1",
    "outputs": "[layers, heads, tokens, head_dim]  weights @ values",
    "hidden_states": "[layers + 1, tokens, hidden]  embeddings, then each layer's output "
                     "(GPT-2's last one after its final LayerNorm, as transformers reports it)",
    "mask": "[tokens, tokens]  True where a query may attend to a key",
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

    @property
    def nbytes(self) -> int:
        """Bytes of the trace's arrays."""
        return sum(v.nbytes for v in (getattr(self, f.name) for f in fields(self))
                   if isinstance(v, np.ndarray))

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
        return self.weights.shape[0]

    @property
    def n_heads(self) -> int:
        return self.weights.shape[1]

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
        """Write every array under its field name, plus `tokens` and the request (as JSON);
        a family's extra arrays, and the tokenizer's own `pieces` where they differ from the
        tokens, when there are any."""
        arrays = {name: getattr(self, name) for name in ARRAY_FIELDS}
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
