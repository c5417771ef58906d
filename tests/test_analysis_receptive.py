"""Receptive fields computed from the models (gradients, reachability) vs the analytic ones."""

import numpy as np
import pytest
import torch

from attnviz.analysis import receptive as rf

TEXT = "I saw a saw in the shed, so I took the saw and cut the board"


def test_analytic_fields_written_out():
    win = rf.analytic_field("window", 7, 2, 3, window=1)
    assert win.tolist() == [
        [False, False, False, True, False, False, False],
        [False, False, True, True, True, False, False],
        [False, True, True, True, True, True, False],
    ]
    causal = rf.analytic_field("causal", 5, 2, 2)
    assert causal.tolist() == [[False, False, True, False, False]] + [[True] * 3 + [False] * 2] * 2
    full = rf.analytic_field("full", 4, 1, 0)
    assert full.tolist() == [[True, False, False, False], [True] * 4]
    with pytest.raises(ValueError):
        rf.analytic_field("dilated", 4, 1, 0)


@pytest.mark.parametrize("n,depth,w,token", [(20, 6, 1, 10), (20, 4, 2, 0), (15, 5, 3, 14),
                                             (9, 3, 0, 4)])
def test_conv_stack_field_equals_analytic(n, depth, w, token):
    f = rf.conv_field(n, depth, w, token)
    assert ((f != 0) == rf.analytic_field("conv", n, depth, token, w)).all()


def test_conv_gradient_equals_jacobian():
    """The field's numbers are the norms of d(r·h_l[t])/dx, checked with a full Jacobian."""
    n, depth, w, t = 11, 3, 1, 5
    f = rf.conv_field(n, depth, w, t, channels=4, seed=3)
    net = rf.conv_stack(depth, w, channels=4, seed=3)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(1, 4, n, generator=g, dtype=torch.float64)
    r = rf._direction(4, 3, torch.float64, "cpu")
    for layer in range(1, depth + 1):
        sub = net[: 2 * layer]
        jac = torch.autograd.functional.jacobian(lambda z, s=sub: s(z)[0, :, t] @ r, x)
        np.testing.assert_allclose(f[layer], jac[0].norm(dim=0).numpy(), rtol=1e-10, atol=1e-12)


@pytest.fixture(scope="module")
def fields(model):
    ids, seg, _ = model.tokenize(TEXT)
    return len(ids), rf.all_fields(model, ids, seg, token=8, window=1)


@pytest.mark.parametrize("kind", ["full", "window", "causal", "conv"])
def test_model_gradient_fields_equal_analytic(fields, model, kind):
    n, f = fields
    an = rf.analytic_field(kind, n, model.n_layers, 8, window=1)
    assert f[kind].shape == (model.n_layers + 1, n)
    assert ((f[kind] != 0) == an).all()  # exactly 0 outside, nonzero inside
    assert (f[kind][0, 8] > 0) and (f[kind][0] != 0).sum() == 1  # depth 0 = the token itself


def test_attention_field_window_two(model):
    ids, seg, _ = model.tokenize(TEXT)
    with torch.no_grad():
        x, _ = model.embed(ids, seg)
    f = rf.attention_field(model, x, token=3, window=2)
    assert ((f != 0) == rf.analytic_field("window", len(ids), model.n_layers, 3, 2)).all()
    ext = rf.field_extent(f)
    assert ext[1].tolist() == [1, 5] and ext[2].tolist() == [0, 7]


@pytest.mark.parametrize("opts,kind", [(dict(window=1), "window"), (dict(window=3), "window"),
                                       (dict(causal=True), "causal"), ({}, "full")])
def test_reachability_through_nonzero_weights(model, opts, kind):
    t = model.trace(TEXT, **opts)
    reach = rf.reachability(t.weights, token=6)
    an = rf.analytic_field(kind, t.n_tokens, t.n_layers, 6, opts.get("window", 1))
    assert (reach == an).all()


def test_attention_field_depends_on_content(model):
    """Inside the field, attention's gradient profile changes with the sentence."""
    a = model.tokenize("the cat sat on the mat near the door")
    b = model.tokenize("a dog ran under the car by the door")
    assert len(a[0]) == len(b[0])
    fa = rf.all_fields(model, a[0], a[1], token=5, window=1)
    fb = rf.all_fields(model, b[0], b[1], token=5, window=1)
    assert np.abs(fa["window"] - fb["window"]).max() > 1e-3 * fa["window"].max()


def test_conv_gradients_depend_on_the_input_its_kernels_do_not():
    """The page's caption: a Conv1d + GELU stack's gradients change with its input (GELU' does),
    within the same field; a linear stack (no GELU) has the same gradients for every input.
    Checked with full Jacobians of the written-out stack, not with conv_field's own loop."""
    n, depth, w, t = 15, 3, 1, 7
    net = rf.conv_stack(depth, w, channels=4, seed=0)
    lin = rf.conv_stack(depth, w, channels=4, seed=0, activation=False)
    for a, b in zip(net[0::2], lin[0::2], strict=True):  # the same kernels in both stacks
        assert torch.equal(a.weight, b.weight)
    r = rf._direction(4, 0, torch.float64, "cpu")

    def grads(stack, input_seed):
        x = torch.randn(1, 4, n, generator=torch.Generator().manual_seed(input_seed),
                        dtype=torch.float64)
        jac = torch.autograd.functional.jacobian(lambda z: stack(z)[0, :, t] @ r, x)
        return jac[0].norm(dim=0).numpy()  # [n]

    g1, g2 = grads(net, 1), grads(net, 2)
    np.testing.assert_allclose(rf.conv_field(n, depth, w, t, 4, 0, input_seed=1)[-1], g1,
                               rtol=1e-10)
    assert ((g1 != 0) == (g2 != 0)).all()  # the same field ...
    assert np.abs(g1 - g2).max() > 0.05 * g1.max()  # ... with other gradients inside it
    np.testing.assert_allclose(grads(lin, 1), grads(lin, 2), rtol=1e-12)


@pytest.fixture(scope="module")
def decoder(tmp_path_factory):
    """A small random Llama (2 layers, 4 query heads sharing 2 key/value heads, RoPE)."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint

    folder = save_random_checkpoint("llama", tmp_path_factory.mktemp("llama") / "llama",
                                    heads=4, kv_heads=2, positions=32, seed=0)
    return attnviz.load_model(folder, device="cpu")


def test_a_decoders_unmasked_field_is_the_causal_one(decoder):
    """What all_fields would call "full" on a decoder is its causal field: every mask the
    engine gets is intersected with the causal mask. Hence all_fields refuses a decoder."""
    ids = list(range(5, 13))
    with torch.no_grad():
        x, _ = decoder.embed(ids, [0] * len(ids))
    token = 4
    g = rf.attention_field(decoder, x, token)
    reach = g > 0
    assert reach.tolist() == rf.analytic_field("causal", len(ids), decoder.n_layers,
                                               token).tolist()
    with pytest.raises(ValueError, match="bidirectional encoder"):
        rf.all_fields(decoder, ids, None, token, 1)


def test_an_encoder_is_bidirectional(model):
    rf.require_bidirectional(model, "fields")  # no error
