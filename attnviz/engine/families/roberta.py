"""RoBERTa (Liu et al. 2019, "RoBERTa: A Robustly Optimized BERT Pretraining Approach"):
BERT's encoder with a byte-level BPE tokenizer ('Ġ' marks a leading space), <s> text </s>
(</s> pair </s>), no segment information, and learned positions that start after the padding
index: token i (counting only non-padding tokens) gets row padding_idx + 1 + i,

    a^i = LayerNorm(word[x_i] + position[padding_idx + 1 + i] + segment[0])

(a padding token typed into the text gets row padding_idx, as transformers does).
"""

from __future__ import annotations

import numpy as np
import torch

from ..tokens import BYTE_BPE
from .bert import Bert


class Roberta(Bert):
    model_types = ("roberta",)
    title = "RoBERTa"
    token_scheme = BYTE_BPE
    base_prefixes = ("roberta.",)

    @property
    def padding_idx(self) -> int:
        return int(self.config.pad_token_id)

    def position_table(self, table: torch.Tensor) -> torch.Tensor:
        self._full_positions = table  # [max_position_embeddings, hidden]
        return table[self.padding_idx + 1:]  # row 0 = the first token's position

    def segment_ids(self, segments) -> torch.Tensor:
        return torch.zeros(len(segments), dtype=torch.long, device=self.device)

    def positions_for(self, ids, positions: str, seed: int):
        pad = np.asarray(ids) == self.padding_idx
        if positions != "learned" or not pad.any():
            return self.position_table_vectors(positions, len(ids), seed)
        # transformers' create_position_ids_from_input_ids: padding keeps row padding_idx
        rows = np.where(pad, self.padding_idx, np.cumsum(~pad) + self.padding_idx)
        if rows.max() >= self._full_positions.shape[0]:
            raise ValueError(f"{len(ids)} tokens exceed the model's "
                             f"{self.model_positions} positions")
        e = self._full_positions[torch.as_tensor(rows, device=self.device)]
        return e, np.where(pad, -1, rows - self.padding_idx - 1)
