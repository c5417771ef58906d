"""Corpus-level heads: classical MDS against its formula on known points, JS divergence against
scipy's jensenshannon, the corpus means and spreads against a loop over sentences, behaviours."""

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from attnviz.analysis.corpus_heads import (
    BEHAVIOURS,
    behaviours,
    classical_mds,
    corpus_heads,
    explained_share,
    head_js,
    js_divergence_rows,
    sample_text,
    split_sentences,
)
from attnviz.analysis.head_stats import STATS, head_stats


def test_mds_recovers_a_planar_configuration():
    rng = np.random.default_rng(1)
    pts = rng.normal(size=(9, 2)) * [3.0, 1.0]
    d = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    coords, values = classical_mds(d)
    got = np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1))
    np.testing.assert_allclose(got, d, atol=1e-10)
    # B = -1/2 J D^2 J is the Gram matrix of the centred points: its eigenvalues are theirs.
    centred = pts - pts.mean(0)
    np.testing.assert_allclose(values[:2], np.sort(np.linalg.eigvalsh(centred.T @ centred))[::-1],
                               atol=1e-9)
    np.testing.assert_allclose(values[2:], 0.0, atol=1e-9)
    assert explained_share(values) == pytest.approx(1.0)


def test_mds_of_a_non_planar_configuration_reports_its_share():
    d = np.ones((4, 4)) - np.eye(4)  # a regular tetrahedron: three equal eigenvalues
    _, values = classical_mds(d)
    np.testing.assert_allclose(values[:3], 0.5, atol=1e-12)  # B = -1/2 J (11^T - I) J = J/2
    assert explained_share(values) == pytest.approx(2 / 3)


def test_js_against_scipy(model):
    rng = np.random.default_rng(0)
    a, b = rng.dirichlet(np.ones(7), size=5), rng.dirichlet(np.ones(7), size=5)
    a[0, 2] = 0.0
    a[0] /= a[0].sum()
    np.testing.assert_allclose(js_divergence_rows(a, b),
                               [jensenshannon(p, q) ** 2 for p, q in zip(a, b, strict=True)],
                               atol=1e-12)
    t = model.trace("I saw a saw")
    js = head_js(t.weights)
    flat = t.weights.reshape(-1, t.n_tokens, t.n_tokens).astype(np.float64)
    for p, q in [(0, 5), (13, 70), (40, 41)]:
        expected = np.mean([jensenshannon(flat[p, i], flat[q, i]) ** 2
                            for i in range(t.n_tokens)])
        # scipy divides each row by its sum; float32 rows sum to 1 within ~1e-7
        assert js[p, q] == pytest.approx(expected, abs=1e-7)
        assert js[q, p] == js[p, q]
    assert (np.diag(js) == 0).all() and (js <= np.log(2) + 1e-12).all()


def test_corpus_means_spread_and_distance(model):
    sentences = ["I saw a saw.", "The dog barked at the mailman, twice.", "It rained."]
    c = corpus_heads(model, sentences, conventions="clark")
    per = [head_stats(model.trace(s).weights, model.trace(s).tokens, "clark") for s in sentences]
    for k in STATS:
        xs = np.stack([p[k] for p in per])
        np.testing.assert_allclose(c.mean[k], xs.mean(0), atol=1e-12)
        np.testing.assert_allclose(c.spread[k], np.sqrt(((xs - xs.mean(0)) ** 2).mean(0)),
                                   atol=1e-12)
    js = np.mean([head_js(model.trace(s).weights) for s in sentences], axis=0)
    np.testing.assert_allclose(c.distance, np.sqrt(js), atol=1e-12)
    assert c.coords.shape == (72, 2) and c.behaviour.shape == (6, 12)
    assert set(np.unique(c.behaviour)) <= set(BEHAVIOURS)
    assert c.sentences == sentences and c.skipped == 0


def test_behaviour_rule():
    z = np.zeros((1, 4))
    means = {"cls": z + [0.7, 0.1, 0.0, 0.0], "sep": z + [0.2, 0.6, 0.0, 0.0],
             "prev": z + [0.0, 0.0, 0.4, 0.0], "next": z}
    rel = np.array([[0.1, 0.1, 0.9, 0.3]])
    assert behaviours(means, rel).tolist() == [["[CLS]", "[SEP]", "broad", "mixed"]]


def test_sentences_of_the_sample():
    assert split_sentences("One. Two!  Three?\nFour \"five.\" Six") == [
        "One.", "Two!", "Three?", "Four \"five.\"", "Six"]
    assert split_sentences("") == [] and len(split_sentences("a. " * 500)) == 200
    assert len(split_sentences(sample_text())) >= 20
