"""The lesson's small computations: repeated ambiguous words, receptive fields, BERT twins."""

import numpy as np
import pytest
import torch

from attnviz.analysis import lesson as L
from attnviz.analysis.common import rounding_tolerance
from attnviz.analysis.corpus import EXAMPLES, FAR_PAIR, Sentence, words


def test_steps_are_the_lessons_argument():
    keys = [s.key for s in L.STEPS]
    assert keys == ["task", "per_word", "window", "far", "cost", "attention", "no_positions",
                    "positions", "bert", "next"]
    assert all(s.predict for s in L.STEPS[:-1])  # predict, then reveal, before each result
    assert len({s.title for s in L.STEPS}) == len(L.STEPS)
    assert L.step_index("far") == 3


def test_the_text_above_a_question_does_not_answer_it():
    """The claim is in the reveal, not in the text the class reads before predicting."""
    step = {s.key: s for s in L.STEPS}
    assert "first" not in step["task"].text and "second" not in step["task"].text
    assert "same output" in step["per_word"].reveal
    assert "same" not in step["per_word"].text and "must" not in step["per_word"].text
    assert "different" in step["window"].reveal and "different" not in step["window"].text
    for word in ("same", "identical", "equal", "order"):
        assert word not in step["no_positions"].text, word
    assert "equal" in step["no_positions"].reveal
    assert "same words" in step["far"].reveal and "same" not in step["far"].text
    assert "different" not in step["positions"].text


def test_every_first_use_of_a_term_is_explained():
    texts = [L.fill(s.text, "saw") for s in L.STEPS]
    assert "**gold**" in texts[0] and "right answers" in texts[0]
    assert "**held-out**" in texts[1] and "never saw" in texts[1]
    assert "**deciding word**" in texts[3]
    assert "**double-role**" in L.double_role_claim(0.4) and "two roles in one sentence" in \
        L.double_role_claim(0.4)


def test_fill_keeps_the_formulas():
    s = L.STEPS[L.step_index("window")]
    out = L.fill(s.text, "saw")
    assert "x^{i-1}" in out and "{word}" not in L.fill(s.predict, "saw")
    assert L.fill("a {n} b {word}", None, n=3) == "a 3 b repeated word"


def test_repeated_ambiguous_words():
    assert L.repeated_ambiguous("I saw a saw") == {"saw": [1, 3]}
    assert L.repeated_ambiguous("They can can the can.") == {"can": [1, 2, 4]}
    assert L.repeated_ambiguous("the dog saw the dog") == {}  # repeats, but not ambiguous
    assert L.repeated_ambiguous("") == {}
    for text in L.SENTENCES:
        assert L.repeated_ambiguous(text), text
    assert set(L.SENTENCES) | set(FAR_PAIR) == set(EXAMPLES)


def test_gold_tags():
    assert L.gold_tags("I SAW a saw") == ("PRON", "VERB", "DET", "NOUN")
    assert L.gold_tags("I saw a saw.") == ("PRON", "VERB", "DET", "NOUN", "PUNCT")
    assert L.gold_tags("I saw the saw") is None
    assert L.gold_tags("") is None


def test_receptive_fields_by_formula():
    f = L.receptive_fields(6, width=3)
    i, j = np.meshgrid(range(6), range(6), indexing="ij")
    np.testing.assert_array_equal(f["per word"], i == j)
    np.testing.assert_array_equal(f["window"], abs(i - j) <= 1)
    assert f["self-attention"].all()
    np.testing.assert_array_equal(L.receptive_fields(6, 5)["window"], abs(i - j) <= 2)


def test_cosine_per_layer_against_torch():
    rng = np.random.default_rng(0)
    h = rng.normal(size=(7, 5, 16)).astype(np.float32)
    ref = torch.nn.functional.cosine_similarity(
        torch.from_numpy(h[:, 1]).double(), torch.from_numpy(h[:, 3]).double(), dim=-1)
    np.testing.assert_allclose(L.cosine_per_layer(h, 1, 3), ref.numpy(), atol=1e-12)
    h[:, 4] = h[:, 1]
    np.testing.assert_allclose(L.cosine_per_layer(h, 1, 4), 1.0, atol=1e-12)
    assert L.max_abs_difference(h, 1, 4) == 0.0


