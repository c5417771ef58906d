"""views.lesson without Streamlit: every step with its answer shown and hidden, the claims'
numbers counted here from the taggers' predictions, the real model's numbers against the
engine, and where each part goes on the page."""

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attnviz.analysis import lesson as L
from attnviz.analysis import taggers as T
from attnviz.engine import TraceRequest
from attnviz.export.html import Heading, Markdown, Numbers
from attnviz.views import lesson as view
from tests.lesson_trained import sweep, trained
from tests.test_analysis_taggers import recount
from tests.test_views_common import decode, spec

TEXT = "I saw a saw"


@pytest.fixture(scope="module")
def numbers():
    return view.numbers_of(trained())


def step_of(model, key: str, text: str = TEXT, numbers=None) -> view.Lesson:
    s = L.STEPS[L.step_index(key)]
    ws = L.lesson_words(text)
    needs = view.needs_taggers(s, ws)
    return view.Lesson(model, model.trace, s, T.Settings(), trained() if needs else None,
                       (numbers or view.numbers_of(trained())) if needs else None, sweep, ws,
                       L.repeated_word(ws))


def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def table_rows(fig) -> dict[str, list[str]]:
    """{row name: its tags}, whichever way the table is turned."""
    data = spec(fig)
    cells = data["data"][0]["cells"]["values"]
    if data["layout"].get("meta", {}).get("words_as_rows"):
        names = data["data"][0]["header"]["values"][1:]
        return {unwrap(name): list(cells[k + 1]) for k, name in enumerate(names)}
    return {unwrap(name): [col[r] for col in cells[1:]] for r, name in enumerate(cells[0])}


def unwrap(name: str) -> str:
    """A tagger's name as given, from the table's lines (plotting.lesson.wrap)."""
    return name.replace("<br>", " ")


# the steps that show the sweep over seeds (the cost of parameters, the length test)
SWEEP_STEPS = {i + 1 for i, s in enumerate(L.STEPS) if s.key in ("cost", "positions")}


@pytest.mark.parametrize("step", [
    pytest.param(i, marks=[pytest.mark.slow] if i in SWEEP_STEPS else [])
    for i in range(1, len(L.STEPS) + 1)])
def test_every_step_as_the_pack_shows_it(model, numbers, step):
    s = L.STEPS[step - 1]
    blocks = view.page(model, model.trace, TEXT, step, trained, lambda: numbers, sweep)
    assert blocks[0] == Heading("I saw a saw: why self-attention needs positions", 1)
    assert blocks[1] == Heading(s.title, 2)
    said = " ".join(b.text for b in blocks if isinstance(b, Markdown))
    if s.predict:
        assert "**Predict first:**" in said and "(Answer ▶ reveals it.)" not in said
    if s.reveal:
        assert L.fill(s.reveal, "saw")[:40] in said
    has_numbers = isinstance(blocks[-1], Numbers)
    assert has_numbers == (s.key in view.NEEDS_TAGGERS)


def test_hidden_answer_hides_the_tags(model, numbers):
    v = step_of(model, "per_word", numbers=numbers)
    parts = view.step_parts(v, shown=False)
    assert [p.where for p in parts] == ["body", "body", "question", "page", "page", "main"]
    assert "(Answer ▶ reveals it.)" in parts[2].block.text
    rows = table_rows(parts[-1].block)
    assert rows[T.NAMES["mlp"]] == ["?"] * 4 and rows["gold"] == ["PRON", "VERB", "DET", "NOUN"]
    shown = view.step_parts(v, shown=True)
    rows = table_rows(next(p.block for p in shown if p.key == "lesson_fig_tags"))
    tr = trained()
    assert rows[T.NAMES["mlp"]] == T.tag_sentence(tr.models["mlp"], tr.corpus, TEXT)[1]


