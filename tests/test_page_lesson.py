"""AppTest of the lesson: every step hides its answer until asked, and every number it shows is
recomputed here (accuracies from the taggers' predictions, parameters from sum(numel), the
majority baseline and the distances from the corpus, cosines from the engine)."""

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.analysis import lesson as L
from attnviz.analysis import taggers as T
from attnviz.analysis.common import rounding_tolerance
from attnviz.analysis.corpus import EXAMPLES, FAR_PAIR
from attnviz.ui import lesson as nav
from attnviz.ui.text import literal
from attnviz.views import lesson as view
from tests.apptest import APP, open_page
from tests.lesson_trained import prefill_app_cache, sweeps, trained
from tests.plotly_json import decode, figures, figures_by_key, specs
from tests.test_analysis_lesson import order_free_by_hand
from tests.test_analysis_taggers import recount

N = len(L.STEPS)


@pytest.fixture(scope="module", autouse=True)
def taggers_trained_once():
    prefill_app_cache()


@pytest.fixture(scope="module")
def ref():
    """Held-out accuracies of every tagger, counted in the test from its predictions."""
    tr = trained()
    c = tr.corpus
    out = {k: recount(c, c.test, T.predict(m, c, c.test)) for k, m in tr.models.items()}
    majority = T.majority_baseline(c)["majority"]
    always = [[majority.get(w, "NOUN") if w in c.ambiguous else t
               for w, t in zip(s.words, s.tags, strict=True)] for s in c.test]
    out["majority"] = recount(c, c.test, always)
    return out


@pytest.fixture
def at():
    return open_page("pages/lesson.py", timeout=600)


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def go(at, step: int, reveal: bool = True):
    """Open step (0-based); reveal its answer with the Answer/Next button."""
    at.session_state["lesson_step"] = step + 1
    at.run()
    if reveal and L.STEPS[step].predict:
        at.button(key="lesson_next").click().run()
    assert not at.exception, [e.value for e in at.exception]
    return figures_by_key(at)


def said(at) -> str:
    return "\n".join(m.value for m in at.markdown)


def table_rows(fig) -> dict[str, list[str]]:
    """{row name: its tags}, whichever way the table is turned."""
    cells = fig["data"][0]["cells"]["values"]
    if fig["layout"].get("meta", {}).get("words_as_rows"):
        names = fig["data"][0]["header"]["values"][1:]
        return {unwrap(name): list(cells[k + 1]) for k, name in enumerate(names)}
    return {unwrap(name): [col[r] for col in cells[1:]] for r, name in enumerate(cells[0])}


def unwrap(name: str) -> str:
    """A tagger's name as given, from the table's lines (plotting.lesson.wrap)."""
    return name.replace("<br>", " ")


def tables(at) -> list:
    """The page's tables (st.dataframe), as DataFrames."""
    return [d.value for d in at.dataframe]


def test_every_step_hides_then_reveals(at):
    tr = trained()
    one = {1: "mlp", 2: "window3", 6: "attention", 7: "attention_pos"}
    for step in range(N):
        s = L.STEPS[step]
        hidden = go(at, step, reveal=False)
        if s.predict:
            assert at.button(key="lesson_next").label == "Answer ▶"
            if s.reveal:
                assert L.fill(s.reveal, "saw")[:40] not in said(at)
        if "lesson_fig_tags" in hidden:
            rows = table_rows(hidden["lesson_fig_tags"])
            if step in one:
                assert rows[T.NAMES[one[step]]] == ["?"] * 4
            if step == 0:
                assert rows["gold"] == ["?"] * 4
        shown = go(at, step)
        assert at.session_state["lesson_step"] == step + 1  # revealing stays on the step
        assert at.button(key="lesson_next").label == "Next ▶"
        if s.reveal:
            assert L.fill(s.reveal, "saw")[:40] in said(at)
        if step in one:
            rows = table_rows(shown["lesson_fig_tags"])
            assert rows["gold"] == ["PRON", "VERB", "DET", "NOUN"]
            assert rows[T.NAMES[one[step]]] == T.tag_sentence(
                tr.models[one[step]], tr.corpus, "I saw a saw")[1]
        assert any(f"Step {step + 1} of {N}" in p.proto.text for p in at.get("progress"))
    assert at.button(key="lesson_next").disabled  # the last step, nothing left to reveal


def test_next_reveals_then_moves_and_back_returns(at):
    assert at.session_state["lesson_step"] == 1 and at.button(key="lesson_back").disabled
    at.button(key="lesson_next").click().run()  # reveals step 1's answer
    assert at.session_state["lesson_step"] == 1 and at.session_state["lesson_reveal_task"]
    at.button(key="lesson_next").click().run()
    assert at.session_state["lesson_step"] == 2
    at.button(key="lesson_back").click().run()
    assert at.session_state["lesson_step"] == 1 and not at.exception
    at.slider(key=nav.SLIDER.format(step=1)).set_value(4).run()
    assert at.session_state["lesson_step"] == 4
    assert at.query_params["lesson_step"] == "4"  # the URL follows the step
    assert at.slider(key=nav.SLIDER.format(step=4)).value == 4
    at.button(key="lesson_next").click().run()  # step 4's question: its answer first
    at.button(key="lesson_next").click().run()
    assert at.session_state["lesson_step"] == 5
    assert [s.key for s in at.slider] == [nav.SLIDER.format(step=5)]  # the step's own slider
    assert at.slider[0].value == 5


def test_per_word_step_says_why_it_is_at_or_below_the_baseline(at, ref):
    go(at, 1)
    text = said(at)
    tr = trained()
    base = T.majority_baseline(tr.corpus)
    assert f"learns from {len(tr.corpus.train)} tagged sentences" in text
    assert f"scored on {len(tr.corpus.test)} **held-out**" in text
    assert f"Held out it tags **{pct(ref['mlp']['ambiguous'])}**" in text
    assert f"**majority-tag baseline**, {pct(ref['majority']['ambiguous'])}" in text
    assert f"({pct(base['best_possible'])} with the best tag" in text
    m = tr.models["mlp"]
    picked = {w: T.tag_sentence(m, tr.corpus, w)[1][0] for w in tr.corpus.ambiguous}
    rarer = [w for w in tr.corpus.ambiguous if picked[w] != base["majority"][w]]
    assert f"For {len(rarer)} of {len(tr.corpus.ambiguous)} words" in text
    assert ", ".join(f"*{w}*" for w in rarer) in text
    assert f"scores **{pct(ref['mlp']['double_role'])}**" in text
    shares, three = [], {}
    for w in tr.corpus.ambiguous:
        roles = [t for s in tr.corpus.train for x, t in zip(s.words, s.tags, strict=True)
                 if x == w]
        if len(set(roles)) == 2:
            shares.append(max(roles.count(t) for t in set(roles)) / len(roles))
        else:
            three[w] = sorted(((roles.count(t), t) for t in set(roles)), reverse=True)
    assert f"has only {pct(min(shares))} to {pct(max(shares))} of a word's training" in text
    assert list(three) == ["can"]  # AUX, NOUN and VERB: said for what it is
    (top, tag), *rest = three["can"]
    counts = ", ".join(f"{t} {n}" for n, t in three["can"])
    assert f"*can* has 3 roles ({counts}): its most common, {tag}, has " \
           f"{pct(top / (top + sum(n for n, _t in rest)))}." in text
    assert counts == "AUX 208, NOUN 96, VERB 74"
    forms = next(t for t in tables(at) if "word" in t.columns)
    assert list(forms["word"]) == list(tr.corpus.ambiguous)
    assert list(forms["tag (a) gives"]) == [picked[w] for w in tr.corpus.ambiguous]


def test_per_word_step_says_the_corpus_is_synthetic(at):
    """Its size and shares counted here from the sentences' own words."""
    from tests.test_analysis_corpus import distances_by_parse, lists_of

    go(at, 1)
    text = said(at)
    c = trained().corpus
    every = c.train + c.test
    forms = {w for s in every for w in s.words}
    listed = sum(1 for s in c.train if lists_of(s.words)) / len(c.train)
    two = sum(1 for s in c.train if any(
        len({t for x, t in zip(s.words, s.tags, strict=True) if x == w}) > 1
        for w in s.words)) / len(c.train)
    farthest = max(d for s in c.train for d in distances_by_parse(s) if d)
    assert "They are **synthetic**: a small grammar writes them" in text
    assert f"a small grammar of {len(forms)} word forms" in text
    assert f"writes all {len(every)} sentences and their gold tags, " \
           f"{max(len(s.words) for s in every)} words at most" in text
    assert f"{pct(listed)} of the {len(c.train)} training sentences hold a list" in text
    assert f"up to {farthest} words back; {pct(two)} use one word in two roles" in text
    assert "not accuracies on real English" in text
    shown = next(t for t in tables(at) if "training sentence" in t.columns)
    assert all(x in {s.text for s in c.train} for x in shown["training sentence"])


def test_window_and_far_steps_show_the_measured_numbers(at, ref):
    go(at, 2)
    assert f"tags **{pct(ref['window3']['double_role'])}** of double-role" in said(at)
    assert f"only **{pct(ref['window3']['ambiguous'])}** of all ambiguous" in said(at)
    figs = go(at, 3)
    text = said(at)
    assert "Its deciding word is 7 words back: only a window of 15 or more" in text
    far = tables(at)[0]
    assert list(far["held-out accuracy on far words"]) == [
        pct(ref[T.window_name(w)]["far"]) for w in (3, 5, 9, 39)] + [pct(ref["majority"]["far"])]
    tr = trained()
    rows = table_rows(figs["lesson_fig_far_pair"])
    for w in T.WIDTHS:
        col = figs["lesson_fig_far_pair"]["data"][0]["header"]["values"].index(str(w)) - 1
        got = [rows[k][col] for k in rows]
        assert got == [T.tag_sentence(tr.models[T.window_name(w)], tr.corpus, t)[1][-1]
                       for t in FAR_PAIR]
    curves = figs["lesson_fig_distance"]["data"]
    assert curves[0]["name"] == "majority tag"
    dist = list(curves[0]["x"])
    np.testing.assert_allclose(decode(curves[0]["y"]),
                               [100 * ref["majority"][f"d{d}"] for d in dist], atol=1e-9)
    for line, w in zip(curves[1:], T.WIDTHS, strict=True):
        np.testing.assert_allclose(decode(line["y"]),
                                   [100 * ref[T.window_name(w)][f"d{d}"] for d in dist],
                                   atol=1e-9)


def test_cost_step_shows_parameters_and_the_overfitting_measured(at, ref):
    figs = go(at, 4)
    text = said(at)
    tr, sw = trained(), sweeps()
    numel = {k: sum(p.numel() for p in m.parameters()) for k, m in tr.models.items()}
    wide = T.window_name(T.FULL_WIDTH)
    assert "must be 39 words wide" in text and "longest training sentence (20 words)" in text
    assert f"Yes, **{pct(ref[wide]['far'])}** of far words held out, with " \
           f"**{numel[wide]:,}** parameters" in text
    assert f"{numel[wide] / numel['attention_pos']:.1f} times self-attention's " \
           f"{numel['attention_pos']:,}" in text
    assert "for seeds 0, 1, 2" in text
    names = list(sw.runs[0].train)
    gaps = {k: 100 * np.array([[a - b for a, b in zip(r.train[k], r.held_out[k], strict=True)]
                               for r in sw.runs]) for k in names}  # [seeds, sizes]
    table = tables(at)[-1]
    for k, size in enumerate(sw.sizes):
        assert list(table[f"{size} sentences"]) == [
            f"{g[:, k].mean():.1f} ({g[:, k].min():.1f} … {g[:, k].max():.1f})"
            for g in gaps.values()]
    every = [n for k, n in enumerate(sw.sizes)
             if (gaps[wide][:, k] > gaps["attention_pos"][:, k] + 2).all()]
    if every:
        assert f"With {' and '.join(map(str, every))} training sentences the window of 39 " \
               "overfits more than self-attention in every seed" in text
    # Does the mean gap grow with the parameters? Any tagger with more parameters than
    # another but a mean gap over 2 points smaller breaks it; the sentence names the size
    # where it breaks most, with every tagger's mean gap.
    mean = {n: g.mean(0) for n, g in gaps.items()}
    breaks = [(mean[a][k] - mean[b][k], k, a, b) for k in range(len(sw.sizes)) for a in names
              for b in names if numel[a] < numel[b] and mean[a][k] - mean[b][k] > 2]
    if breaks:
        _excess, k, a, b = max(breaks)
        assert f"The gap does not follow the parameter count: with {sw.sizes[k]} sentences " \
               f"{view.label(a, short=True)} ({numel[a]:,} parameters) overfits by " \
               f"{mean[a][k]:.1f} points on average, {view.label(b, short=True)} " \
               f"({numel[b]:,} parameters) by {mean[b][k]:.1f}." in text
    else:
        assert "does not follow the parameter count" not in text
    bars = figs["lesson_fig_cost"]["data"]
    assert [b["name"] for b in bars] == [f"{n} sentences" for n in sw.sizes]
    for k, b in enumerate(bars):
        np.testing.assert_allclose(decode(b["x"]), [gaps[n][:, k].mean() for n in names],
                                   atol=1e-9)
    assert [y.split("<br>")[1] for y in bars[0]["y"]] == [f"{numel[n]:,} parameters"
                                                          for n in names]


def test_positions_step_grid_is_the_recounted_accuracy(at, ref):
    figs = go(at, 7)
    grid = figs["lesson_fig_accuracy"]["data"][0]
    names = list(T.NAMES) + ["majority"]
    want = [[100 * ref[n][k] for k in ("near", "far", "double_role")] for n in names]
    np.testing.assert_allclose(np.asarray(grid["z"], dtype=float), want, atol=1e-9)
    d = ref["attention_pos"]
    assert f"Held out: **{pct(d['near'])}** of ambiguous words whose deciding word is a " \
           f"neighbour, **{pct(d['far'])}** of those farther away" in said(at)
    tr = trained()
    numel = sum(p.numel() for p in tr.models["attention_pos"].parameters())
    table = tr.models["attention_pos"].position_embeddings.weight
    longest = max(len(s.words) for s in tr.corpus.train)
    assert f"Tagger (d) has **{numel:,}** parameters, {table.numel():,} of them its table of " \
           f"{table.shape[0]} position vectors" in said(at)
    assert f"the vectors of places {longest + 1} to {table.shape[0]} were never trained " \
           "(training left them exactly as they started)" in said(at)
    wide = sum(p.numel() for p in tr.models[T.window_name(39)].parameters())
    assert f"The window of 39 has {wide:,} parameters" in said(at)
    (reach,) = [t for t in tables(at) if "window of 2L−1: parameters" in t.columns]
    v, t, d = len(tr.corpus.vocab), len(tr.corpus.tags), 64
    assert list(reach["window of 2L−1: parameters"]) == [
        f"{v * d + (2 * n - 1) * d * d + 2 * d + d * d + d * t + t:,}" for n in (10, 20, 40, 80)]
    assert list(reach["(d) with L places: parameters"]) == [
        f"{numel - table.numel() + n * d:,}" for n in (10, 20, 40, 80)]


@pytest.mark.slow
def test_train_again_shows_the_same_weights_bit_for_bit(at):
    """The Train again button trains the seven taggers live, on the page, and says whether
    every weight equals the taggers shown (here: the tests' shared ones, trained apart)."""
    go(at, 1)
    at.button(key="lesson_retrain").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert [m.value for m in at.warning] == []
    (done,) = [m.value for m in at.success]
    assert done.startswith("Trained again in ") and done.endswith(
        "every weight equals the taggers shown, bit for bit.")


def test_last_step_shows_every_tagger_and_its_losses(at):
    figs = go(at, 9)
    tr = trained()
    rows = table_rows(figs["lesson_fig_tags"])
    for name, m in tr.models.items():
        assert rows[T.SHORT_NAMES[name]] == T.tag_sentence(m, tr.corpus, "I saw a saw")[1]
    for line, name in zip(figs["lesson_fig_loss"]["data"], tr.models, strict=True):
        np.testing.assert_allclose(decode(line["y"]), tr.losses[name], atol=1e-12)


def test_no_positions_step(at, ref, model):
    go(at, 6)
    assert f"Held out: **{pct(ref['attention']['double_role'])}** of double-role" in said(at)
    assert f"it scores {pct(ref['attention']['far'])}: the set of words alone" in said(at)
    assert f"right on {pct(order_free_by_hand(trained().corpus.test))} of them" in said(at)
    none = model.trace("i saw a saw", positions="none")
    shown = float(said(at).split("max |difference| = **")[1].split("**")[0])
    assert shown == float(f"{L.max_abs_difference(none.hidden_states, 2, 4):.2g}")
    assert shown <= rounding_tolerance(none.hidden_states)  # float32 rounding, nothing more


def test_bert_step_names_the_loaded_model_and_its_cosines(at, model):
    figs = go(at, 8)
    text = said(at)
    name = literal("all-MiniLM-L6-v2 (bundled)")  # a model's name is shown as typed
    assert f"{name}, a distilled sentence-embedding model with BERT's " \
           "architecture (6 layers, 12 heads)" in text
    cos = figs["lesson_fig_cosine"]["data"]
    t = model.trace("i saw a saw")
    learned = L.cosine_per_layer(t.hidden_states, 2, 4)
    np.testing.assert_allclose(decode(cos[0]["y"]), learned, atol=1e-6)
    np.testing.assert_allclose(decode(cos[1]["y"]), 1.0, atol=1e-6)
    assert f"cosine **{learned[-1]:.3f}**" in text
    go(at, 5)
    assert f"one head of {name}" in said(at)


def test_bert_step_switches_each_head_off(at, model):
    """The real model's step closes with the causal question: every head removed alone (zero
    ablation, engine.intervene), ranked by how much closer the two saws' final vectors come;
    the table's numbers recomputed here from the ablated traces' hidden states."""
    from attnviz.engine.request import Ablation

    drawn = go(at, 8)
    # each of its figures drawn in place under its own key (SVG button, phone layout)
    assert sum(key.startswith("lesson_heads_off_") for key in drawn) >= 2
    assert "Change of cos(saw #2, saw #4) when one head is removed" in " ".join(
        fig["layout"]["title"]["text"] for fig in figures(at) if fig["layout"].get("title"))
    (table,) = [d for d in tables(at) if "cos(saw #2, saw #4) without it" in d.columns]
    # what the heads are ranked by first: a phone's narrow table shows its first columns
    assert list(table.columns) == ["rank", "layer", "head", "change of cos(saw #2, saw #4)",
                                   "cos(saw #2, saw #4) without it"]

    def cos(t) -> float:
        a, b = (np.asarray(t.hidden_states[-1][i], dtype=np.float64) for i in (2, 4))
        return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))

    plain = cos(model.trace("i saw a saw"))
    without = {(layer, head): cos(model.trace("i saw a saw", ablate=Ablation(
        heads=((layer, head),)))) for layer in range(6) for head in range(12)}
    ranked = sorted(without, key=lambda h: -(without[h] - plain))
    assert list(zip(table["layer"], table["head"], strict=True)) == ranked[:10]
    for layer, head, shown, change in zip(table["layer"], table["head"],
                                          table["cos(saw #2, saw #4) without it"],
                                          table["change of cos(saw #2, saw #4)"], strict=True):
        assert float(shown) == pytest.approx(without[layer, head], abs=6e-5)
        assert float(change) == pytest.approx(without[layer, head] - plain, abs=6e-5)


def test_attention_step_shows_bert_weights(at, model):
    at.session_state["lesson_layer"] = 2
    at.session_state["lesson_head"] = 7
    figs = go(at, 5)
    t = model.trace("i saw a saw")
    np.testing.assert_allclose(decode(figs["lesson_fig_scores"]["data"][0]["z"]),
                               t.scores[2, 7], atol=1e-5)
    np.testing.assert_allclose(decode(figs["lesson_fig_weights"]["data"][0]["z"]),
                               t.weights[2, 7], atol=1e-7)
    row = t.weights[2, 7, 4].astype(np.float64)  # the second saw's weights
    j = int(np.argmax(row))
    shown = f"{t.tokens[j]} #{j}".replace("[", "\\[").replace("]", "\\]").replace("#", "\\#")
    assert f"The second *saw* (saw \\#4) puts its largest weight, **{row[j]:.3f}**, on " \
           f"*{shown}*; **{pct(row[0] + row[-1])}** of its weight" in said(at)
    w = t.weights.astype(np.float64)
    assert f"**{pct((w[..., 0].sum() + w[..., -1].sum()) / w[..., 0].size)}** of the weight " \
           "is on those two" in said(at)


