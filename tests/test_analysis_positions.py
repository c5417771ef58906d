"""What positional encoding does: each number checked against a reference written out here."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import positions as P
from attnviz.analysis.common import cosine_matrix, cosine_per_layer, equal_up_to_rounding

SAW = "I saw a saw"
LONG = "The quick brown fox jumps over the lazy dog while the dog sleeps"


# ------------------------------------------------------------- permutation equivariance
@pytest.mark.parametrize("keep", [True, False])
@pytest.mark.parametrize("text,pair", [(SAW, None), (LONG, None), (SAW, "the saw was sharp")])
def test_without_positions_shuffled_outputs_are_the_outputs_shuffled(model, text, pair, keep):
    ids, segs, _ = model.tokenize(text, pair)
    original = model.trace(text, pair, positions="none")
    perm, shuffled = P.shuffled_run(model, text, pair, seed=1, keep_special=keep, positions="none")
    assert sorted(perm.tolist()) == list(range(len(ids))) and (perm != np.arange(len(ids))).any()
    # The engine really ran the shuffled ids (and their segments).
    assert shuffled.token_ids.tolist() == [ids[k] for k in perm]
    assert shuffled.segments.tolist() == [segs[k] for k in perm]
    # Reference written out: shuffled run's vector at i == original run's vector at perm[i].
    for i, k in enumerate(perm):
        np.testing.assert_allclose(shuffled.hidden_states[:, i], original.hidden_states[:, k],
                                   atol=1e-5, rtol=0)
    d = P.permuted_differences(original, shuffled, perm)
    assert d["hidden_states"].shape == (model.n_layers + 1,)
    assert d["weights"].shape == (model.n_layers,)
    assert d["hidden_states"].max() < 1e-5 and d["weights"].max() < 1e-5
    expected = np.abs(shuffled.hidden_states[-1] - original.hidden_states[-1][perm]).max()
    assert d["hidden_states"][-1] == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_with_positions_the_shuffle_changes_the_vectors(model, positions):
    original = model.trace(LONG, positions=positions)
    perm, shuffled = P.shuffled_run(model, LONG, seed=1, positions=positions)
    d = P.permuted_differences(original, shuffled, perm)
    assert d["hidden_states"][0] > 0.1  # already in the embeddings: e^i differs
    assert d["hidden_states"][-1] > 0.1 and d["weights"].max() > 0.01


def test_shuffle_order():
    fixed = np.array([True, False, False, False, False, True])
    for seed in range(20):
        perm = P.shuffle_order(6, seed, fixed)
        assert sorted(perm.tolist()) == list(range(6))
        assert perm[0] == 0 and perm[5] == 5
        assert (perm != np.arange(6)).any()
    assert P.shuffle_order(6, 3, fixed).tolist() == P.shuffle_order(6, 3, fixed).tolist()
    assert P.shuffle_order(3, 0, np.array([True, False, True])).tolist() == [0, 1, 2]
    assert (P.shuffle_order(5, 0) != np.arange(5)).any()


# ------------------------------------------------------------------------ two saws
def test_fallback_pair():
    assert P.fallback_pair(4) == (1, 2) and P.fallback_pair(9) == (1, 7)
    assert P.fallback_pair(3) == (0, 2) and P.fallback_pair(1) == (0, 0)


def test_two_saws_equal_up_to_rounding_in_every_layer_without_positions(model, torch_threads):
    t = model.trace(SAW, positions="none")
    assert t.tokens == ["[CLS]", "i", "saw", "a", "saw", "[SEP]"]
    h = t.hidden_states
    for layer in range(model.n_layers + 1):
        assert equal_up_to_rounding(h[layer, 2], h[layer, 4]), layer
    cos = cosine_per_layer(h, 2, 4)
    assert cos.shape == (model.n_layers + 1,)
    np.testing.assert_allclose(cos, 1.0, atol=1e-6)


def test_two_saws_cosine_with_learned_positions_matches_torch(model):
    t = model.trace(SAW, positions="learned")
    cos = cosine_per_layer(t.hidden_states, 2, 4)
    h = torch.from_numpy(t.hidden_states.astype(np.float64))
    ref = F.cosine_similarity(h[:, 2], h[:, 4], dim=-1).numpy()
    np.testing.assert_allclose(cos, ref, atol=1e-12)
    assert cos[-1] < 0.8  # FIELD_NOTES: 0.658 in the last layer
    assert (cos < 1 - 1e-3).all()


# ------------------------------------------------------------------- the encodings
@pytest.mark.parametrize("n,d", [(50, 384), (9, 7), (512, 16)])
def test_sinusoidal_matches_the_formula(n, d):
    pe = P.sinusoidal_table(n, d)
    ref = np.zeros((n, d))
    for pos in range(n):
        for k in range(d):
            i = k // 2  # dimensions 2i and 2i+1 share the frequency 1 / 10000^(2i/d)
            angle = pos / math.pow(10000.0, 2 * i / d)
            ref[pos, k] = math.sin(angle) if k % 2 == 0 else math.cos(angle)
    assert pe.shape == (n, d)
    np.testing.assert_allclose(pe, ref, atol=1e-6, rtol=0)


def test_sinusoidal_dot_products_depend_only_on_distance():
    dots = P.dot_products(P.sinusoidal_table(40, 64))
    np.testing.assert_allclose(dots, dots.T, atol=1e-9)
    for shift in (1, 5, 17):
        diag = np.diagonal(dots, offset=shift)
        np.testing.assert_allclose(diag, diag[0], atol=1e-4)
    np.testing.assert_allclose(np.diagonal(dots), 32.0, atol=1e-4)  # sin^2 + cos^2 per pair


def test_learned_table_and_cosines(model):
    table = P.learned_table(model, 20)
    np.testing.assert_array_equal(table, model.position_embeddings[:20].numpy())
    cos = cosine_matrix(table)
    x = torch.from_numpy(table.astype(np.float64))
    ref = F.cosine_similarity(x[:, None, :], x[None, :, :], dim=-1).numpy()
    np.testing.assert_allclose(cos, ref, atol=1e-12)


def test_pca_matches_the_covariance_eigenvectors(model):
    x = P.learned_table(model, 128).astype(np.float64)
    coords, ratio = P.pca(x)
    xc = x - x.mean(0)
    evals, evecs = np.linalg.eigh(xc.T @ xc / (len(x) - 1))  # ascending
    top = evecs[:, ::-1][:, :2]
    ref = xc @ top
    for k in range(2):  # a component is defined up to its sign
        sign = np.sign(ref[:, k] @ coords[:, k])
        np.testing.assert_allclose(coords[:, k], sign * ref[:, k], atol=1e-8)
    np.testing.assert_allclose(ratio, evals[::-1][:2] / evals.sum(), atol=1e-10)
    assert ratio[0] >= ratio[1] > 0


# ------------------------------------------------------ distances between the modes
def _js_reference(p, q):
    """JS in bits, written out element by element."""
    total = 0.0
    for a, b in zip(p, q, strict=True):
        m = (a + b) / 2
        if a > 0:
            total += 0.5 * a * math.log2(a / m)
        if b > 0:
            total += 0.5 * b * math.log2(b / m)
    return total


def test_js_divergence_against_the_formula():
    rng = np.random.default_rng(0)
    p, q = rng.dirichlet(np.ones(7), size=5), rng.dirichlet(np.ones(7), size=5)
    q[0, 2] = 0.0
    q[0] /= q[0].sum()
    js = P.js_divergence(p, q)
    np.testing.assert_allclose(js, [_js_reference(a, b) for a, b in zip(p, q, strict=True)],
                               atol=1e-12)
    np.testing.assert_allclose(js, P.js_divergence(q, p), atol=1e-15)  # symmetric
    assert P.js_divergence(np.array([1.0, 0]), np.array([0, 1.0])) == pytest.approx(1.0)
    assert P.js_divergence(p, p).max() == 0.0


def test_mode_divergences(model):
    modes = ("learned", "none", "sinusoidal", "shuffled")
    traces = {m: model.trace(SAW, positions=m, seed=2) for m in modes}
    dist = P.mode_divergences(traces, "learned")
    assert set(dist) == set(modes)
    for d in dist.values():
        assert d.shape == (model.n_layers, model.n_heads)
        assert (d >= 0).all() and (d <= 1).all()
    assert (dist["learned"] == 0).all()  # a mode compared with itself
    assert (P.mode_divergences(traces, "none")["none"] == 0).all()
    assert dist["none"].mean() > 1e-3
    w_a, w_b = traces["learned"].weights, traces["none"].weights
    ref = np.mean([_js_reference(w_a[3, 7, i].astype(np.float64), w_b[3, 7, i].astype(np.float64))
                   for i in range(w_a.shape[-1])])
    assert dist["none"][3, 7] == pytest.approx(ref, abs=1e-9)
    final = P.final_cosines(traces, "learned")
    np.testing.assert_allclose(final["learned"], 1.0, atol=1e-6)
    h_a = torch.from_numpy(traces["learned"].hidden_states[-1].astype(np.float64))
    h_b = torch.from_numpy(traces["none"].hidden_states[-1].astype(np.float64))
    np.testing.assert_allclose(final["none"], F.cosine_similarity(h_a, h_b, dim=-1).numpy(),
                               atol=1e-12)


# ----------------------------------------------------------------------- toy vectors
def test_toy_self_attention():
    words = ["I", "saw", "a", "saw"]
    toy = P.toy_self_attention(words, d=4, seed=0)
    none, sin = toy["none"], toy["sinusoidal"]
    np.testing.assert_array_equal(none["inputs"][1], none["inputs"][3])
    np.testing.assert_array_equal(none["outputs"][1], none["outputs"][3])
    assert np.abs(sin["outputs"][1] - sin["outputs"][3]).max() > 1e-3
    np.testing.assert_allclose(sin["inputs"] - none["inputs"],
                               P.sinusoidal_table(4, 4).astype(np.float64), atol=1e-7)
    # Reference: torch's fused attention on the same queries/keys/values.
    gen = torch.Generator().manual_seed(0)
    torch.randn(3, 4, generator=gen, dtype=torch.float64)  # the 3-word vocabulary table
    w_q, w_k, w_v = torch.randn(3, 4, 4, generator=gen, dtype=torch.float64)
    x = torch.from_numpy(sin["inputs"])
    ref = F.scaled_dot_product_attention(x @ w_q.T, x @ w_k.T, x @ w_v.T)
    np.testing.assert_allclose(sin["outputs"], ref.numpy(), atol=1e-12)
    np.testing.assert_allclose(sin["weights"].sum(-1), 1.0, atol=1e-12)


# ------------------------------------------------------------ any accepted checkpoint
def make_tiny_bert(folder):
    """A small random BERT (2 layers x 4 heads, hidden 32, 40 positions), bundled tokenizer."""
    import shutil

    from transformers import BertConfig, BertModel

    from attnviz.engine import bundled_model_dir

    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(bundled_model_dir() / name, folder / name)
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=4, intermediate_size=64, max_position_embeddings=40)
    BertModel(cfg).save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny_bert"))


def test_a_different_checkpoint(tiny_dir):
    import attnviz

    tiny = attnviz.load_model(str(tiny_dir), device="cpu")
    assert (tiny.n_layers, tiny.n_heads, tiny.max_positions) == (2, 4, 40)
    original = tiny.trace(LONG, positions="none")
    perm, shuffled = P.shuffled_run(tiny, LONG, seed=3, positions="none")
    assert P.permuted_differences(original, shuffled, perm)["hidden_states"].max() < 1e-5
    perm, shuffled = P.shuffled_run(tiny, LONG, seed=3, positions="learned")
    learned = tiny.trace(LONG, positions="learned")
    assert P.permuted_differences(learned, shuffled, perm)["hidden_states"].max() > 1e-2
    np.testing.assert_allclose(
        cosine_per_layer(tiny.trace(SAW, positions="none").hidden_states, 2, 4), 1.0, atol=1e-6)
    coords, ratio = P.pca(P.learned_table(tiny, 40)[1:])
    assert coords.shape == (39, 2) and ratio.sum() < 1


def test_sinusoid_scaling_against_hf_tables(model, hf_model):
    """Unscaled sinusoids (norm sqrt(d/2) = 13.9) leave the LayerNormed input a mean cosine of
    0.09 with the word alone on 'I saw a saw'; scaled to the learned vectors' mean norm, 0.94
    (learned positions: 0.82). Recomputed from HF's embedding tables with LayerNorm written
    out (PE in float64 here; the engine's PE is float32, hence atol 1e-6)."""
    ids, segs, _ = model.tokenize(SAW)
    sc = P.sinusoid_scaling(model, ids, segs)
    emb = hf_model.embeddings
    table = lambda m: m.weight.detach().double().numpy()  # noqa: E731
    learned = table(emb.position_embeddings)
    word = table(emb.word_embeddings)[ids] + table(emb.token_type_embeddings)[segs]
    g, b, eps = (emb.LayerNorm.weight.detach().double().numpy(),
                 emb.LayerNorm.bias.detach().double().numpy(), emb.LayerNorm.eps)

    def ln(x):
        return (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + eps) * g + b

    def kept(e):
        a, z = ln(word + e), ln(word)
        return (a * z).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(z, axis=1)

    n, d = len(ids), learned.shape[1]
    pe = np.zeros((n, d))
    p, i2 = np.arange(n)[:, None], np.arange(0, d, 2)[None, :]
    pe[:, 0::2], pe[:, 1::2] = np.sin(p / 10000 ** (i2 / d)), np.cos(p / 10000 ** (i2 / d))
    c = np.linalg.norm(learned, axis=1).mean() / np.sqrt(d / 2)
    assert sc["scale"] == pytest.approx(c, rel=1e-12)
    np.testing.assert_allclose(sc["word_norm"], np.linalg.norm(word, axis=1), rtol=1e-12)
    np.testing.assert_allclose(sc["kept_raw"], kept(pe), atol=1e-6)
    np.testing.assert_allclose(sc["kept_scaled"], kept(c * pe), atol=1e-6)
    np.testing.assert_allclose(sc["kept_learned"], kept(learned[:n]), atol=1e-10)
    assert sc["raw_norm"] == pytest.approx(13.856, abs=1e-3)
    assert sc["kept_raw"].mean() == pytest.approx(0.093, abs=1e-3)
    assert sc["kept_scaled"].mean() == pytest.approx(0.943, abs=1e-3)
    assert sc["kept_learned"].mean() == pytest.approx(0.821, abs=1e-3)


# ------------------------------------------------------------------ rotary positions (RoPE)
def test_rotated_pair_is_a_plane_rotation_by_place_times_theta():
    q = np.array([1.0, 0.25])
    places = np.array([0, 1, 2, 3, 7])
    got = P.rotated_pair(q, places)
    for m, v in zip(places, got, strict=True):
        a = m * P.TOY_THETA  # the rotation matrix written out
        ref = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]]) @ q
        np.testing.assert_allclose(v, ref, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), np.linalg.norm(q), atol=1e-6)


