"""analysis.ablation: every batched map against one intervened trace per entry (engine traces
that tests/test_engine_intervene.py checks against hooks on Hugging Face's eager modules), and
the pair measure against analysis.attribution's own similarity."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.analysis import ablation
from attnviz.analysis.attribution import _inputs, sentence_embedding
from attnviz.engine.intervene import Ablation, Patch
from attnviz.engine.request import TraceRequest

TOL = 1e-5
SAW = TraceRequest("I saw a saw")


def cos(a, b):
    return float(np.dot(a, b) / np.linalg.norm(a) / np.linalg.norm(b))


@pytest.fixture(scope="module")
def saw_map(model):
    return ablation.head_importance(model, SAW, "repeat", "zero")


def test_head_importance_matches_one_ablated_trace_per_head(model, saw_map):
    i, j = saw_map.pair
    assert saw_map.tokens[i] == saw_map.tokens[j] == "saw" and (i, j) == (2, 4)
    assert saw_map.values.shape == (model.n_layers, model.n_heads)
    for layer, head in ((0, 0), (2, 7), (5, 11)):
        h = model.trace(SAW.with_options(ablate=Ablation(heads=((layer, head),)))).hidden_states
        assert abs(saw_map.values[layer, head] - cos(h[-1, i], h[-1, j])) < TOL
    plain = model.trace(SAW).hidden_states[-1]
    assert abs(saw_map.base - cos(plain[i], plain[j])) < TOL
    assert np.abs(saw_map.effect).max() > 1e-3


def test_the_ranking_is_stable_and_documented(model, saw_map):
    again = ablation.head_importance(model, SAW, "repeat", "zero")
    assert np.array_equal(again.values, saw_map.values)
    ranked = saw_map.ranking()
    assert len(ranked) == model.n_layers * model.n_heads
    e = saw_map.effect
    assert all(e[a] >= e[b] for a, b in zip(ranked, ranked[1:], strict=False))


def test_mean_ablation_and_change_measure(model):
    imp = ablation.head_importance(model, SAW, "change", "mean")
    assert imp.base == pytest.approx(0.0, abs=1e-6)
    t = model.trace(SAW.with_options(ablate=Ablation(heads=((1, 4),), mode="mean")))
    plain = model.trace(SAW).hidden_states[-1]
    want = np.mean([1 - cos(a, b) for a, b in zip(t.hidden_states[-1], plain, strict=True)])
    assert abs(imp.values[1, 4] - want) < TOL


def test_pair_measure_is_attributions_similarity(model):
    a, b = "A man is playing a guitar.", "Someone plays music."
    imp = ablation.head_importance(model, TraceRequest(a, b), "pair")
    with torch.no_grad():
        ea = sentence_embedding(model, _inputs(model, a)[0])
        eb = sentence_embedding(model, _inputs(model, b)[0])
    assert abs(imp.base - float(torch.nn.functional.cosine_similarity(ea, eb, dim=-1))) < TOL
    ha = model.trace(a, ablate=Ablation(heads=((3, 2),))).hidden_states[-1].mean(0)
    hb = model.trace(b, ablate=Ablation(heads=((3, 2),))).hidden_states[-1].mean(0)
    assert abs(imp.values[3, 2] - cos(ha, hb)) < TOL


def test_layer_removal_and_pruning_curve(model, saw_map):
    base, values = ablation.layer_removal(model, SAW)
    h = model.trace(SAW.with_options(ablate=Ablation(layers=(2,)))).hidden_states[-1]
    assert abs(values[2] - cos(h[2], h[4])) < TOL and abs(base - saw_map.base) < TOL
    heads, curve = ablation.pruning_curve(model, SAW, saw_map)
    assert curve.shape == (73,) and abs(curve[0] - saw_map.base) < TOL
    assert abs(curve[1] - saw_map.values[heads[0]]) < TOL
    h = model.trace(SAW.with_options(ablate=Ablation(heads=tuple(heads[:5])))).hidden_states[-1]
    assert abs(curve[5] - cos(h[2], h[4])) < TOL


def test_patching_restores_the_difference(model):
    p = ablation.patching(model, SAW, TraceRequest("I saw a dog"))
    assert p.heads.shape == (6, 12) and p.residual.shape == (6, 6)
    # layer 0's input at "saw"/"dog" is all that differs: patching it restores everything
    assert abs(p.residual[0, 4] - 1.0) < TOL
    assert np.abs(np.delete(p.residual[0], 4)).max() < TOL
    t = model.trace("I saw a dog", ablate=Patch("I saw a saw", heads=((4, 3),)))
    m = cos(t.hidden_states[-1, 2], t.hidden_states[-1, 4])
    assert abs(p.heads[4, 3] - (m - p.corrupted) / (p.clean - p.corrupted)) < TOL
    t = model.trace("I saw a dog", ablate=Patch("I saw a saw", residual=((3, 1),)))
    m = cos(t.hidden_states[-1, 2], t.hidden_states[-1, 4])
    assert abs(p.residual[3, 1] - (m - p.corrupted) / (p.clean - p.corrupted)) < TOL
    with pytest.raises(ValueError, match="same length"):
        ablation.patching(model, SAW, TraceRequest("I saw a big dog"))
    long = "I saw a saw " + "and then more words " * 20
    p = ablation.patching(model, TraceRequest(long), TraceRequest(long.replace("a saw", "a dog")))
    assert p.residual is None and p.heads.shape == (6, 12)  # past RESIDUAL_MAX_TOKENS


def test_positions_off_and_plain_messages(model):
    pair, on, off = ablation.saw_cosines(model, SAW)
    assert pair == (2, 4) and on.shape == off.shape == (7,)
    np.testing.assert_allclose(off, 1.0, atol=1e-6)
    assert on[-1] < 0.9
    with pytest.raises(ValueError, match="occurs twice"):
        ablation.head_importance(model, TraceRequest("I saw a dog"))
    with pytest.raises(ValueError, match="up to 128 tokens"):
        ablation.head_importance(model, TraceRequest("word " * 200), "change")
    with pytest.raises(ValueError, match="second sentence"):
        ablation.head_importance(model, SAW, "pair")
    seen = []
    ablation.head_importance(model, SAW, "change", progress=lambda d, t: seen.append((d, t)))
    assert seen[-1] == (6, 6)


def test_the_command_line_ranks_heads_as_the_analysis(model, saw_map, tmp_path):
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "attnviz", "ablate", "--text", "I saw a saw",
                          "--top", "3", "--json", "--out", str(tmp_path / "a.npz")],
                         capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout)
    assert [(h["layer"], h["head"]) for h in got["heads"]] == saw_map.ranking()[:3]
    assert abs(got["base"] - saw_map.base) < TOL
    np.testing.assert_allclose(np.load(tmp_path / "a.npz")["effect"], saw_map.effect, atol=TOL)
    bad = subprocess.run([sys.executable, "-m", "attnviz", "ablate", "--text", "I saw a dog"],
                         capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "occurs twice" in bad.stderr and "Traceback" not in bad.stderr