def test_examples_and_presentation_mode(at):
    at.selectbox(key="lesson_sentence").set_value("They can can the can").run()
    at.toggle(key="lesson_present").set_value(True).run()
    figs = go(at, 0)
    assert table_rows(figs["lesson_fig_tags"])["gold"] == list(EXAMPLES["They can can the can"])
    assert not at.info and not at.exception
    keys = {b.key: b.proto.shortcut for b in at.button}
    assert keys["lesson_next"] == "right" and keys["lesson_back"] == "left"
    assert keys["lesson_key_pagedown"] == "pagedown" and keys["lesson_key_space"] == "space"
    assert keys["lesson_key_pageup"] == "pageup"
    assert not at.slider  # presenting: no slider to catch the arrow keys
    at.toggle(key="lesson_present").set_value(False).run()
    assert "lesson_key_pagedown" not in {b.key for b in at.button}
    assert at.button(key="lesson_next").proto.shortcut == ""


def test_the_url_asks_for_few_settings():
    """A link can ask for SEEDS x EPOCHS only; anything else falls back to the default."""
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params["lesson_seed"] = "9999"
    at.query_params["lesson_epochs"] = "40"
    at.query_params["lesson_step"] = "99"
    at.run()
    at.switch_page("pages/lesson.py").run()
    assert not at.exception
    assert at.session_state["lesson_seed"] == 0 and at.session_state["lesson_epochs"] == 6
    assert at.session_state["lesson_step"] == 1
    with pytest.raises(ValueError):
        nav.settings_from(9999, 6)
    with pytest.raises(ValueError):
        nav.settings_from(0, 40)
    assert nav.settings_from(2, 12) == T.Settings(seed=2, epochs=12)
    assert len(nav.SEEDS) * len(nav.EPOCHS) <= 9


def test_sentence_without_twins_says_so(at):
    at.selectbox(key="lesson_sentence").set_value("The duck can duck").run()
    at.session_state["text"] = "The cat sat on the mat"
    at.session_state["lesson_step"] = 2
    at.run()  # typing a sentence in the sidebar brings the lesson to it
    assert at.selectbox(key="lesson_sentence").value == "(the sidebar's sentence)"
    assert not at.exception
    assert any("no ambiguous word that occurs twice" in i.value for i in at.info)
    assert figures_by_key(at)


@pytest.mark.parametrize("text", ["", "  \n ", "?!"])
def test_blank_or_odd_input_is_handled(at, text):
    at.session_state["text"] = text
    at.run()
    assert not at.exception
    assert at.info


def test_typed_html_stays_text(at):
    at.session_state["text"] = "<b>I</b> saw a <script>saw</script>"
    for step in (0, 5, 8):  # the tag table, BERT's heatmaps, the cosine chart
        go(at, step)
        for spec in specs(at):
            assert "<script>" not in spec


def test_a_link_opens_the_right_step():
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params["lesson_step"] = "5"
    at.query_params["lesson_sentence"] = "I watch my watch"
    at.run()
    at.switch_page("pages/lesson.py").run()
    assert not at.exception
    assert at.session_state["lesson_step"] == 5
    assert any(f"Step 5 of {N}" in p.proto.text for p in at.get("progress"))


def test_heads_off_measures_the_lessons_word_where_the_step_does(model):
    """"The saw cut the saw": the lesson follows *saw* (places 2 and 5); the heads-off section
    measures those two places, not the sentence's first repeated token (*the*, 1 and 4), and
    names them beside its numbers."""
    from attnviz.analysis import ablation
    from attnviz.engine import TraceRequest

    at = open_page("pages/lesson.py", timeout=600, text="The saw cut the saw")
    go(at, 8)
    req = TraceRequest("the saw cut the saw")
    imp = ablation.head_importance(model, req, "repeat", "zero", tokens=(2, 5))
    assert ablation.head_importance(model, req).pair == (1, 4)
    (table,) = [d for d in tables(at) if "cos(saw #2, saw #5) without it" in d.columns]
    top = imp.ranking()[:10]
    assert list(zip(table["layer"], table["head"], strict=True)) == top
    assert [float(x) for x in table["cos(saw #2, saw #5) without it"]] == pytest.approx(
        [imp.values[h] for h in top], abs=6e-5)
    (z,) = [decode(tr["z"]) for fig in figures(at) for tr in fig["data"]
            if tr["type"] == "heatmap" and fig["layout"].get("title", {}).get("text")
            == "Change of cos(saw #2, saw #5) when one head is removed"]
    np.testing.assert_allclose(z, imp.effect, atol=1e-6)
    assert f"the two tokens `saw #2` and `saw #5`, whose cosine after the last layer is " \
           f"{imp.base:.4f}" in said(at)
