"""The Trace: every intermediate of one forward pass, under stable names.

Shape convention (one for the whole project, as in TransformerLens):
[layer, head, query_pos, key_pos] for attention matrices, [layer, head, pos, head_dim] for
per-head vectors. Rows = queries (who looks), columns = keys (who is looked at).
The export (`save_npz`) uses exactly these field names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from .request import TraceRequest

# The arrays a Trace carries, in export order, with their shapes. A test pins this list.
ARRAY_FIELDS: dict[str, str] = {
    "token_ids": "[tokens]",
    "segments": "[tokens]  0 = sentence A, 1 = sentence B",
    "position_ids": "[tokens]  which position vector each token got (-1: none)",
    "embeddings": "[tokens, hidden]  word + position + segment, after LayerNorm",
    "queries": "[layers, heads, tokens, head_dim]",
    "keys": "[layers, heads, tokens, head_dim]",
    "values": "[layers, heads, tokens, head_dim]",
    "scores": "[layers, heads, tokens, tokens]  raw q.k, before 1/sqrt(d)",
    "weights": "[layers, heads, tokens, tokens]  softmax, rows sum to 1",
    "outputs": "[layers, heads, tokens, head_dim]  weights @ values",
    "hidden_states": "[layers + 1, tokens, hidden]  embeddings, then each layer's output",
    "mask": "[tokens, tokens]  True where a query may attend to a key",
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

    @property
    def key(self) -> tuple[str, TraceRequest]:
        """This trace's identity, (model key, request): the cache key of everything made
        from it (figures, statistics)."""
        return self.model_key, self.request

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

    def save_npz(self, path) -> None:
        """Write every array under its field name, plus `tokens` and the request (as JSON)."""
        arrays = {name: getattr(self, name) for name in ARRAY_FIELDS}
        np.savez_compressed(
            path,
            tokens=np.array(self.tokens, dtype=str),
            scale=np.float32(self.scale),
            request=np.array(json.dumps(self.request.as_dict(), ensure_ascii=False)),
            **arrays,
        )


def token_labels(tokens: list[str], positions=None) -> list[str]:
    """Unique labels for possibly repeated tokens: '<token> #<position>' ('saw #2', 'saw #4').

    `positions` are the tokens' places in the sentence when only some are shown (default:
    0, 1, 2, ...)."""
    positions = range(len(tokens)) if positions is None else positions
    return [f"{tok} #{int(p)}" for tok, p in zip(tokens, positions, strict=True)]
