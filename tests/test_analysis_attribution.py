"""Attribution of a sentence similarity: integrated gradients against an independent
implementation (Hugging Face's eager BertModel, a midpoint Riemann sum written out here),
completeness within 1%, gradient x input, and Spearman against scipy."""

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from attnviz.analysis.attribution import (
    BASELINES,
    DEFAULT_B,
    DEFAULT_STEPS,
    attribute,
    baseline_ids,
    path_rule,
    pooled_importance,
    spearman,
    structural_ids,
)

A, B = "A man is playing a guitar.", "Someone plays music on an instrument."


def hf_inputs(hf, tok, text):
    enc = tok(text)
    ids = torch.tensor([enc["input_ids"]])
    seg = torch.tensor([enc["token_type_ids"]])
    keep = {tok.cls_token_id, tok.sep_token_id, tok.pad_token_id}  # written out: no [UNK]
    base = torch.tensor([[i if i in keep else tok.pad_token_id for i in enc["input_ids"]]])
    with torch.no_grad():
        return hf.embeddings(input_ids=ids, token_type_ids=seg)[0], \
            hf.embeddings(input_ids=base, token_type_ids=seg)[0]


def hf_similarity(hf, x, other):
    e = hf.encoder(x[None]).last_hidden_state[0].mean(0)
    return torch.nn.functional.cosine_similarity(e, other, dim=0)


def hf_ig(hf, x, x0, other, steps=40):
    """IG by the midpoint rule: (x - x0) * mean_k grad s(x0 + (k + 1/2)/m (x - x0))."""
    total = torch.zeros_like(x)
    for k in range(steps):
        xi = (x0 + (k + 0.5) / steps * (x - x0)).clone().requires_grad_(True)
        (g,) = torch.autograd.grad(hf_similarity(hf, xi, other), xi)
        total += g
    return ((x - x0) * total / steps).sum(-1).numpy()


@pytest.fixture(scope="module")
def result(model):
    return attribute(model, A, B, steps=DEFAULT_STEPS)


def test_integrated_gradients_match_hugging_face(result, model, hf_model):
    tok = model.tokenizer
    xa, xa0 = hf_inputs(hf_model, tok, A)
    xb, xb0 = hf_inputs(hf_model, tok, B)
    with torch.no_grad():
        ea = hf_model.encoder(xa[None]).last_hidden_state[0].mean(0)
        eb = hf_model.encoder(xb[None]).last_hidden_state[0].mean(0)
        assert result.score == pytest.approx(float(hf_similarity(hf_model, xa, eb)), abs=1e-5)
        assert result.baseline_a == pytest.approx(float(hf_similarity(hf_model, xa0, eb)),
                                                  abs=1e-5)
        assert result.baseline_b == pytest.approx(float(hf_similarity(hf_model, xb0, ea)),
                                                  abs=1e-5)
    np.testing.assert_allclose(result.ig_a, hf_ig(hf_model, xa, xa0, eb), atol=2e-3)
    np.testing.assert_allclose(result.ig_b, hf_ig(hf_model, xb, xb0, ea), atol=2e-3)
    xa_g = xa.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(hf_similarity(hf_model, xa_g, eb), xa_g)
    np.testing.assert_allclose(result.gxi_a, (xa * g).sum(-1).numpy(), atol=1e-5)
    xb_g = xb.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(hf_similarity(hf_model, xb_g, ea), xb_g)
    np.testing.assert_allclose(result.gxi_b, (xb * g).sum(-1).numpy(), atol=1e-5)


def test_completeness_within_one_percent(result):
    for side, ig, base in (("a", result.ig_a, result.baseline_a),
                           ("b", result.ig_b, result.baseline_b)):
        delta = result.score - base
        assert abs(ig.sum() - delta) <= 0.01 * abs(delta)
        assert result.gap(side) <= 0.01
    assert result.ig_a[0] == 0.0 and result.ig_a[-1] == 0.0  # [CLS]/[SEP] are the baseline's


