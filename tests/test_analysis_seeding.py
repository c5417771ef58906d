"""Seeded model building stays deterministic while other sessions build their own models.

Every draw attnviz makes from torch's global generator is inside `seeded` (the rest uses
private torch.Generator objects), so seeded sections only need to exclude each other."""

import threading

import torch

from attnviz.analysis.receptive import conv_stack
from attnviz.analysis.seeding import seeded


def weights(m: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in m.parameters()]


def test_seeded_build_is_atomic_under_concurrent_draws():
    alone = weights(conv_stack(3, 2, seed=5))
    stop = threading.Event()

    def draw():  # other sessions building their own seeded models all the time
        while not stop.is_set():
            with seeded(99):
                torch.rand(64)

    noise = [threading.Thread(target=draw) for _ in range(2)]
    for t in noise:
        t.start()
    try:
        built = [weights(conv_stack(3, 2, seed=5)) for _ in range(20)]
    finally:
        stop.set()
        for t in noise:
            t.join()
    for w in built:
        assert all(torch.equal(a, b) for a, b in zip(alone, w, strict=True))


def test_seeded_restores_the_global_generator():
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    with seeded(7):
        torch.rand(10)
    assert torch.equal(torch.rand(3), expected)