def test_rotary_scores_follow_the_distance_formula():
    """S[m, p] = sum_i (q_a k_a + q_b k_b) cos((m - p) θ_i) + (q_a k_b - q_b k_a) sin((m - p) θ_i)
    for each pair (a, b) = (i, i + d/2), written out in float64; the angles' float32 rounding
    (the engine's, as transformers') is the only difference."""
    from attnviz.engine.rope import frequencies

    d, n = 16, 32
    q, k = P.toy_query_key(d, seed=3)
    inv = frequencies(d, 10000.0)
    s = P.rotary_scores(q, k, n, inv)
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)  # float64, written out
    h = d // 2
    qa, qb, ka, kb = q[:h], q[h:], k[:h], k[h:]
    m, p = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    ang = (m - p)[..., None] * theta  # [n, n, d/2]
    ref = ((qa * ka + qb * kb) * np.cos(ang) + (qa * kb - qb * ka) * np.sin(ang)).sum(-1)
    # float32 angles of places below n: each off by at most ~n ulps of 1, times |q| |k|
    tol = 2 * n * 2.0**-24 * np.linalg.norm(q) * np.linalg.norm(k)
    assert np.abs(s - ref).max() < tol
    dist, means, spread = P.by_distance(s)
    assert dist.tolist() == list(range(-(n - 1), n))
    for j, dd in enumerate(dist):  # each diagonal against the formula at its distance
        assert means[j] == pytest.approx(ref[max(dd, 0), max(-dd, 0)], abs=tol)
    assert spread < 2 * tol  # constant along each diagonal, to float32 rounding
    assert np.ptp(s) > 1.0  # and not constant overall: the distance matters
    assert spread == pytest.approx(max(np.ptp(np.diagonal(s, o)) for o in range(-n + 1, n)))