def test_the_content_words_carry_the_similarity(result):
    top_a = result.tokens_a[int(np.argmax(result.ig_a))]
    top_b = result.tokens_b[int(np.argmax(result.ig_b))]
    assert top_a == "guitar" and top_b == "instrument", (top_a, top_b)


def test_spearman_and_pooling():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=12), rng.normal(size=12)
    b[3] = b[4]  # a tie
    assert spearman(a, b) == pytest.approx(spearmanr(a, b).statistic, abs=1e-12)
    m = rng.dirichlet(np.ones(5), size=5)
    np.testing.assert_allclose(pooled_importance(m), m.sum(0) / 5)
    assert pooled_importance(m).sum() == pytest.approx(1.0)


def test_a_batch_of_path_points_is_encoded_as_each_point_alone(model, hf_model):
    """IG encodes its path points in batches: each point's sentence embedding equals Hugging
    Face's encoder run on that point alone, and the batch's gradient holds each point's own."""
    from attnviz.analysis.attribution import _grad, sentence_embedding

    xa, xa0 = hf_inputs(hf_model, model.tokenizer, A)
    alphas = torch.tensor([0.0, 0.3, 0.7, 1.0])[:, None, None]
    path = xa0 + alphas * (xa - xa0)  # [4, n, hidden]
    with torch.no_grad():
        ours = sentence_embedding(model, path)
        for k in range(len(path)):
            ref = hf_model.encoder(path[k][None]).last_hidden_state[0].mean(0)
            np.testing.assert_allclose(ours[k].numpy(), ref.numpy(), atol=1e-5)
    other = ours[-1]
    _, g = _grad(model, path, other)
    for k in (1, 2):
        xi = path[k].clone().requires_grad_(True)
        (ref,) = torch.autograd.grad(hf_similarity(hf_model, xi, other), xi)
        np.testing.assert_allclose(g[k].numpy(), ref.numpy(), atol=1e-5)
    with pytest.raises(ValueError):
        model.encode(path, record=True)


def test_ig_is_the_same_in_batches_of_any_size(model, monkeypatch):
    from attnviz.analysis import attribution

    whole = attribution.attribute(model, A, B, steps=8)
    # 8 points and the path's two ends: 3 + 3 + 3 + 1, the input (a = 1) alone in the last
    monkeypatch.setattr(attribution, "points_per_batch", lambda model, n: 3)
    parts = attribution.attribute(model, A, B, steps=8)
    for name in ("ig_a", "ig_b", "gxi_a", "gxi_b"):
        np.testing.assert_allclose(getattr(parts, name), getattr(whole, name), atol=1e-6)
    for name in ("score", "baseline_a", "baseline_b"):
        assert getattr(parts, name) == pytest.approx(getattr(whole, name), abs=1e-6)


