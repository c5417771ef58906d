"""ui.context: model names refused with one neutral, literal, short message (the same for a
folder that exists and one that does not); a Hub id or a folder of any family opens; the
sidebar's sentence becomes the request that family takes, and the pages say what was adapted.
"""

from __future__ import annotations

import html

import pytest
from markdown_it import MarkdownIt

from attnviz.engine.random_models import save_random_checkpoint
from attnviz.ui.context import neutral_refusal, open_checkpoint
from tests.apptest import open_page
from tests.plotly_json import specs

RENDER = MarkdownIt("commonmark")


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("ctx")
    return {f: save_random_checkpoint(f, root / f, layers=2) for f in ("gpt2", "vit", "bart")}


def message_for(typed: str) -> str:
    from attnviz.engine import ModelError

    with pytest.raises(ModelError) as e:
        open_checkpoint(typed)
    return str(e.value)


def test_one_message_whether_the_folder_exists_or_not(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "file").write_text("x")
    cases = ["/etc", "/definitely/missing", str(tmp_path / "empty"), str(tmp_path / "file"),
             str(tmp_path / "nope"), "no-such-org/no-such-model", "https://hub/x", "../../etc"]
    shapes = {message_for(c).replace(neutral_refusal(c), "<neutral>") for c in cases}
    assert shapes == {"<neutral>"}
    assert all(len(message_for(c)) < 300 for c in cases)


@pytest.mark.parametrize("typed", ["[x](javascript:alert(1))", "![i](http://e.com/a.png)",
                                   "<img src=x onerror=alert(1)>", "$x$ *b* ~~s~~"])
def test_the_typed_name_is_shown_as_typed(typed):
    out = RENDER.render(message_for(typed))
    assert "<a " not in out and "<img" not in out and "<em>" not in out and "<s>" not in out
    assert typed in html.unescape(out.replace("\\", ""))


def test_long_names_are_cut():
    msg = message_for("x" * 5000)
    assert len(msg) < 300 and "…" in msg


def test_a_hub_id_in_the_sidebar_opens_from_the_cache(tmp_path, monkeypatch, folders):
    from tests.test_engine_hub import put_in_cache

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    put_in_cache(tmp_path / "hf" / "hub", "openai-community/gpt2", folders["gpt2"], "f" * 40)
    at = open_page(model_dir="gpt2", pair="ignored second sentence")
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.caption).replace("\\", "")
    assert "GPT-2 reads one text" in captions and "causal mask, always on" in captions
    assert "openai-community/gpt2: 2 layers" in captions  # the sidebar names the Hub id
    assert at.selectbox(key="model_pick").options  # the sidebar lists the cached model


@pytest.mark.parametrize(("family", "note"), [
    ("vit", "reads an image, not the sentence"),
    ("bart", "the second sentence the decoder's target"),
])
def test_other_families_run_on_the_default_page(folders, family, note):
    at = open_page(model_dir=str(folders[family]), pair="the saw was sharp")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert note in " ".join(c.value for c in at.caption).replace("\\", "")
    assert specs(at)


def test_typed_control_tokens_are_said_on_the_page():
    at = open_page(text="I saw [MASK] saw [SEP] $x$")
    assert not at.exception and not at.error
    captions = [c.value for c in at.caption if "You typed" in c.value]
    assert len(captions) == 1
    shown = captions[0].replace("\\", "")
    assert "You typed [MASK], [SEP]: BERT's tokenizer reads each as its own control token" in shown
    assert "<" not in RENDER.render(captions[0]).replace("<p>", "").replace("</p>", "")


def test_a_chinese_session_names_the_model_and_refuses_in_chinese():
    """The sidebar names the bundled model in the session's language, and a refused folder's
    message is Chinese from end to end (not a Chinese reason inside an English sentence)."""
    from attnviz import i18n
    from attnviz.engine.load import BUNDLED_NAME

    at = open_page(lang="zh")
    from attnviz.ui.text import literal

    name = literal(i18n.messages("zh")[BUNDLED_NAME])
    assert "内置" in name and any(name in c.value for c in at.sidebar.caption)
    with i18n.use("zh"):
        refusal = neutral_refusal("/definitely/missing")
        assert refusal.startswith("模型被拒绝") and refusal.endswith("改为显示内置模型。")
    assert neutral_refusal("/definitely/missing").startswith("Model refused")
