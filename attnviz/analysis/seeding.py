"""Seeded work on torch's global random generator, safe when sessions share one process.

nn.Module constructors draw their initial weights from the global generator. On a server many
sessions run at once in threads, so "manual_seed, then build" must not interleave with another
thread's draws or the weights (and every number after them) would depend on timing. The lock
makes each seeded section atomic; fork_rng puts the global state back afterwards.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import torch

_LOCK = threading.Lock()


@contextmanager
def seeded(seed: int) -> Iterator[None]:
    """Run the block with torch's global generator seeded, alone, and restored after."""
    with _LOCK, torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield
