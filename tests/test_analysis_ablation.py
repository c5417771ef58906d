"""analysis.ablation: every batched map against one intervened trace per entry (engine traces
that tests/test_engine_intervene.py checks against hooks on Hugging Face's eager modules), the
pair measure against analysis.attribution's own similarity, one head's weight differences
against HF's eager attentions with a hook, and importance beside Clark et al.'s statistics
against the formulas on HF's attentions and scipy's Spearman correlation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnviz.analysis import ablation
from attnviz.analysis.attribution import _inputs, sentence_embedding
from attnviz.engine.request import Ablation, Patch, TraceRequest

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


def test_the_command_line_ranks_heads_as_the_analysis(model, saw_map, tmp_path, capsys):
    """`attnviz ablate` (its main, in this process; the shell's path is test_cli's)."""
    import json

    from attnviz.cli import main

    assert main(["ablate", "--text", "I saw a saw", "--top", "3", "--json", "--head", "2,7",
                 "--out", str(tmp_path / "a.npz")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert [(h["layer"], h["head"]) for h in got["heads"]] == saw_map.ranking()[:3]
    assert abs(got["base"] - saw_map.base) < TOL
    np.testing.assert_allclose(np.load(tmp_path / "a.npz")["effect"], saw_map.effect, atol=TOL)
    rho = ablation.beside_stats(model, SAW, saw_map).rho
    assert got["spearman"]["punct"] is None
    assert all(abs(got["spearman"][k] - rho[k]) < 1e-6 for k in rho if k != "punct")
    nb = ablation.one_head(model, SAW, 2, 7)
    np.testing.assert_allclose(got["one_head"]["token_cosine"], nb.token_cosine, atol=TOL)
    np.testing.assert_allclose(np.load(tmp_path / "a.npz")["one_head_weights_diff"],
                               nb.weights_diff, atol=TOL)
    assert main(["ablate", "--text", "I saw a dog"]) == 2
    err = capsys.readouterr().err
    assert "occurs twice" in err and "Traceback" not in err


def hf_run(hf_model, ids, layer=None, head=None, head_dim=None):
    """HF's eager BertModel, head (layer, head) zeroed by a pre-hook on the output projection."""
    handle = None
    if layer is not None:
        def pre(module, args):
            x = args[0].clone()
            x[..., head * head_dim:(head + 1) * head_dim] = 0.0
            return (x, *args[1:])
        handle = hf_model.encoder.layer[layer].attention.output.dense.register_forward_pre_hook(
            pre)
    try:
        with torch.no_grad():
            return hf_model(torch.tensor([ids]), output_attentions=True)
    finally:
        if handle is not None:
            handle.remove()


def test_one_head_weight_differences_and_token_cosines_match_hf(model, hf_model):
    layer, head = 2, 7
    nb = ablation.one_head(model, SAW, layer, head)
    ids = model.trace(SAW).token_ids.tolist()
    plain = hf_run(hf_model, ids)
    cut = hf_run(hf_model, ids, layer, head, model.head_dim)
    want = (torch.stack(cut.attentions)[:, 0].double()
            - torch.stack(plain.attentions)[:, 0].double()).numpy()  # [layers, heads, n, n]
    np.testing.assert_allclose(nb.weights_diff, want, atol=TOL, rtol=0)
    assert (nb.weights_diff[:layer + 1] == 0).all()  # nothing before the head's output moves
    assert np.abs(nb.weights_diff[layer + 1:]).max() > 1e-3
    np.testing.assert_allclose(nb.weights_diff.sum(-1), 0.0, atol=1e-5)  # rows sum to 1 twice
    np.testing.assert_allclose(nb.weights_change, np.abs(want).mean(axis=(-1, -2)), atol=TOL)
    a, b = cut.last_hidden_state[0].double(), plain.last_hidden_state[0].double()
    np.testing.assert_allclose(nb.token_cosine, torch.nn.functional.cosine_similarity(
        a, b, dim=-1).numpy(), atol=TOL, rtol=0)
    assert nb.token_cosine.min() < 1 - 1e-4
    later = nb.later()
    assert [x for x, _m in later] == [3, 4, 5]
    np.testing.assert_allclose(later[0][1], want[3].mean(0), atol=TOL)
    np.testing.assert_allclose(nb.later(4)[2][1], want[5, 4], atol=TOL)
    assert ablation.one_head(model, SAW, 5, 0).later() == []  # the last layer: none later
    mean = ablation.one_head(model, SAW, layer, head, "mean")
    assert np.abs(mean.weights_diff - nb.weights_diff).max() > 1e-4