@pytest.mark.slow  # reads the lesson's sweep over seeds (the run's warm-up keeps it)
def test_claims_are_the_predictions_counted(model, numbers):
    tr = trained()
    c = tr.corpus
    ref = {k: recount(c, c.test, T.predict(m, c, c.test)) for k, m in tr.models.items()}
    notes = [p for p in view.per_word(step_of(model, "per_word", numbers=numbers))
             if p.where == "notes"]
    assert f"Held out it tags **{pct(ref['mlp']['ambiguous'])}**" in notes[0].block.text
    far = view.far(step_of(model, "far", numbers=numbers))[1].block.columns
    assert list(far.values())[1][:4] == [pct(ref[T.window_name(w)]["far"])
                                         for w in (3, 5, 9, 39)]
    grid = next(p.block for p in view.positions(step_of(model, "positions", numbers=numbers))
                if p.key == "lesson_fig_accuracy")
    want = [[100 * ref[n][k] for k in ("near", "far", "double_role")] for n in T.NAMES]
    np.testing.assert_allclose(np.asarray(spec(grid)["data"][0]["z"], float)[:len(want)],
                               want, atol=1e-9)


def test_attention_step_against_the_trace(model):
    v = step_of(model, "attention")
    note, weights, scores = view.attention(v, 2, 5)
    t = model.trace(TEXT)
    j = int(np.argmax(t.weights[2, 5, 4]))
    assert f"**{t.weights[2, 5, 4, j]:.3f}**" in note.block.text and note.where == "notes"
    assert (weights.where, scores.where) == ("main", "page")
    np.testing.assert_allclose(decode(spec(weights.block)["data"][0]["z"]), t.weights[2, 5],
                               atol=1e-7)
    np.testing.assert_allclose(decode(spec(scores.block)["data"][0]["z"]), t.scores[2, 5],
                               atol=1e-6)


def test_bert_step_cosines_written_out(model):
    note, fig = view.bert(step_of(model, "bert"))
    h = torch.from_numpy(model.trace(TEXT).hidden_states.astype(np.float64))
    cos = F.cosine_similarity(h[:, 2], h[:, 4], dim=-1).numpy()
    assert f"**{cos[-1]:.3f}**" in note.block.text
    curves = {d["name"]: decode(d["y"]) for d in spec(fig.block)["data"]}
    np.testing.assert_allclose(curves["learned positions"], cos, atol=1e-6)
    np.testing.assert_allclose(curves["no positions"], 1.0, atol=1e-6)
    none = model.trace(TraceRequest(TEXT, positions="none")).hidden_states
    assert np.abs(none[:, 2] - none[:, 4]).max() <= 1e-5


def test_download_holds_the_numbers_shown(model, numbers):
    v = step_of(model, "next", numbers=numbers)
    (block,) = view.download(v, view.tags_of(v.trained, v.text))
    got = block.make()
    assert list(got["taggers"]) == list(T.NAMES)
    assert got["tags"].shape == (len(T.NAMES), 4)
    np.testing.assert_allclose(got["accuracy_overall_ambiguous_double_role_near_far"][0],
                               [numbers.scores["mlp"].overall, numbers.scores["mlp"].ambiguous,
                                numbers.scores["mlp"].double_role, numbers.scores["mlp"].near,
                                numbers.scores["mlp"].far])


def test_sentences_without_words_or_with_too_many(model):
    assert view.page(model, model.trace, "  ", 1, trained, lambda: None, sweep)[1].style == "info"
    ws, (note,) = view.sentence_notes("saw " * (T.MAX_WORDS + 3))
    assert len(ws) == T.MAX_WORDS and note.style == "warning"


def test_chinese_sentence_names_the_unknown_characters(model):
    ws = L.lesson_words("我用锯锯木头。")
    v = view.Lesson(model, model.trace, L.STEPS[0], T.Settings(), None, None, sweep, ws,
                    L.repeated_word(ws), view.unknown_words(model, ws))
    warning = view.chinese_notes(v)[0].block
    unk = model.tokenizer.unk_token
    assert "锯" in v.unknown and warning.style == "warning"
    for w in ws:  # exactly the characters the tokenizer reads as [UNK]
        assert (w in v.unknown) == (unk in model.pieces_of(model.tokenized(w).ids))
        assert (w in warning.text) == (w in v.unknown)



