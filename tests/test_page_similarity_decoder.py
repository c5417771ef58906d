"""Why are two sentences similar? on a causal decoder (the bundled SmolLM2): the page says that
the model is not a sentence-embedding model, shows the cosine of mean-pooled last-layer
vectors for the typed pair and for pairs with nothing in common (checked against Hugging
Face's own models), names the chosen model, never [CLS]/[SEP], and computes no credits."""

import numpy as np
import pytest
import torch

from attnviz.views import similarity as view
from tests import plotly_json as pj
from tests.apptest import open_page

A, B = "I saw a saw.", "A saw cuts wood."


def hf_cosines(folder, pairs) -> list[float]:
    """cos of the mean of the last hidden state over every token (the tokenizer's own added
    tokens included), each sentence alone, by transformers' AutoModel and AutoTokenizer."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    hf = AutoModel.from_pretrained(folder, local_files_only=True, attn_implementation="eager",
                                   dtype=torch.float32).eval()

    def e(text):
        with torch.no_grad():
            return hf(**tok(text, return_tensors="pt")).last_hidden_state[0].double().mean(0)

    return [float(torch.nn.functional.cosine_similarity(e(a), e(b), dim=0)) for a, b in pairs]


def test_minilm_gives_the_unrelated_pairs_a_cosine_near_zero():
    """What the decoder's page says of all-MiniLM-L6-v2: each UNRELATED pair within ±0.05."""
    from attnviz.engine.folders import bundled_model_dir

    got = hf_cosines(bundled_model_dir(), view.UNRELATED)
    assert max(abs(c) for c in got) < view.MINILM_UNRELATED, got


@pytest.fixture(scope="module")
def smol():
    import attnviz
    from attnviz.engine.bundled import SMOLLM2

    return attnviz.load_model(SMOLLM2, device="cpu")


def test_a_decoder_is_said_not_to_be_a_sentence_embedding_model(smol):
    from attnviz.engine.bundled import SMOLLM2, bundled_folder

    at = open_page("pages/similarity.py", timeout=600, model=SMOLLM2, text=A, sim_b=B)
    assert not at.error, [e.value for e in at.error]
    shown = " ".join(m.value for m in (*at.markdown, *at.warning, *at.info, *at.caption))
    (warning,) = at.warning
    assert "**SmolLM2\\-135M\\-Instruct \\(bundled\\) is not a sentence-embedding model.**" \
        in warning.value
    assert "causal decoder (Llama)" in warning.value
    assert "[CLS]" not in shown and "[SEP]" not in shown and "all-MiniLM-L6-v2 turns" not in shown
    # the cosines: the typed pair's, then the unrelated pairs', as Hugging Face computes them
    pairs = [(A, B), *view.UNRELATED]
    want = hf_cosines(bundled_folder(SMOLLM2), pairs)
    (table,) = at.dataframe
    df = table.value
    assert list(df["sentence A"]) == [a for a, _ in pairs]
    assert list(df["sentence B"]) == [b for _, b in pairs]
    np.testing.assert_allclose(df["cosine of the mean vectors"], want, atol=1e-5)
    low, high = min(want[1:]), max(want[1:])
    assert low > 0.5  # what the page shows is no similarity: unrelated sentences score high
    (info,) = at.info
    assert f"score {low:.4f} to {high:.4f} on SmolLM2" in info.value
    assert "between -0.05 and 0.05" in info.value
    # no credits: no steps, no blank, no figures
    assert not pj.figures(at) and not at.select_slider and not at.radio
    assert not [m for m in at.markdown if "completeness gap" in m.value]


def test_the_page_names_the_chosen_model_in_chinese(smol):
    from attnviz import i18n
    from attnviz.views.blocks import Markdown

    with i18n.use("zh"):
        blocks = view.not_an_embedding(smol, A, B, [0.9, 0.7, 0.6, 0.8])
        text = " ".join(b.text for b in blocks if isinstance(b, Markdown))
    assert "SmolLM2\\-135M\\-Instruct" in text and "不是句向量模型" in text
    assert "0.6000 到 0.8000" in text


def test_an_encoder_names_its_own_added_tokens(model):
    """The intro on the bundled BERT: all-MiniLM-L6-v2 and [CLS] and [SEP], as the tokenizer
    adds them."""
    assert view.kept_tokens(model) == ["[CLS]", "[SEP]"]
    (text,) = [b.text for b in view.intro(model)[1:]]
    assert text.startswith("all-MiniLM-L6-v2 turns a sentence") and "; [CLS] and [SEP] stay)" \
        in text


def test_a_vision_model_gets_the_heading_alone(tmp_path):
    """A ViT has no tokenizer: no added tokens to name, no sentence-embedding text (the page
    then says it cannot encode the sentence)."""
    import attnviz
    from attnviz.engine.random_models import save_random_checkpoint
    from attnviz.views.blocks import Heading

    vit = attnviz.load_model(str(save_random_checkpoint("vit", tmp_path / "vit")), device="cpu")
    assert view.kept_tokens(vit) == []
    assert [type(b) for b in view.intro(vit)] == [Heading]