@pytest.mark.filterwarnings("ignore:An input array is constant")
def test_importance_beside_clark_statistics(model, hf_model, saw_map):
    from scipy.stats import spearmanr

    b = ablation.beside_stats(model, SAW, saw_map)
    np.testing.assert_array_equal(b.size, np.abs(saw_map.effect))
    ids = model.trace(SAW).token_ids.tolist()
    w = torch.stack(hf_run(hf_model, ids).attentions)[:, 0].double().numpy()
    n = w.shape[-1]  # [CLS] i saw a saw [SEP]: the formulas of analysis.head_stats' docstring
    ar = np.arange(n - 1)
    want = {"cls": w[..., 0].mean(-1), "sep": w[..., n - 1].mean(-1),
            "self": np.einsum("lhii->lh", w) / n,
            "prev": w[..., ar + 1, ar].sum(-1) / (n - 1),
            "next": w[..., ar, ar + 1].sum(-1) / (n - 1),
            "punct": np.zeros(w.shape[:2]),
            "entropy": -(w * np.log(np.where(w > 0, w, 1.0))).sum(-1).mean(-1)}
    assert set(b.stats) == set(want)
    for k, v in want.items():
        np.testing.assert_allclose(b.stats[k], v, atol=TOL, rtol=0, err_msg=k)
    for k, v in b.stats.items():
        ref = spearmanr(b.size.ravel(), v.ravel()).statistic
        if np.isnan(ref):
            assert np.isnan(b.rho[k]), k  # a constant statistic ("punct" here): no ranking
        else:
            assert abs(b.rho[k] - ref) < 1e-9, k
    assert not np.isnan(b.rho["prev"]) and abs(b.rho["prev"]) > 1e-3
    order = sorted(range(b.size.size), key=lambda k: -b.size.ravel()[k])
    for k in ("prev", "cls"):
        head, rank = b.top(k)
        flat = int(np.argmax(want[k]))
        assert head == divmod(flat, model.n_heads) and rank == order.index(flat) + 1