def test_the_real_model_step_follows_both_unknown_copies_of_the_word(model, hf_model):
    """我用锯锯木头。: the bundled vocabulary reads both copies of 锯 as [UNK] (and 用 and 头):
    the real model's step follows the tokens standing at 锯's two places (3 and 4 after
    [CLS]), and its curves are the cosines of transformers' own hidden states there."""
    ws = L.lesson_words("我用锯锯木头。")
    v = view.Lesson(model, model.trace, L.STEPS[8], T.Settings(), None, None, sweep, ws,
                    L.repeated_word(ws), view.unknown_words(model, ws))
    t = model.trace(TraceRequest(v.text))
    unk = model.tokenizer.unk_token
    assert v.word == "锯" and "锯" not in t.tokens and list(t.tokens).count(unk) == 4
    assert v.twins(t.tokens) == [ws.index("锯") + 1, ws.index("锯") + 2] == [3, 4]
    assert L.token_positions(list(t.tokens), "锯") == []  # the word itself: no token
    parts = view.bert(v)
    fig = next(p.block for p in parts if p.key == "lesson_fig_cosine")
    enc = model.tokenizer(v.text, return_tensors="pt")
    with torch.no_grad():
        hs = hf_model(**enc, output_hidden_states=True).hidden_states
    want = [F.cosine_similarity(h[0, 3], h[0, 4], dim=0).item() for h in hs]
    learned = decode(fig.data[0].y) if isinstance(fig.data[0].y, dict) else fig.data[0].y
    np.testing.assert_allclose(np.asarray(learned, dtype=float), want, atol=1e-5)
    # a sentence whose tokens do not stand one for one for its words: no places guessed
    assert L.word_token_positions(["[CLS]", "[UNK]", "[SEP]"], ["锯", "锯"], "锯", unk) == []

# Presentation mode on a 1280x720 projector: the figure column starts under the step's title
# row, 134 px down (tests/e2e/test_e2e_presentation.py measures it in Chromium), and
# Streamlit puts 16 px between two elements; 8 px are kept free at the bottom.
PRESENT_TOP, GAP = 134, 16


@pytest.mark.slow  # reads the lesson's sweep over seeds (the run's warm-up keeps it)
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_presentation_figure_column_fits_720_px(model, numbers, lang):
    """Every step's figure column (its answer shown: the tag table and the step's figure)
    adds up to at most one 720 px screen, in English and in Chinese."""
    from attnviz.i18n import use

    ws = L.lesson_words(TEXT)
    over = {}
    with use(lang):
        for s in L.STEPS:
            v = view.Lesson(model, model.trace, s, T.Settings(), trained(), numbers, sweep, ws,
                            L.repeated_word(ws), big=True)
            parts = view.step_parts(v, shown=True)
            heights = [p.block.layout.height for p in parts if p.where == "main"]
            assert heights and all(heights), (s.key, heights)
            total = PRESENT_TOP + sum(heights) + GAP * (len(heights) - 1)
            if total > 720 - 8:
                over[s.key] = (heights, total)
    assert not over, over


@pytest.mark.slow  # reads the lesson's sweep over seeds (the run's warm-up keeps it)
def test_positions_step_shows_e_beside_d_and_the_length_test(model, numbers):
    """(e)'s claim from its predictions counted here; the length test's table cells are the
    means (and extremes) of the sweep's LengthTest, which test_analysis_taggers recounts."""
    from tests.lesson_trained import sweeps

    tr = trained()
    c = tr.corpus
    e = recount(c, c.test, T.predict(tr.models["attention_rope"], c, c.test))
    s = L.STEPS[L.step_index("positions")]
    ws = L.lesson_words(TEXT)
    v = view.Lesson(model, model.trace, s, T.Settings(), tr, numbers, sweeps, ws,
                    L.repeated_word(ws))
    parts = view.step_parts(v, shown=True)
    said = " ".join(p.block.text for p in parts if isinstance(p.block, Markdown))
    assert "Tagger (e) turns" in said and f"**{pct(e['near'])}**" in said
    rows = table_rows(next(p.block for p in parts if p.key == "lesson_fig_tags"))
    assert rows[T.NAMES["attention_rope"]] == T.tag_sentence(tr.models["attention_rope"], c,
                                                             TEXT)[1]
    lt = sweeps().lengths
    table = next(p.block for p in parts if isinstance(p.block, view.ColumnsTable))
    cols = list(table.columns.values())
    assert cols[0] == ["learned", "sinusoidal", "rotary"]
    for k, name in enumerate(T.LENGTH_NAMES):
        for col, part in zip(cols[1:], (lt.held_out, lt.inside, lt.beyond), strict=True):
            a = 100 * np.asarray(part[name])
            assert col[k] == f"{a.mean():.1f} ({a.min():.1f} … {a.max():.1f})"
    fig = spec(next(p.block for p in parts if p.key == "lesson_fig_lengths"))
    np.testing.assert_allclose(decode(fig["data"][2]["y"]),
                               [100 * np.mean(lt.beyond[n]) for n in T.LENGTH_NAMES], atol=1e-9)
    assert f"rows {lt.longest + 1} to 40" in said


