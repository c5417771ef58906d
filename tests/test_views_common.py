"""attnviz.views without Streamlit: the package and the pack's builder never import it; typed
text is made literal; the shared readers of figures' JSON for the views' tests."""

import base64
import json
import subprocess
import sys

import numpy as np

from attnviz.views import common


def decode(z) -> np.ndarray:
    """Plotly JSON sends numpy arrays as base64 {dtype, bdata[, shape]}; lists stay lists."""
    if isinstance(z, dict):
        arr = np.frombuffer(base64.b64decode(z["bdata"]), dtype=np.dtype(z["dtype"]))
        if "shape" not in z:  # 1-D arrays come without a shape
            return arr
        return arr.reshape([int(s) for s in str(z["shape"]).split(",")])
    return np.asarray(z, dtype=float)


def spec(fig) -> dict:
    """A figure as the JSON a page or a file gets."""
    return json.loads(fig.to_json())


def heatmaps(fig) -> list[dict]:
    return [tr for tr in spec(fig)["data"] if tr["type"] == "heatmap"]


def test_views_and_the_pack_never_import_streamlit():
    code = ("import sys, pkgutil, importlib, attnviz.views as v; "
            "[importlib.import_module('attnviz.views.' + m.name) "
            " for m in pkgutil.iter_modules(v.__path__)]; "
            "import attnviz.export.site, attnviz.export.html; "
            "print(sorted(k for k in sys.modules if k.split('.')[0] == 'streamlit'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_literal_shows_typed_text_as_typed():
    assert common.literal("*a* $x$ <b>\n[l](javascript:x)") == (
        r"\*a\* \$x\$ \<b\> \[l\]\(javascript\:x\)")


def test_numbers_copy_small_slices_and_make_functions_late():
    big = np.arange(24.0).reshape(2, 3, 4)
    block = common.numbers("N (.npz)", {"row": big[1]}, "n.npz")
    big[1] = -1  # the offered numbers are the ones seen when offered
    np.testing.assert_array_equal(block.make()["row"], np.arange(12.0, 24.0).reshape(3, 4))
    calls = []
    late = common.numbers("N (.npz)", lambda: calls.append(1) or {"a": 1}, "n.npz")
    assert calls == [] and late.make() == {"a": 1} and calls == [1]


def test_trace_report(model):
    t = model.trace("saw " * 600)
    (warning,) = [b for b in common.trace_report(model, t) if b.style == "warning"]
    assert f"{t.dropped} tokens at the end were dropped" in warning.text
    assert common.trace_report(model, model.trace("I saw a saw")) == []


def test_a_server_limit_below_the_models_positions_is_named_as_the_servers():
    """Cut by the server's ATTNVIZ_MAX_TOKENS (below the model's positions), the warning names
    that limit and the model's own; cut by the model, it names the model's positions."""
    import attnviz
    from attnviz.views.common import trace_report

    capped = attnviz.load_model(device="cpu", max_tokens=8)
    t = capped.trace("I saw a saw and the saw saw me in the old garden today")
    said = trace_report(capped, t)[0]
    assert said.style == "warning" and t.dropped > 0
    assert said.text == (f"The input is longer than this server's 8 tokens per trace "
                         f"(ATTNVIZ_MAX_TOKENS; the model itself takes "
                         f"{capped.model_positions}): {t.dropped} tokens at the end were "
                         "dropped.")
    full = attnviz.load_model(device="cpu")
    long = full.trace(" ".join(["saw"] * (full.model_positions + 10)))
    assert trace_report(full, long)[0].text.startswith(
        f"The input is longer than the model's {full.model_positions} positions: ")


def test_the_refusal_names_the_bert_like_families_in_the_sessions_language():
    """why_not_bert_like's sentence on a Chinese page names BERT, RoBERTa and DistilBERT with
    Chinese words between them (no English 'or' left in it)."""
    from types import SimpleNamespace

    from attnviz.i18n import use

    decoder = SimpleNamespace(name="SmolLM2", title="Llama", kind="decoder", capabilities={
        "input": "text", "bidirectional": False, "pre_norm": True})
    assert "(BERT, RoBERTa or DistilBERT)" in common.why_not_bert_like(decoder, "This page")
    with use("zh"):
        said = common.why_not_bert_like(decoder, "本页")
    assert "（BERT、RoBERTa 或 DistilBERT）" in said and " or " not in said


def test_the_refusal_names_the_bundled_model_in_the_sessions_language(monkeypatch):
    """The bundled SmolLM2 is named as the sidebar names it: in Chinese 'SmolLM2-135M-Instruct
    （内置）', never with the English '(bundled)' in a Chinese sentence (the positions page's
    and step by step's refusals)."""
    from types import SimpleNamespace

    from attnviz.analysis import walkthrough
    from attnviz.engine.bundled import SMOLLM2_NAME
    from attnviz.i18n import _, use
    from attnviz.views.step_by_step import real_refusal

    decoder = SimpleNamespace(name=SMOLLM2_NAME, title="Llama", kind="decoder", capabilities={
        "input": "text", "bidirectional": False, "pre_norm": True})
    monkeypatch.setattr(walkthrough, "decoder_refusal", lambda model: "它对 q 和 k 做归一化")
    with use("zh"):
        zh_name = _(SMOLLM2_NAME)
        said = [common.why_not_bert_like(decoder, "本页"), real_refusal(decoder)[0].text]
    assert zh_name != SMOLLM2_NAME and "（内置）" in zh_name
    for text in said:
        assert "bundled" not in text and common.literal(zh_name) in text
    assert common.literal(SMOLLM2_NAME) in common.why_not_bert_like(decoder, "This page")