def test_bert_twins_with_and_without_positions(model, hf_model, torch_threads):
    """The numbers the BERT step quotes, checked against Hugging Face BertModel (eager)."""
    t = model.trace("I saw a saw")
    none = model.trace("I saw a saw", positions="none")
    twins = L.token_positions(t.tokens, "saw")
    assert twins == [2, 4] and L.token_positions(t.tokens, "SAW") == [2, 4]
    with torch.no_grad():
        ids = torch.tensor([t.token_ids.tolist()])
        out = hf_model(ids, output_hidden_states=True)
    hf = torch.stack(out.hidden_states)[:, 0].numpy()  # [L+1, n, hidden]
    ref = torch.nn.functional.cosine_similarity(
        torch.from_numpy(hf[:, 2]).double(), torch.from_numpy(hf[:, 4]).double(), dim=-1).numpy()
    np.testing.assert_allclose(L.cosine_per_layer(t.hidden_states, 2, 4), ref, atol=1e-5)
    # Without positions the two saws are the same vector in every layer, up to float rounding
    # (the order of additions differs with the thread count).
    np.testing.assert_allclose(L.cosine_per_layer(none.hidden_states, 2, 4), 1.0, atol=1e-6)
    diff = L.max_abs_difference(none.hidden_states, 2, 4)
    assert diff <= rounding_tolerance(none.hidden_states), diff
    assert L.cosine_per_layer(t.hidden_states, 2, 4)[-1] < 0.9


def test_roles_claim_reads_the_gold_tags():
    ws = words("I saw a saw")
    assert L.roles_claim(ws, EXAMPLES["I saw a saw"], "saw") == (
        "Of the *saw*s, the first a **VERB**, the second a **NOUN**: the same word, two roles.")
    ws = words("They can can the can")
    assert "three roles" in L.roles_claim(ws, EXAMPLES["They can can the can"], "can")
    assert "no gold tags" in L.roles_claim(ws, None, "can")
    assert "No word" in L.roles_claim(words("I saw it"), ("PRON", "VERB", "PRON"), None)


def test_window_view_and_covering_width():
    ws = words("I can duck, fish, book and fly")
    assert L.window_view(ws, 8, 3) == ("and", "fly", L.PAD_WORD)
    assert L.window_view(ws, 8, 9) == ("fish", ",", "book", "and", "fly") + (L.PAD_WORD,) * 4
    assert L.covering_width(7) == 15
    assert "can" in L.window_view(ws, 8, L.covering_width(7))


def test_model_description_names_the_loaded_model():
    text = L.model_description("all-MiniLM-L6-v2 (bundled)", 6, 12)
    assert text.startswith("all-MiniLM-L6-v2 (bundled), a distilled sentence-embedding model "
                           "with BERT's architecture") and "(6 layers, 12 heads)" in text
    other = L.model_description("my-bert", 12, 12)
    assert other == "my-bert (12 layers, 12 heads)" and "distilled" not in other


def test_claims_print_their_numbers():
    rows = [L.FormRow("saw", {"NOUN": 60, "VERB": 40}, {"NOUN": 3, "VERB": 7}, "NOUN", "VERB"),
            L.FormRow("fly", {"NOUN": 51, "VERB": 49}, {"NOUN": 5, "VERB": 5}, "NOUN", "NOUN")]
    text = L.mlp_claim(rows, 0.6, 0.4, 0.65)
    assert "**60.0%**" in text and "40.0%" in text and "65.0%" in text
    assert "51.0% to 60.0%" in text and "1 of 2 words (*saw*)" in text and "at the baseline"
    assert rows[0].held_out_right == 7
    assert "sits on the baseline" in L.mlp_claim(rows[1:], 0.5, 0.5, 0.5)
    assert L.far_claim(433) == ("Held out, on the 433 ambiguous words whose deciding word is "
                                "2 or more words back:")
    assert "**99.3%**" in L.positions_claim(0.993, 1.0, 0.994)
    assert "**0.658**" in L.bert_claim(0.6581, 1.0, "saw")
    assert "**48.8%**" in L.no_positions_claim(0.488, 0.921, 0.882)
    assert "right on 88.2% of them" in L.no_positions_claim(0.488, 0.921, 0.882)
    assert "**95.9%**" in L.window_claim(0.959, 0.442, 0.799)


def test_a_word_with_three_roles_is_said_for_what_it_is():
    """*can* is AUX, NOUN and VERB: its commoner share is not 'a coin flip' between two roles."""
    rows = [L.FormRow("saw", {"NOUN": 262, "VERB": 239}, {}, "NOUN", "NOUN"),
            L.FormRow("can", {"AUX": 208, "NOUN": 96, "VERB": 74}, {}, "AUX", "AUX")]
    text = L.mlp_claim(rows, 0.5, 0.5, 0.5)
    assert "two roles the commoner one has only 52.3% to 52.3%" in text
    assert "*can* has 3 roles (AUX 208, NOUN 96, VERB 74): its most common, AUX, has 55.0%" in text
    assert rows[1].commoner_share == 208 / 378