def test_rope_spectrum_from_the_base():
    from attnviz.engine.rope import frequencies

    spec = P.rope_spectrum(frequencies(64, 100000.0))
    i = np.arange(32)
    np.testing.assert_allclose(spec["theta"], 100000.0 ** (-2 * i / 64), rtol=1e-6)
    np.testing.assert_allclose(spec["wavelength"], 2 * np.pi / spec["theta"], rtol=1e-12)
    assert spec["wavelength"][0] == pytest.approx(2 * np.pi, rel=1e-6)


class _Twins:
    def __init__(self, hidden):
        self.hidden_states = hidden


def test_causal_twins_measures_cosines_and_the_difference():
    rng = np.random.default_rng(0)
    with_rope, without = rng.normal(size=(4, 5, 8)), rng.normal(size=(4, 5, 8))
    without[0, 3] = without[0, 1]  # the same input vector
    tw = P.causal_twins(_Twins(with_rope), _Twins(without), 1, 3)
    ref = F.cosine_similarity(torch.from_numpy(without[:, 1]), torch.from_numpy(without[:, 3]),
                              dim=-1).numpy()
    np.testing.assert_allclose(tw["without"], ref, atol=1e-12)
    assert tw["without"][0] == pytest.approx(1.0)
    assert tw["without_max_diff"] == pytest.approx(np.abs(without[1:, 1] - without[1:, 3]).max())
