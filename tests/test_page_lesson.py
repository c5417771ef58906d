"""AppTest of the lesson: every step, predict-then-reveal, the numbers from the taggers/engine."""


import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from attnviz.analysis import lesson as L
from attnviz.analysis import taggers as T
from attnviz.analysis.common import rounding_tolerance
from tests.apptest import APP, open_page
from tests.plotly_json import decode, figures

N = len(L.STEPS)


@pytest.fixture
def at():
    return open_page("pages/lesson.py", timeout=240)


def go(at, step: int, reveal: bool = True):
    at.session_state["lesson_step"] = step + 1
    at.run()
    toggle = [t for t in at.toggle if t.key == f"lesson_reveal_{L.STEPS[step].key}"]
    if reveal and toggle:
        toggle[0].set_value(True).run()
    assert not at.exception, step
    return figures(at)


def trained() -> T.Trained:
    from attnviz.ui.cache import cached

    def not_trained():
        raise AssertionError("the page did not train the taggers for the default settings")

    return cached("taggers", T.Settings(), not_trained)


def table_rows(fig) -> dict[str, list[str]]:
    cells = fig["data"][0]["cells"]["values"]
    return {name: [col[r] for col in cells[1:]] for r, name in enumerate(cells[0])}


def test_every_step_hides_then_reveals(at):
    tr = trained()
    expected = {1: "mlp", 2: "window", 4: "attention", 5: "attention_pos"}
    for step in range(N):
        hidden = go(at, step, reveal=False)
        assert hidden, step  # the sentence table is always drawn
        rows = table_rows(hidden[0])
        if step in expected:
            assert rows[T.NAMES[expected[step]]] == ["?"] * 4
        if step == 0:
            assert rows["gold"] == ["?"] * 4
        shown = go(at, step)
        rows = table_rows(shown[0])
        assert rows["gold"] == ["PRON", "VERB", "DET", "NOUN"]
        if step in expected:
            name = expected[step]
            assert rows[T.NAMES[name]] == T.tag_sentence(tr.models[name], tr.corpus,
                                                         "I saw a saw")[1]
        progress = at.get("progress")
        assert any(f"Step {step + 1} of {N}" in p.proto.text for p in progress)
    # The claims, as the page shows them.
    step2 = table_rows(go(at, 1)[0])[T.NAMES["mlp"]]
    assert step2[1] == step2[3]
    step5 = table_rows(go(at, 4)[0])[T.NAMES["attention"]]
    assert step5[1] == step5[3]
    assert table_rows(go(at, 5)[0])[T.NAMES["attention_pos"]] == ["PRON", "VERB", "DET", "NOUN"]


def test_next_and_back_move_the_step(at):
    assert at.slider(key="lesson_step").value == 1
    at.button(key="lesson_next").click().run()
    assert at.slider(key="lesson_step").value == 2
    at.button(key="lesson_next").click().run()
    at.button(key="lesson_back").click().run()
    assert at.slider(key="lesson_step").value == 2 and not at.exception


def test_accuracy_bars_are_the_evaluated_scores(at):
    tr = trained()
    bars = [d for d in go(at, 5)[1]["data"] if d["type"] == "bar"]
    for k, name in enumerate(T.NAMES):
        s = T.evaluate(tr.models[name], tr.corpus)
        assert decode(bars[0]["y"])[k] == pytest.approx(100 * s.overall, abs=1e-9)
        assert decode(bars[1]["y"])[k] == pytest.approx(100 * s.ambiguous, abs=1e-9)


def test_bert_step_cosines_come_from_the_engine(at, model):
    figs = go(at, 6)
    cos = figs[1]["data"]
    t = model.trace("i saw a saw")
    none = model.trace("i saw a saw", positions="none")
    np.testing.assert_allclose(decode(cos[0]["y"]), L.cosine_per_layer(t.hidden_states, 2, 4),
                               atol=1e-6)
    np.testing.assert_allclose(decode(cos[1]["y"]), L.cosine_per_layer(none.hidden_states, 2, 4),
                               atol=1e-6)
    np.testing.assert_allclose(decode(cos[1]["y"]), 1.0, atol=1e-6)
    figs = go(at, 4)
    said = next(m.value for m in at.markdown if "max |difference|" in m.value)
    assert "1.000000" in said and "equal up to float rounding" in said
    shown = float(said.split("max |difference| = **")[1].split("**")[0])
    assert shown == float(f"{L.max_abs_difference(none.hidden_states, 2, 4):.2g}")
    assert shown <= rounding_tolerance(none.hidden_states)  # float32 rounding, nothing more


def test_attention_step_shows_bert_weights(at, model):
    at.session_state["lesson_layer"] = 2
    at.session_state["lesson_head"] = 7
    figs = go(at, 3)
    t = model.trace("i saw a saw")
    np.testing.assert_allclose(decode(figs[1]["data"][0]["z"]), t.scores[2, 7], atol=1e-5)
    np.testing.assert_allclose(decode(figs[2]["data"][0]["z"]), t.weights[2, 7], atol=1e-7)


def test_examples_and_presentation_mode(at):
    at.radio(key="lesson_sentence").set_value("They can can the can").run()
    at.toggle(key="lesson_present").set_value(True).run()
    rows = table_rows(go(at, 0)[0])
    assert rows["gold"] == ["PRON", "AUX", "VERB", "DET", "NOUN"]
    assert any(m.value.startswith("### ") for m in at.markdown)
    assert not at.info


def test_sentence_without_twins_says_so(at):
    at.radio(key="lesson_sentence").set_value("The duck can duck").run()
    at.session_state["text"] = "The cat sat on the mat"
    at.run()  # typing a sentence in the sidebar brings the lesson to it
    assert at.radio(key="lesson_sentence").value == "(the sidebar's sentence)"
    assert not at.exception
    assert any("no ambiguous word that occurs twice" in i.value for i in at.info)
    assert figures(at)


@pytest.mark.parametrize("text", ["", "  \n ", "?!"])
def test_blank_or_odd_input_is_handled(at, text):
    at.session_state["text"] = text
    at.run()
    assert not at.exception
    assert at.info


def test_typed_html_stays_text(at):
    at.session_state["text"] = "<b>I</b> saw a <script>saw</script>"
    for step in (0, 3, 6):  # the tag table, BERT's heatmaps, the cosine chart
        go(at, step)
        for c in at.get("plotly_chart"):
            assert "<script>" not in c.proto.spec


def test_a_link_opens_the_right_step():
    at = AppTest.from_file(APP, default_timeout=240)
    at.query_params["lesson_step"] = "5"
    at.query_params["lesson_sentence"] = "I watch my watch"
    at.run()
    at.switch_page("pages/lesson.py").run()
    assert not at.exception
    assert at.slider(key="lesson_step").value == 5
    assert any("Step 5 of 8" in p.proto.text for p in at.get("progress"))
    assert table_rows(figures(at)[0])["gold"] == ["PRON", "VERB", "DET", "NOUN"]