def test_the_overfitting_verdict_follows_every_seed():
    params = {"wide": 168393, "attention": 73545}
    wide = np.array([[0.292, 0.125, 0.017], [0.276, 0.109, 0.008], [0.272, 0.130, 0.004]])
    att = np.array([[0.274, 0.023, 0.004], [0.167, 0.031, 0.008], [0.244, 0.036, 0.008]])
    text = L.cost_claim(39, params, 0.958, (50, 200, 1600), (0, 1, 2), wide, att)
    assert "**168,393**" in text and "2.3 times" in text and "seeds 0, 1, 2" in text
    assert "With 200 training sentences the window of 39 overfits more than self-attention " \
           "in every seed" in text
    assert "With 50 the seeds disagree." in text  # seed 0: 29.2 against 27.4, within 2
    assert "With 1600 it does not overfit more in any seed" in text
    one = L.cost_claim(39, params, 0.9, (50,), (0,), np.array([[0.1]]), np.array([[0.2]]))
    assert "With 50 it does not overfit more in any seed" in one and "disagree" not in one
    gaps = {"w3": (0.148, 0.054), "w9": (0.260, 0.143), "a": (0.228, 0.030),
            "w39": (0.280, 0.121)}
    p = {"w3": 20937, "w9": 45513, "a": 73545, "w39": 168393}
    names = {"w3": "3", "w9": "9", "a": "att", "w39": "39"}
    said = L.parameters_claim(p, gaps, (50, 200), names)  # w9 - a at 200: 11.3 points
    assert said == ("The gap does not follow the parameter count: with 200 sentences 9 (45,513 "
                    "parameters) overfits by 14.3 points on average, att (73,545 parameters) "
                    "by 3.0.")
    rising = {"w3": (0.1, 0.05), "w9": (0.2, 0.1), "a": (0.25, 0.1), "w39": (0.3, 0.2)}
    assert L.parameters_claim(p, rising, (50, 200), names) == ""


def test_the_reach_and_corpus_claims():
    text = L.reach_claim(73545, 32, 64, 20, 0.0, 168393, 39)
    assert "**73,545** parameters, 2,048 of them its table of 32 position vectors" in text
    assert "places 21 to 32 were never trained (training left them exactly as they started)" \
        in text and "tested on sentences of up to 20 words only" in text
    assert "sentences up to 20 words" in text and "any length" in text
    assert "at most 0.5" in L.reach_claim(73545, 32, 64, 20, 0.5, 168393, 39)
    text = L.corpus_claim(58, 2000, 1600, 0.355625, 0.21875, 20, 11, ("saw", "can"))
    assert "**synthetic**" not in text and "No real tagged text" in text
    assert "58 word forms" in text and "35.6% of the 1600 training sentences" in text
    assert "up to 11 words back" in text and "21.9% use one word in two roles" in text
    assert "not accuracies on real English" in text


def test_attention_sink_share_against_hugging_face(model, hf_model, torch_threads):
    """The attention step's shares of weight on [CLS] and [SEP], recomputed from
    BertModel's eager attentions."""
    t = model.trace("I saw a saw")
    with torch.no_grad():
        out = hf_model(torch.tensor([t.token_ids.tolist()]), output_attentions=True)
    hf = torch.stack(out.attentions)[:, 0].double().numpy()  # [layers, heads, n, n]
    sinks = [0, len(t.tokens) - 1]
    assert [t.tokens[i] for i in sinks] == ["[CLS]", "[SEP]"]
    everything = hf[..., sinks].sum() / (hf.shape[0] * hf.shape[1] * hf.shape[2])
    assert L.special_share(t.weights, sinks) == pytest.approx(everything, abs=1e-5)
    assert L.special_share(t.weights, sinks) == pytest.approx(0.714, abs=5e-4)
    row = hf[0, 0, 4]
    assert L.special_share(t.weights[0, 0, 4], sinks) == pytest.approx(row[0] + row[-1],
                                                                      abs=1e-5)
    assert int(np.argmax(row)) == 0 and row[0] == pytest.approx(0.398, abs=5e-4)
    text = L.sink_claim("\\[CLS\\] \\#0", 0.398, 0.625, 0.714, "saw", "saw \\#4")
    assert "**0.398**" in text and "**62.5%**" in text and "**71.4%**" in text


