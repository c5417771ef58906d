"""A small caching allocator for the Trace's big CPU arrays.

A 512-token trace of a 6x12 BERT holds two [6, 12, 512, 512] float32 arrays (75 MB each).
Fresh memory of that size is page-faulted in on first write, which costs more than the
attention arithmetic itself. Like PyTorch's CUDA caching allocator, this pool hands such a
buffer out again once nothing uses it any more: a buffer returns to the pool only when the
NumPy array made from it has been garbage-collected, and NumPy views keep their base array
alive, so a buffer can never be reused while any view of an old trace is still reachable.
"""

from __future__ import annotations

import threading
import weakref

import numpy as np
import torch

MIN_POOLED_BYTES = 1 << 20  # smaller arrays are cheap to allocate
MAX_FREE_BYTES = 512 << 20  # never keep more than this much memory idle


class BufferPool:
    def __init__(self, max_free_bytes: int = MAX_FREE_BYTES):
        self._free: dict[tuple, list[torch.Tensor]] = {}
        self._free_bytes = 0
        self._max = max_free_bytes
        self._lock = threading.Lock()

    def empty(self, *shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        """An uninitialised CPU tensor, reused from the pool when one of this shape is free."""
        key = (tuple(shape), dtype)
        with self._lock:
            stack = self._free.get(key)
            if stack:
                t = stack.pop()
                self._free_bytes -= _nbytes(t)
                return t
        return torch.empty(*shape, dtype=dtype)

    def to_numpy(self, t: torch.Tensor) -> np.ndarray:
        """A NumPy array sharing t's memory; t returns to the pool when the array is collected."""
        arr = t.numpy()
        if _nbytes(t) >= MIN_POOLED_BYTES:
            weakref.finalize(arr, self._give_back, t)
        return arr

    def _give_back(self, t: torch.Tensor) -> None:
        with self._lock:
            if self._free_bytes + _nbytes(t) > self._max:
                return  # let it be freed
            self._free.setdefault((tuple(t.shape), t.dtype), []).append(t)
            self._free_bytes += _nbytes(t)

    @property
    def free_bytes(self) -> int:
        return self._free_bytes


def _nbytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()