@pytest.mark.parametrize("part", ["decoder", "cross"])
def test_one_bart_decoder_head_matches_hf_hooks(tmp_path, part, model):
    """BART: a decoder self-attention or cross-attention head removed; the decoder tokens'
    cosines and the later decoder layers' weights (of that kind) against HF's eager BartModel
    with a pre-hook on that attention's output projection."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint
    from tests.test_engine_intervene import bart_inputs, hf, hf_bart_heads

    folder = save_random_checkpoint("bart", tmp_path / "bart", positions=32, seed=4, layers=3)
    bart = attnviz.load_model(folder, device="cpu")
    ref = hf(folder, "bart")
    req = TraceRequest("I saw a saw today")
    nb = ablation.one_head(bart, req, 0, 1, part=part)
    src, dec = bart_inputs(bart.trace(req).token_ids.tolist(), ref.config)
    with torch.no_grad():
        plain = ref(src, decoder_input_ids=dec, output_attentions=True)
    handles = hf_bart_heads(ref, {(part, 0): [1]}, bart.head_dim)
    try:
        with torch.no_grad():
            cut = ref(src, decoder_input_ids=dec, output_attentions=True)
    finally:
        for h in handles:
            h.remove()
    name = "decoder_attentions" if part == "decoder" else "cross_attentions"
    want = (torch.stack(getattr(cut, name))[:, 0].double()
            - torch.stack(getattr(plain, name))[:, 0].double()).numpy()
    np.testing.assert_allclose(nb.weights_diff, want, atol=TOL, rtol=0)
    assert np.abs(nb.weights_diff[1:]).max() > 1e-4 and (nb.weights_diff[0] == 0).all()
    a, b = cut.last_hidden_state[0].double(), plain.last_hidden_state[0].double()
    np.testing.assert_allclose(nb.token_cosine, torch.nn.functional.cosine_similarity(
        a, b, dim=-1).numpy(), atol=TOL, rtol=0)
    t = bart.trace(req)
    assert nb.tokens == t.decoder_tokens
    assert nb.key_tokens == (t.tokens if part == "cross" else None)
    with pytest.raises(ValueError, match="has no decoder"):
        ablation.one_head(model, req, 0, 0, part="cross")


def test_one_head_pair_similarity_matches_hf(model, hf_model):
    a, b = "A man is playing a guitar.", "Someone plays music."
    nb = ablation.one_head(model, TraceRequest(a, b), 1, 3)
    assert ablation.one_head(model, SAW, 1, 3).pair_similarity is None

    def s_ab(*hook):
        ea, eb = (hf_run(hf_model, model.tokenize(x)[0], *hook).last_hidden_state[0].double()
                  .mean(0) for x in (a, b))
        return float(torch.nn.functional.cosine_similarity(ea, eb, dim=0))
    plain, cut = s_ab(), s_ab(1, 3, model.head_dim)
    assert abs(nb.pair_similarity[0] - plain) < TOL and abs(nb.pair_similarity[1] - cut) < TOL
    assert abs(cut - plain) > 1e-5


@pytest.mark.slow  # ~6 s: 24 patched traces and the command line (the engine's patch: fast)
def test_bart_decoder_patching_matches_hf_hooks(tmp_path, model):
    """Each decoder self-attention and cross-attention head patched alone from the clean run
    into the corrupted one: every entry of both maps against the engine's patched trace, and
    two of them against HF's eager BartModel with the clean head's output put in by a pre-hook
    (the restored fraction computed from HF's own decoder states)."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint
    from tests.test_engine_intervene import bart_inputs, hf, hf_bart_heads

    folder = save_random_checkpoint("bart", tmp_path / "bart", positions=32, seed=4, layers=3)
    bart = attnviz.load_model(folder, device="cpu")
    ref = hf(folder, "bart")
    clean, bad = TraceRequest("I saw a saw today"), TraceRequest("I saw a dog today")
    p = ablation.decoder_patching(bart, clean, bad)
    c = bart.trace(clean)
    assert p.tokens == c.decoder_tokens and p.decoder.shape == p.cross.shape == (3, bart.n_heads)
    i, j = p.pair
    assert c.decoder_tokens[i] == c.decoder_tokens[j] == "saw"
    restored = lambda h: (cos(h[-1, i], h[-1, j]) - p.corrupted) / (p.clean - p.corrupted)  # noqa: E731
    for part, field in (("decoder", "decoder_heads"), ("cross", "cross_heads")):
        for layer in range(3):
            for head in range(bart.n_heads):
                t = bart.trace(bad.with_options(ablate=Patch(clean, **{field: ((layer, head),)})))
                assert abs(getattr(p, part)[layer, head] - restored(t.decoder_hidden_states)) < TOL
    assert np.abs(p.decoder).max() > 1e-3 and np.abs(p.cross).max() > 1e-3
    ids, dec = bart_inputs(bart.trace(bad).token_ids.tolist(), ref.config)
    for part, field in (("decoder", "decoder_outputs"), ("cross", "cross_outputs")):
        fill = {(part, 1, 2): torch.as_tensor(getattr(c, field)[1, 2])}
        handles = hf_bart_heads(ref, {(part, 1): [2]}, bart.head_dim, fill)
        try:
            with torch.no_grad():
                out = ref(ids, decoder_input_ids=dec, output_hidden_states=True)
        finally:
            for h in handles:
                h.remove()
        h = torch.stack(out.decoder_hidden_states)[:, 0].double().numpy()
        assert abs(getattr(p, part)[1, 2] - restored(h)) < TOL
    with pytest.raises(ValueError, match="same length"):
        ablation.decoder_patching(bart, clean, TraceRequest("I saw a big dog today"))
    # both decoder entry points check the measured pair alike (ablation._decoder_pair)
    m = len(p.tokens)
    for tokens in ((2, 2), (0, m)):
        for entry in (lambda t=tokens: ablation.decoder_patching(bart, clean, bad, tokens=t),
                      lambda t=tokens: ablation.decoder_importance(bart, clean, "cross", tokens=t)):
            with pytest.raises(ValueError, match=f"two different decoder token positions from "
                                                 f"0 to {m - 1}"):
                entry()
    import json
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "attnviz", "ablate", "--model", str(folder),
                          "--text", clean.text, "--patch", bad.text, "--top", "3", "--json"],
                         capture_output=True, text=True, timeout=120, check=True)
    got = json.loads(out.stdout)["patch"]
    for part in ("decoder", "cross"):
        values = getattr(p, part)
        want = np.argsort(-values.ravel(), kind="stable")[:3]
        assert [(h["layer"], h["head"]) for h in got[f"{part}_heads"]] == [
            divmod(int(k), bart.n_heads) for k in want]
        assert abs(got[f"{part}_heads"][0]["restored"] - values.ravel()[want[0]]) < TOL
    with pytest.raises(ValueError, match="has no decoder"):
        ablation.decoder_patching(model, SAW, TraceRequest("I saw a dog"))