@pytest.mark.parametrize("steps", [2, 7, 24, 64])
def test_path_rule_integrates_piecewise_polynomials_exactly(steps):
    """(steps + 1) // 2 Gauss-Legendre points on [0, 1/2] and steps // 2 on [1/2, 1]: exact
    for a polynomial of degree 2 k - 1 on each half (k its points there), kink at 1/2 allowed;
    the formula's integral is written out here."""
    alphas, weights = path_rule(steps)
    assert len(alphas) == steps and np.all((alphas > 0) & (alphas < 1))
    assert weights.sum() == pytest.approx(1.0, abs=1e-14)
    degree = 2 * (steps // 2) - 1
    f = np.where(alphas < 0.5, (0.5 - alphas) ** degree, 3 * (alphas - 0.5) ** degree)
    exact = (1 + 3) * 0.5 ** (degree + 1) / (degree + 1)
    assert (weights * f).sum() == pytest.approx(exact, rel=1e-12)
    with pytest.raises(ValueError):
        path_rule(1)


def test_two_halves_of_24_points_are_as_close_as_one_panel_of_32(model):
    """Why the path is cut in two (module docstring): against 128 points, the default rule's
    largest per-token error over both sides of two pairs is no larger than 32 Gauss-Legendre
    points in one panel give, and each side's is within 1% of its largest |IG|."""
    from attnviz.analysis.attribution import _grad, _inputs, _path, sentence_embedding

    nodes, w = np.polynomial.legendre.leggauss(32)
    two, one = [], []
    for text_a, text_b in ((A, B), ("I saw a saw", DEFAULT_B)):
        xa, xa0, _ = _inputs(model, text_a)
        xb, xb0, _ = _inputs(model, text_b)
        with torch.no_grad():
            ea, eb = sentence_embedding(model, xa), sentence_embedding(model, xb)
        for x, x0, other in ((xa, xa0, eb), (xb, xb0, ea)):
            ref = _path(model, x, x0, other, 128).ig
            scale = np.abs(ref).max()
            two.append(np.abs(_path(model, x, x0, other, DEFAULT_STEPS).ig - ref).max() / scale)
            a = torch.tensor((nodes + 1) / 2, dtype=x.dtype)[:, None, None]
            _, g = _grad(model, x0 + a * (x - x0), other)
            one_panel = ((x - x0).double() * (torch.tensor(w / 2)[:, None, None]
                                              * g.double()).sum(0)).sum(-1).numpy()
            one.append(np.abs(one_panel - ref).max() / scale)
    assert DEFAULT_STEPS == 24 and max(two) <= max(one) and max(two) <= 0.01, (two, one)


def test_the_batched_encoder_gives_the_per_sequence_numbers(model):
    """Attribution encodes its path points in batches (Model.last_hidden of [b, n, hidden]):
    the same embeddings and gradients as the encoder run on each shape directly."""
    from attnviz.analysis.attribution import _cos, sentence_embedding

    def eager(v):
        return model.encode(v, None, record=False).hidden_states[-1].mean(-2)

    gen = torch.Generator().manual_seed(1)
    other = torch.randn(model.hidden, generator=gen)
    for shape in ((1, 4), (5, 17), (2, 40), (23,)):
        x = torch.randn(*shape, model.hidden, generator=gen)
        with torch.no_grad():
            np.testing.assert_allclose(sentence_embedding(model, x).numpy(), eager(x).numpy(),
                                       atol=1e-6)
        grads = []
        for fn in (lambda v: sentence_embedding(model, v), eager):
            xg = x.clone().requires_grad_(True)
            (g,) = torch.autograd.grad(_cos(fn(xg), other).sum(), xg)
            grads.append(g.numpy())
        np.testing.assert_allclose(grads[0], grads[1], atol=1e-6)


@pytest.mark.parametrize("text_a", ["I saw a saw.", "x", A])
def test_a_prepared_side_gives_the_numbers_of_both_paths(model, text_a):
    """B's half made once (forward-mode Jacobian-vector products, module docstring) gives what
    encoding B's path against this A gives: IG, GxI and the blank's score to 1e-6."""
    from attnviz.analysis import attribution

    side = attribution.prepare_side(model, B, steps=8)
    direct = attribute(model, text_a, B, steps=8)
    fast = attribute(model, text_a, B, steps=8, side_b=side)
    assert fast.tokens_b == direct.tokens_b and fast.tokens_a == direct.tokens_a
    for name in ("ig_a", "ig_b", "gxi_a", "gxi_b"):
        np.testing.assert_allclose(getattr(fast, name), getattr(direct, name), atol=1e-6,
                                   err_msg=name)
    for name in ("score", "baseline_a", "baseline_b"):
        assert getattr(fast, name) == pytest.approx(getattr(direct, name), abs=1e-6), name
    assert fast.gap("b") == pytest.approx(direct.gap("b"), abs=1e-4)


def test_a_prepared_side_in_small_batches_and_for_its_own_sentence_only(model, monkeypatch):
    from attnviz.analysis import attribution

    whole = attribution.prepare_side(model, B, steps=8)
    monkeypatch.setattr(attribution, "points_per_batch", lambda model, n: 7)  # rows split
    parts = attribution.prepare_side(model, B, steps=8)
    for name in ("ig", "gxi", "blank"):
        np.testing.assert_allclose(getattr(parts, name), getattr(whole, name), atol=1e-6)
    with pytest.raises(ValueError):
        attribute(model, A, "Another sentence.", steps=8, side_b=whole)
    with pytest.raises(ValueError):
        attribute(model, A, B, steps=16, side_b=whole)


def test_an_unknown_word_gets_credit_and_only_structural_tokens_are_kept(model, hf_model):
    """[UNK] and [MASK] stand for words: they fade like words (nonzero credit), and the
    credits still add up to the drop."""
    tok = model.tokenizer
    assert structural_ids(tok) == {tok.cls_token_id, tok.sep_token_id, tok.pad_token_id}
    ids = [tok.cls_token_id, tok.unk_token_id, tok.mask_token_id, 7, tok.sep_token_id]
    assert baseline_ids(ids, structural_ids(tok), 0) == [ids[0], 0, 0, 0, ids[-1]]
    text = "I saw a saw ☃."  # ☃ is not in the vocabulary
    res = attribute(model, text, B, steps=DEFAULT_STEPS)
    unk = res.tokens_a.index("[UNK]")
    assert abs(res.ig_a[unk]) > 1e-3
    assert res.gap("a") <= 0.01 and res.gap("b") <= 0.01
    xa, xa0 = hf_inputs(hf_model, tok, text)  # the HF side's blank, written out
    assert not torch.equal(xa[unk], xa0[unk])


@pytest.mark.parametrize("baseline", ["mask", "zero"])
def test_other_blanks_give_other_credits_that_still_add_up(model, hf_model, result, baseline):
    tok = model.tokenizer
    res = attribute(model, A, B, steps=64 if baseline == "zero" else DEFAULT_STEPS,
                    baseline=baseline)
    assert res.baseline == baseline and res.score == pytest.approx(result.score, abs=1e-6)
    enc = tok(A)
    ids = enc["input_ids"]
    seg = torch.tensor([enc["token_type_ids"]])
    with torch.no_grad():
        xa = hf_model.embeddings(input_ids=torch.tensor([ids]), token_type_ids=seg)[0]
        if baseline == "mask":
            blank = [i if i in (tok.cls_token_id, tok.sep_token_id) else tok.mask_token_id
                     for i in ids]
            xa0 = hf_model.embeddings(input_ids=torch.tensor([blank]), token_type_ids=seg)[0]
        else:
            xa0 = xa.clone()
            xa0[1:-1] = 0.0
        xb = hf_model.embeddings(**{k: torch.tensor([v]) for k, v in tok(B).items()
                                    if k != "attention_mask"})[0]
        eb = hf_model.encoder(xb[None]).last_hidden_state[0].mean(0)
        assert res.baseline_a == pytest.approx(float(hf_similarity(hf_model, xa0, eb)),
                                               abs=1e-5)
    # the credits change with the blank; completeness holds for each (zero: a steeper path)
    assert np.abs(res.ig_a - result.ig_a).max() > 1e-2
    # the zero blank's path is steep near the blank: 64 points leave a few % here
    assert res.gap("a") <= (0.01 if baseline == "mask" else 0.1)
    if baseline == "mask":
        np.testing.assert_allclose(res.ig_a, hf_ig(hf_model, xa, xa0, eb), atol=2e-3)
    assert BASELINES == ("pad", "mask", "zero")
    with pytest.raises(ValueError, match="baseline"):
        attribute(model, A, B, steps=4, baseline="noise")
