"""Every page with every model family loaded in the sidebar: it works, or it says in one
sentence why its lesson is written for a BERT-like encoder, and the app stays usable. The
corrected claims are pinned with numbers computed here."""

from __future__ import annotations

import numpy as np
import pytest

from attnviz.analysis import walkthrough as wt
from attnviz.analysis.head_stats import head_stats
from attnviz.analysis.rollout import rollout
from attnviz.engine import load_model
from attnviz.engine.random_models import save_random_checkpoint
from attnviz.ui.context import bert_like
from attnviz.ui.router import PAGES
from tests.plotly_json import specs

from .apptest import open_page

# GPT-2: a decoder; ViT: images; BART: an encoder-decoder; RoBERTa: BERT-like with <s>/</s>.
FAMILIES = ("gpt2", "vit", "bart", "roberta")
WRITTEN_FOR = "is written for a bidirectional text encoder with BERT's layers"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("families")
    made = {f: str(save_random_checkpoint(f, root / f, seed=i))
            for i, f in enumerate(FAMILIES + ("distilbert", "bert"))}
    return made


def open_with(checkpoints, family: str, page: str, **state):
    return open_page(page, model_dir=checkpoints[family], **state)


def infos(at) -> list[str]:
    return [i.value for i in at.info]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_page_opens(checkpoints, family):
    """Each page's default view, with this family loaded: no exception (open_page asserts it)
    and the sidebar's model is the one in use (no fallback warning)."""
    for page, *_ in PAGES:
        at = open_with(checkpoints, family, page)
        assert not at.exception, (family, page)
        assert not any("could not be opened" in w.value for w in at.warning), (family, page)


def test_bert_like_is_the_encoder_families(checkpoints):
    kinds = {f: bert_like(load_model(p)) for f, p in checkpoints.items()}
    assert kinds == {"gpt2": False, "vit": False, "bart": False, "roberta": True,
                     "distilbert": True, "bert": True}


@pytest.mark.parametrize("family", ["gpt2", "vit"])
def test_positions_page_says_why(checkpoints, family):
    at = open_with(checkpoints, family, "pages/positions.py")
    assert any(WRITTEN_FOR in m for m in infos(at))
    assert not specs(at)
    at = open_with(checkpoints, "roberta", "pages/positions.py")  # BERT-like: the page runs
    assert not any(WRITTEN_FOR in m for m in infos(at)) and specs(at)


@pytest.mark.parametrize("tab", ["Masks and weights", "Receptive fields", "How much context?"])
def test_windows_tabs_say_why_for_vit(checkpoints, tab):
    at = open_with(checkpoints, "vit", "pages/windows.py", win_tab=tab)
    assert any(WRITTEN_FOR in m and "2-D grid" in m for m in infos(at))


def test_step_by_step_real_mode(checkpoints):
    """Real mode recomputes a head from what the layer projects (attention_inputs: for a
    pre-LayerNorm GPT-2 its LayerNorm, not hidden_states) and the queries match the engine;
    its weights would not (no causal mask in the walkthrough), so the page says why instead:
    real mode draws an encoder's head or a Llama-shaped decoder's, and GPT-2 is neither."""
    model = load_model(checkpoints["gpt2"])
    t = model.trace("I saw a saw")
    walk = wt.real_walkthrough(model, t, 1, 0)
    for name in ("queries", "keys", "values"):
        np.testing.assert_allclose(getattr(walk, name), getattr(t, name)[1, 0], atol=1e-5)
    assert not np.allclose(t.attention_inputs[1], t.hidden_states[1])  # the fix matters here
    at = open_with(checkpoints, "gpt2", "pages/step_by_step.py", sbs_mode="real")
    assert any("or a decoder's with Llama's attention" in m and "not a Llama-shaped decoder" in m
               for m in infos(at))


def test_head_stats_for_a_decoder(checkpoints):
    model = load_model(checkpoints["gpt2"])
    t = model.trace("I saw a saw.")
    s = head_stats(t.weights, t.tokens)
    assert not (s["cls"].any() or s["sep"].any())  # no start or separator token: 0
    at = open_with(checkpoints, "gpt2", "pages/head_stats.py")
    assert any("0 by construction" in c.value for c in at.caption)
    at.session_state["hs_tab"] = "Rollout and flow"
    at.run()
    assert any("0 above the diagonal" in c.value for c in at.caption)
    r = rollout(t.weights)  # the claim: causal weights give a causal rollout
    assert np.abs(np.triu(r, 1)).max() == 0.0


def test_head_stats_roberta_start_and_separator(checkpoints):
    """RoBERTa's <s> and </s> play [CLS] and [SEP]: their columns are the weight on them."""
    model = load_model(checkpoints["roberta"])
    t = model.trace("I saw a saw.")
    assert t.tokens[0] == "<s>" and t.tokens[-1] == "</s>"
    s = head_stats(t.weights, t.tokens)
    w = t.weights.astype(np.float64)
    np.testing.assert_allclose(s["cls"], w[..., 0].mean(-1), atol=1e-12)
    np.testing.assert_allclose(s["sep"], w[..., -1].mean(-1), atol=1e-12)


@pytest.mark.parametrize("family", ["gpt2", "vit"])
def test_lesson_real_model_steps_say_why(checkpoints, family):
    """The lesson's own taggers run for any model; its steps on the loaded model say why they
    are not shown for a decoder or a vision model."""
    from attnviz.analysis.lesson import STEPS

    at = open_with(checkpoints, family, "pages/lesson.py")
    for key in ("attention", "bert"):
        step = next(i for i, s in enumerate(STEPS, 1) if s.key == key)
        at.session_state["lesson_step"] = step
        at.run()
        if STEPS[step - 1].predict:
            at.button(key="lesson_next").click().run()
        assert not at.exception, [e.value for e in at.exception]
        assert any(WRITTEN_FOR in m for m in infos(at)), key


def test_the_intro_names_the_models_that_ship_with_attnviz():
    """'two ship with attnviz: the bundled BERT and the decoder SmolLM2-135M-Instruct': the
    bundled models are exactly these two (engine.bundled), in both languages."""
    from attnviz.engine import bundled
    from attnviz.i18n import use
    from attnviz.views import families

    assert bundled.BUNDLED == (bundled.MINILM, bundled.SMOLLM2)
    name = bundled.SMOLLM2_NAME.split(" (")[0]
    for lang, two in (("en", "two ship with attnviz"), ("zh", "自带两个模型")):
        with use(lang):
            text = families.intro()[1].text
        assert two in text and name in text and "BERT" in text, lang