OWN_REFERENCE = ("A dog runs in the park.", "He sings a song.")


def test_mean_ablation_maps_use_the_reference_given(model):
    """head_importance(mode="mean", reference=R) and the pruning curve made from it remove each
    head by its mean over R, as Ablation(mode="mean", reference=R) does: every entry checked
    against one ablated trace, and R's map differs from the default reference's."""
    imp = ablation.head_importance(model, SAW, "repeat", "mean", reference=OWN_REFERENCE)
    assert imp.reference == OWN_REFERENCE
    for layer, head in ((0, 3), (4, 9)):
        h = model.trace(SAW.with_options(ablate=Ablation(
            heads=((layer, head),), mode="mean", reference=OWN_REFERENCE))).hidden_states[-1]
        assert abs(imp.values[layer, head] - cos(h[2], h[4])) < TOL
    default = ablation.head_importance(model, SAW, "repeat", "mean")
    assert np.abs(imp.values - default.values).max() > 1e-4
    heads, curve = ablation.pruning_curve(model, SAW, imp)
    h = model.trace(SAW.with_options(ablate=Ablation(
        heads=tuple(heads[:7]), mode="mean", reference=OWN_REFERENCE))).hidden_states[-1]
    assert abs(curve[7] - cos(h[2], h[4])) < TOL
    with pytest.raises(ValueError, match="reference sentence"):
        ablation.head_importance(model, SAW, "repeat", "mean", reference=())


def test_a_statistic_the_same_for_every_head_names_no_head(model, saw_map):
    """"I saw a saw" has no punctuation: every head puts 0 on it, so no head has the most of
    it (an argmax over zeros would name layer 0, head 0)."""
    b = ablation.beside_stats(model, SAW, saw_map)
    assert (b.stats["punct"] == 0).all() and b.top("punct") is None
    head, rank = b.top("prev")
    assert head == divmod(int(np.argmax(b.stats["prev"])), model.n_heads) and rank >= 1
    dotted = ablation.beside_stats(model, TraceRequest("I saw a saw."), ablation.head_importance(
        model, TraceRequest("I saw a saw."), "change"))
    assert dotted.top("punct") is not None


def test_pruning_summary_reads_the_curve(model, saw_map):
    """The fewest last removals that carry two thirds of the way to the curve's end, and the
    range before them, recounted; on "I saw a saw" the curve is flat for 70 heads (0.626 to
    0.680) and two layer-0 heads take the two saws' cosine to 0.991."""
    heads, curve = ablation.pruning_curve(model, SAW, saw_map)
    s = ablation.pruning_summary(heads, curve)
    n = len(curve) - 1
    far = max(abs(curve[-1] - c) for c in curve)
    r = min(r for r in range(1, n + 1) if abs(curve[-1] - curve[n - r]) >= 2 / 3 * far)
    assert (s.flat, s.last) == (n - r, heads[n - r:])
    assert s.low == min(curve[:n - r + 1]) and s.high == max(curve[:n - r + 1])
    assert (s.start, s.end) == (curve[n - r], curve[-1])
    assert s.flat == 70 and [layer for layer, _h in s.last] == [0, 0]
    assert (round(s.low, 3), round(s.high, 3), round(s.end, 3)) == (0.626, 0.680, 0.991)
    toy = ablation.pruning_summary([(0, 0), (0, 1), (1, 0)], np.array([0.5, 0.52, 0.49, 0.9]))
    assert (toy.flat, toy.last, toy.low, toy.high, toy.start) == (2, [(1, 0)], 0.49, 0.52, 0.49)


LONG = ("The old carpenter picked up his saw and looked at the board for a long time before he "
        "made the first cut, because he knew that a saw that is not sharp will tear the wood "
        "instead of cutting it cleanly, and that the apprentice who had used the saw last week "
        "had left it out in the rain overnight. He oiled the blade, checked every tooth, and "
        "only then did he begin to work, slowly and carefully, while the morning light came in "
        "through the dusty window of the workshop and the birds sang outside in the tall trees "
        "that stood along the river. When the work was done he swept the floor, hung the saw "
        "back on its nail above the bench, and sat down by the door to eat the bread and cheese "
        "that his wife had wrapped for him in a cloth, watching the boats go down the "
        "river.")