def test_no_attribution_the_lecture_notes_do_not_hold():
    """我用锯锯木头 is the lesson's own: no lecture note has it, and no text calls it the
    lecture's."""
    from pathlib import Path

    seeds = Path(__file__).resolve().parents[2] / "shared" / "seeds"
    if seeds.is_dir():
        assert not any("锯" in f.read_text(encoding="utf-8") for f in seeds.glob("*.txt"))
    import attnviz.analysis.lesson as module

    root = Path(module.__file__).resolve().parents[2]
    for path in (Path(module.__file__), root / "README.md", *sorted((root / "docs").glob("*.md"))):
        text = " ".join(path.read_text(encoding="utf-8").split())  # lines joined
        assert "the lecture's own" not in text, path
        assert "lecture's 我用锯锯木头" not in text, path
        assert "(the longest sentence)" not in text, path  # the windows reach 39, it has 20


def test_form_table_counts_the_corpus():
    from attnviz.analysis.corpus import make_corpus

    c = make_corpus(200, seed=4)
    majority = {w: "NOUN" for w in c.ambiguous}
    rows = L.form_table(c, {w: "VERB" for w in c.ambiguous}, majority)
    for r in rows:
        assert r.train == {t: sum(1 for s in c.train for w, g in zip(s.words, s.tags,
                                                                     strict=True)
                                  if w == r.word and g == t)
                           for t in {g for s in c.train for w, g in zip(s.words, s.tags,
                                                                        strict=True)
                                     if w == r.word}}
        assert r.held_out_right == sum(1 for s in c.test for w, g in zip(s.words, s.tags,
                                                                         strict=True)
                                       if w == r.word and g == "VERB")


def test_order_free_rule_counted_by_hand():
    from attnviz.analysis.corpus import make_corpus

    noun = Sentence(tuple(words("I watch the duck, fish and fly")),
                    ("PRON", "VERB", "DET", "NOUN", "PUNCT", "NOUN", "CCONJ", "NOUN"))
    verb = Sentence(tuple(words("the man can duck, fish and fly")),
                    ("DET", "NOUN", "AUX", "VERB", "PUNCT", "VERB", "CCONJ", "VERB"))
    bare = Sentence(tuple(words("I duck and fly")), ("PRON", "VERB", "CCONJ", "VERB"))
    assert L.order_free_rule([noun]) == 1.0 and L.order_free_rule([verb]) == 1.0
    assert L.order_free_rule([bare]) == 1.0  # no determiner: verb
    fooled = Sentence(tuple(words("the man saw the duck and fly")),
                      ("DET", "NOUN", "VERB", "DET", "NOUN", "CCONJ", "NOUN"))
    assert L.order_free_rule([noun, fooled]) == 1.0  # no auxiliary, a determiner: noun
    c = make_corpus()
    assert L.order_free_rule(c.test) == pytest.approx(order_free_by_hand(c.test), abs=1e-12)


def order_free_by_hand(sentences) -> float:
    """'Noun if the sentence holds a determiner and no auxiliary' on far list words, counted
    from the word forms (what a tagger sees) and the test's own list parse."""
    from tests.test_analysis_corpus import distances_by_parse

    hits = n = 0
    for s in sentences:
        has_det = any(w in ("a", "the", "my", "your", "our", "this", "that") for w in s.words)
        has_aux = any(w in ("can", "will", "must", "may") for w in s.words)  # words, not tags
        for i, d in enumerate(distances_by_parse(s)):
            if d and d > 1:
                n += 1
                hits += s.tags[i] == ("NOUN" if has_det and not has_aux else "VERB")
    return hits / n


def test_top_key():
    assert L.top_key(np.array([0.1, 0.6, 0.3]), ["a", "b", "c"]) == (1, "b", 0.6)
    assert words("x") == ["x"]


def test_length_and_rope_claims_state_the_numbers_given():
    text = L.length_claim(20, (21, 40), 200, (0, 1, 2), {"a": "learned", "b": "rotary"},
                          {"a": 0.99, "b": 0.995}, {"a": 0.7, "b": 0.8}, {"a": 0.45, "b": 0.68},
                          40, 32)
    assert "learned: 99.0% held out, 70.0% at places 1–20 and 45.0% past them" in text
    assert "rotary: 99.5% held out, 80.0% at places 1–20 and 68.0% past them" in text
    assert "rows 21 to 40" in text and "past place 32" in text and "21 to 40 words" in text
    rope = L.rope_claim(0.998, 0.995, 0.994, 45000, 47048)
    assert "**99.8%**" in rope and "45,000 parameters" in rope and "(47,048)" in rope