def test_the_projector_says_steps_2_and_5_briefly_and_folds_the_whole_text(model, numbers):
    """Presenting, steps 2 and 5 (their text columns were dense blocks) open with a short
    text that keeps the step's numbers ({n_test} held-out sentences; a window of {full} for
    {longest} words), and the whole text opens the step's fold; on a screen the whole text
    stays in the text column; step 7's BERT note goes to the fold on the projector."""
    import dataclasses

    for key, kept in (("per_word", "400 **held-out**"), ("cost", "must be 39 words wide")):
        v = step_of(model, key, numbers=numbers)
        whole = L.fill(L.STEPS[L.step_index(key)].text, v.word_md, **view.fields(v))
        screen = view.text(v, shown=True)
        assert [p.block.text for p in screen if p.where == "body"
                and isinstance(p.block, Markdown)] == [whole]
        big = view.text(dataclasses.replace(v, big=True), shown=True)
        body = [p.block.text for p in big if p.where == "body"]
        assert len(body) == 1 and kept in body[0], body
        assert 3 * len(body[0].split()) < 2 * len(whole.split()), (body, whole)
        assert [p.block.text for p in big if p.where == "page"][0] == whole  # the fold's first
    v = step_of(model, "no_positions", numbers=numbers)
    where = {p.where for p in view.no_positions(dataclasses.replace(v, big=True))
             if isinstance(p.block, Markdown) and "BERT without positions" in p.block.text}
    assert where == {"page"}


def test_step_7_of_five_words_fits_the_projector(model, numbers):
    """"They can can the can" and "We book the old book" at step 7 on the projector (a
    1280x720 figure column of plotting.lesson.COLUMN_PX): each line of the tag table's names
    lies inside the name column in Chinese too (a CJK character is one em wide, a Latin
    letter 0.4 em: "(c) 自注意力，无位置" ran 211 px into the 184 px column's first tag), and
    the tagger's heads name their query rows no closer than 1.2 lines of their type apart
    (five rows 22 px apart in 22 px type lay on one another)."""
    import dataclasses
    import re
    import unicodedata

    from attnviz.i18n import use
    from attnviz.plotting import lesson as P

    def px(line: str, size: int) -> float:
        return size * sum(1.0 if unicodedata.east_asian_width(c) in "WF" else 0.4
                          for c in line)

    for text in ("They can can the can", "We book the old book"):
        for lang in ("en", "zh"):
            with use(lang):
                v = dataclasses.replace(step_of(model, "no_positions", text, numbers=numbers),
                                        big=True)
                table = next(p.block for p in view.tag_table(v, view.tags_of(v.trained, text),
                                                             True) if p.where == "main")
                heads = view.tagger_heads(v, "attention").block
            cell = table.data[0]
            widths = list(cell.columnwidth)
            column = (P.COLUMN_PX - 10) * widths[0] / sum(widths) - 16  # less the padding
            size = cell.cells.font.size
            for name in cell.cells.values[0]:
                for line in re.split("<br>", name):
                    assert px(line, size) <= column, (text, lang, line, px(line, size), column)
            plot = heads.layout.height - heads.layout.margin.t - heads.layout.margin.b
            pitch = plot / len(v.ws)
            assert pitch >= 1.2 * heads.layout.yaxis.tickfont.size >= 1.2 * P.BAND_SIZE, (
                text, lang, pitch, heads.layout.yaxis.tickfont.size)