def test_one_head_is_shown_past_the_maps_limit_and_maps_take_the_first_tokens(model):
    """A paragraph past MAX_TOKENS: one head removed still works (two traces), its numbers the
    two traces' own; the maps' request is the text's first MAX_TOKENS tokens."""
    req = TraceRequest(LONG)
    t = model.trace(req)
    assert t.n_tokens > ablation.MAX_TOKENS
    nb = ablation.one_head(model, req, 2, 5)
    cut = model.trace(req.with_options(ablate=Ablation(heads=((2, 5),))))
    a, b = cut.hidden_states[-1].astype(np.float64), t.hidden_states[-1].astype(np.float64)
    want = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    np.testing.assert_allclose(nb.token_cosine, want, atol=1e-9)
    np.testing.assert_array_equal(nb.weights_diff, cut.weights - t.weights)
    first = ablation.first_tokens(t)
    short = model.trace(first)
    assert short.n_tokens == ablation.MAX_TOKENS
    assert short.token_ids.tolist() == t.token_ids[:ablation.MAX_TOKENS].tolist()
    imp = ablation.head_importance(model, first, "change")
    assert imp.values.shape == (model.n_layers, model.n_heads)
    with pytest.raises(ValueError, match="up to 128 tokens"):
        ablation.head_importance(model, req, "change")


@pytest.mark.parametrize("part", ["decoder", "cross"])
def test_bart_decoder_heads_get_the_map_layer_removal_and_pruning_curve(tmp_path, part, model):
    """BART's decoder self-attention and cross-attention heads have what the encoder's have:
    the importance map (zero and mean with the reference given), each layer's whole attention
    removed and the pruning curve, every entry of them against HF's eager BartModel with hooks
    on that attention's output projection (zeros, or the mean put in; a layer's output Z
    replaced by zeros)."""
    import attnviz
    from attnviz.engine.intervene import mean_outputs
    from attnviz.engine.random_models import save_random_checkpoint
    from tests.test_engine_intervene import bart_inputs, bart_proj, hf, hf_bart_heads

    folder = save_random_checkpoint("bart", tmp_path / "bart", positions=32, seed=4, layers=3)
    bart = attnviz.load_model(folder, device="cpu")
    ref = hf(folder, "bart")
    req = TraceRequest("I saw a saw today")
    t = bart.trace(req)
    ids, dec = bart_inputs(t.token_ids.tolist(), ref.config)
    imp = ablation.decoder_importance(bart, req, part)
    i, j = imp.pair
    assert t.decoder_tokens[i] == t.decoder_tokens[j] == "saw"
    assert imp.values.shape == (bart.n_decoder_layers, bart.n_heads)

    def hf_m(handles) -> float:
        try:
            with torch.no_grad():
                h = ref(ids, decoder_input_ids=dec).last_hidden_state[0].double()
        finally:
            for x in handles:
                x.remove()
        return cos(h[i].numpy(), h[j].numpy())

    assert abs(imp.base - hf_m([])) < TOL
    for layer, head in ((0, 0), (1, 2), (2, 3)):
        want = hf_m(hf_bart_heads(ref, {(part, layer): [head]}, bart.head_dim))
        assert abs(imp.values[layer, head] - want) < TOL
    assert np.abs(imp.effect).max() > 1e-4
    mean = ablation.decoder_importance(bart, req, part, "mean", reference=OWN_REFERENCE)
    field = "decoder_outputs" if part == "decoder" else "cross_outputs"
    means = mean_outputs(bart, OWN_REFERENCE, req, field)[:, :, 0]  # [L, H, d]
    fill = {(part, 1, 2): means[1, 2]}
    want = hf_m(hf_bart_heads(ref, {(part, 1): [2]}, bart.head_dim, fill))
    assert abs(mean.values[1, 2] - want) < TOL
    base, layers = ablation.decoder_layer_removal(bart, req, part)
    assert abs(base - imp.base) < TOL and layers.shape == (bart.n_decoder_layers,)
    for layer in range(bart.n_decoder_layers):
        hook = bart_proj(ref, part, layer).register_forward_hook(
            lambda m, a, out: torch.zeros_like(out))
        assert abs(layers[layer] - hf_m([hook])) < TOL
    heads, curve = ablation.decoder_pruning_curve(bart, req, imp, part)
    assert curve.shape == (bart.n_decoder_layers * bart.n_heads + 1,)
    assert abs(curve[0] - imp.base) < TOL and abs(curve[1] - imp.values[heads[0]]) < TOL
    by_layer: dict = {}
    for layer, head in heads[:5]:
        by_layer.setdefault((part, layer), []).append(head)
    assert abs(curve[5] - hf_m(hf_bart_heads(ref, by_layer, bart.head_dim))) < TOL
    with pytest.raises(ValueError, match="has no decoder"):
        ablation.decoder_importance(model, req, part)
