"""URL values every page survives (ui.urlstate, run by the router before any widget).

Streamlit 1.67 parses a bound number widget's URL value with float() then int(): `inf`, `-inf`,
`1e999` or a 100,000-digit number raised OverflowError inside Streamlit on every rerun, and
typing a new sentence did not recover. Here every parameter bound to a widget in pages/ (found
by reading the pages' syntax trees, so a widget added later is covered) is opened with such
values in AppTest, on every tab of its page, and the run must show no exception and the values
must have left the URL, then a new sentence must draw again. A finite number outside a widget's
range (-99999) is Streamlit's to refuse; it is tried too. A check that every number widget was
reached keeps the list of page states (STATES) honest when a page hides a widget behind another
choice.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.engine.bundled import SMOLLM2
from attnviz.ui import urlstate
from attnviz.ui.model_picker import CHOICES, MODEL_KEY
from tests.apptest import APP
from tests.pages_list import existing_pages

ROOT = Path(__file__).resolve().parents[1]
HUGE = "9" * 100_000
OUT_OF_RANGE = ["-99999"]
STREAMLIT_QUERY_LIMIT = 524_288  # characters: a longer query string is ignored whole
NUMBER_WIDGETS = {"number_input", "slider", "select_slider"}

# Choices that show widgets a page hides otherwise: {page: [extra URL params], ...}. The
# windows page's next-word window (win_stream_w) shows on a decoder only: its decoders' tab with
# the bundled SmolLM2 chosen in the sidebar (its URL value as the browser writes it).
STATES: dict[str, list[dict[str, str]]] = {
    "pages/step_by_step.py": [{"sbs_step": "3"}, {"sbs_step": "4"}, {"sbs_step": "7"},
                               {"sbs_mode": "real"}],
    "pages/windows.py": [{"win_tab": "Today's decoders: sliding windows and the sink",
                          MODEL_KEY: CHOICES[SMOLLM2]}],
}


# Modules that draw a page's widgets besides the page file itself.
HELPERS: dict[str, tuple[str, ...]] = {
    "pages/lesson.py": ("attnviz/ui/lesson.py", "attnviz/ui/lesson_steps.py"),
}


def _label(node: ast.AST) -> str | None:
    """A tab label written as a constant or as _("constant") (attnviz.i18n, English msgid)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" \
            and node.args:
        node = node.args[0]
    return node.value if isinstance(node, ast.Constant) else None


def bound_widgets(page: str) -> tuple[dict[str, str], list[str]]:
    """({key: widget function} of every widget bound to the URL, [tab labels]) in a page."""
    keys, tabs = {}, []
    for file in (page, *HELPERS.get(page, ())):
        tree = ast.parse((ROOT / file).read_text(encoding="utf-8"))
        _collect(tree, keys, tabs)
    return keys, tabs


def _collect(tree: ast.AST, keys: dict[str, str], tabs: list[str]) -> None:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        kw = {k.arg: k.value for k in node.keywords}
        bind, key = kw.get("bind"), kw.get("key")
        if not (isinstance(bind, ast.Constant) and bind.value == "query-params"
                and isinstance(key, ast.Constant)):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else ""
        keys[key.value] = name
        if name == "tabs" and node.args:
            tabs += _tab_labels(tree, node.args[0])


def _tab_labels(tree: ast.AST, arg: ast.AST) -> list[str]:
    """The labels of st.tabs([...]) or st.tabs([_(tab) for tab in NAME]), NAME a list or tuple
    assigned at the module's top level (N_-marked constants), or MODULE.NAME for a module the
    page imports (`from attnviz.views import positions as view`)."""
    if isinstance(arg, ast.ListComp):
        source = arg.generators[0].iter
        if isinstance(source, ast.Attribute) and isinstance(source.value, ast.Name):
            tree, source = _imported_module(tree, source.value.id), ast.Name(source.attr)
        if isinstance(source, ast.Name):
            for node in getattr(tree, "body", []):
                if (isinstance(node, ast.Assign) and any(
                        isinstance(t, ast.Name) and t.id == source.id for t in node.targets)
                        and isinstance(node.value, (ast.List, ast.Tuple))):
                    arg = node.value
    if not isinstance(arg, (ast.List, ast.Tuple)):
        return []
    out = []
    for elt in arg.elts:
        if isinstance(elt, ast.Call) and isinstance(elt.func, ast.Name) and elt.func.id == "N_":
            elt = elt.args[0]
        label = _label(elt)
        if label is not None:
            out.append(label)
    return out


def _imported_module(tree: ast.AST, alias: str) -> ast.AST | None:
    """The syntax tree of the module a file imports as `alias` (from PACKAGE import MODULE
    as alias), read from the repository; None if it imports none."""
    for node in getattr(tree, "body", []):
        if isinstance(node, ast.ImportFrom) and node.module:
            for name in node.names:
                if (name.asname or name.name) == alias:
                    path = ROOT / Path(*node.module.split("."), f"{name.name}.py")
                    if path.is_file():
                        return ast.parse(path.read_text(encoding="utf-8"))
    return None


def page_states(page: str) -> list[dict[str, str]]:
    """The states a page's cases open: as it comes, each other tab, and STATES' choices."""
    keys, tabs = bound_widgets(page)
    tab_key = next((k for k, f in keys.items() if f == "tabs"), None)
    return [{}, *({tab_key: label} for label in tabs[1:]), *STATES.get(page, [])]


def cases(values: list[str]) -> list:
    out = []
    for page in existing_pages():
        states = page_states(page)
        for value in values:
            for i, state in enumerate(states):
                out.append(pytest.param(page, state, value,
                                        id=f"{Path(page).stem}-{i}-{value[:8]}"))
    return out


REACHED: dict[str, set[str]] = {}


def open_with(page: str, params: dict[str, str]) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=240)
    for k, v in params.items():
        at.query_params[k] = v
    at.switch_page(page)
    at.run()
    return at


def rendered_keys(at: AppTest) -> set[str]:
    found = set()
    for kind in ("number_input", "slider", "select_slider", "selectbox", "radio", "toggle",
                 "checkbox", "multiselect"):
        found |= {w.key for w in at.get(kind) if getattr(w, "key", None)}
    return found


def run_case(page: str, state: dict[str, str], value: str) -> None:
    keys, _ = bound_widgets(page)
    params = {k: value for k in keys if k not in state and keys[k] != "tabs"}
    at = open_with(page, {**params, **state})
    assert not at.exception, f"{page} {state} = {value[:20]}: {[e.value for e in at.exception]}"
    if len(value) * len(params) < STREAMLIT_QUERY_LIMIT:  # else Streamlit ignores the query
        dropped = {k for k in params if urlstate.unusable(k, value)}  # by the router, before
        assert not dropped & set(at.query_params), sorted(dropped)  # any widget was built
    REACHED.setdefault(page, set()).update(rendered_keys(at) & set(keys))
    at.session_state["text"] = "A new sentence about a saw"
    at.run()
    assert not at.exception, f"{page} after a new sentence: {[e.value for e in at.exception]}"


# Every value the rule calls unusable (test_unusable_values_are_dropped: inf, -inf, 1e999,
# 1e300, '', ...) leaves the URL before any widget, so each page meets it as its defaults: one
# such value and the longest are opened on every page and state (run_case checks they left);
# -99999 is a usable number outside the widgets' ranges, Streamlit's to refuse.
@pytest.mark.parametrize(("page", "state", "value"), cases(["inf", HUGE]))
def test_non_finite_url_values_do_not_break_a_page(page, state, value):
    run_case(page, state, value)


@pytest.mark.slow
@pytest.mark.parametrize(("page", "state", "value"), cases(OUT_OF_RANGE))
def test_other_bad_url_numbers_do_not_break_a_page(page, state, value):
    run_case(page, state, value)


def test_every_number_widget_was_reached():
    """The runs above opened every bound number widget (else STATES misses a choice)."""
    if not REACHED:
        pytest.skip("run with the page cases")
    missed = {page: sorted(k for k, f in bound_widgets(page)[0].items()
                           if f in NUMBER_WIDGETS and k not in REACHED.get(page, set()))
              for page in existing_pages()}
    missed = {p: k for p, k in missed.items() if k}
    for page in list(missed):  # a run above may have stopped early (a slow flow, a timeout):
        for state in page_states(page):  # the same states, opened with no bad value
            missed[page] = [k for k in missed[page] if k not in rendered_keys(
                open_with(page, state))]
        if not missed[page]:
            del missed[page]
    assert not missed, f"number widgets never shown by the fuzz runs: {missed}"


def test_bound_widgets_are_found():
    keys, tabs = bound_widgets("pages/positions.py")
    assert keys["pos_seed"] == "number_input" and "pos_tab" in keys and len(tabs) >= 3
    every = {k for p in existing_pages() for k in bound_widgets(p)[0]}
    assert {"pos_seed", "sbs_seed", "sbs_query", "sbs_key", "img_row", "img_col",
            "lesson_seed", "lesson_epochs"} <= every


# ------------------------------------------------------------------- the rule itself
@pytest.mark.parametrize("value", ["inf", "-inf", "+inf", "Infinity", "nan", "NaN", "1e999",
                                   "-1e999", HUGE, "-" + HUGE, str(2**63), "1e300", "1e16",
                                   "x" * 600, "", " "])
def test_unusable_values_are_dropped(value):
    assert urlstate.unusable("pos_seed", value)
    assert urlstate.unusable("layer", value)


@pytest.mark.parametrize("value", ["0", "7", "-1", "0.5", "9999", str(2**52), "saw #2", "∞",
                                   "2 · I saw a saw", "real", "true"])
def test_usable_values_are_kept(value):
    assert not urlstate.unusable("pos_seed", value)


def test_free_text_may_be_anything_that_fits_a_link():
    for text in ("inf", "1e999", "nan", "I saw a saw", "x" * 600, ""):
        assert not urlstate.unusable("text", text)
        assert not urlstate.unusable("pair", text)
    assert urlstate.unusable("text", "x" * (urlstate.URL_BUDGET + 1))
    assert urlstate.unusable("text", "锯" * (urlstate.URL_BUDGET // 9 + 1))  # 9 bytes each
    assert not urlstate.unusable("text", "锯" * (urlstate.URL_BUDGET // 9))


def test_encoded_length_is_the_query_strings():
    from urllib.parse import urlencode

    for text in ("I saw a saw", "我看见了一把锯子", "a&b=c d+e%", "é" * 10):
        assert urlstate.encoded_length(text) == len(urlencode({"": text})) - 1
    assert urlstate.encoded_length("ab", None, "c") == 3


def test_sanitize_outside_streamlit_does_nothing():
    assert urlstate.sanitize() == []


@pytest.mark.parametrize("lang,given,shown", [("zh", "real", "真实"), ("en", "真实", "real"),
                                              ("zh", "真实", "真实"), ("en", "real", "real")])
def test_a_link_opens_the_same_option_in_either_language(lang, given, shown):
    """Streamlit writes a radio's or tab's shown label into the link: a link made in English
    (sbs_mode=real) opens real mode in a Chinese session, and a Chinese link in English."""
    from attnviz import i18n

    params = {"sbs_mode": given} if lang == "en" else {"sbs_mode": given, "lang": lang}
    at = open_with("pages/step_by_step.py", params)
    assert not at.exception, [e.value for e in at.exception]
    assert at.radio(key="sbs_mode").value == "real"
    assert at.query_params["sbs_mode"] == shown
    with i18n.use(lang):
        assert i18n.in_this_language(given) == shown


def test_tokens_and_typed_text_are_never_translated():
    """A sentence's token that is also a catalogue word ("key", "head") stays as typed."""
    from attnviz import i18n
    from attnviz.ui import urlstate

    with i18n.use("zh"):
        assert i18n.in_this_language("Head") == "头"  # a catalogue text is translated...
        assert i18n.in_this_language("saw #2") == "saw #2"  # ... anything else is not
    assert {"text", "pair", "sim_b", "win_token", "ins_query", "lang"} <= urlstate.NOT_TRANSLATED


def test_a_link_is_cleaned_by_dropping_and_translating_its_values():
    """What sanitize changes in a link ({key: [values]}): unusable values dropped, options in
    another language translated, sentences and tokens kept as typed; a clean link: nothing."""
    from attnviz import i18n

    link = {"pos_seed": ["inf"], "ex_head": [""], "sbs_mode": ["real"], "text": ["real"],
            "ins_query": ["Head"], "layer": ["3"]}
    with i18n.use("zh"):
        assert urlstate.cleaned(link) == (["ex_head", "pos_seed"], {"sbs_mode": ["真实"]})
    assert urlstate.cleaned(link) == (["ex_head", "pos_seed"], {})
    assert urlstate.cleaned({"layer": ["3"], "text": ["inf"]}) == ([], {})


def test_a_hostile_link_is_run_once_more_and_a_clean_one_once(monkeypatch):
    """The router reruns (before any widget) only when it changed the link, and stays on the
    page the link names."""
    import importlib

    sidebar = importlib.import_module("attnviz.ui.sidebar")  # the module (ui.sidebar: a function)
    runs = []
    real = sidebar.sidebar
    monkeypatch.setattr(sidebar, "sidebar", lambda **kw: runs.append(1) or real(**kw))
    at = open_with("pages/positions.py", {})
    assert not at.exception and runs == [1]
    runs.clear()
    at = open_with("pages/positions.py", {"pos_seed": "inf", "pos_n": "1e999"})
    assert not at.exception and runs == [1]  # drawn once: the first run stopped at the link
    assert at.title[0].value == "What positional encoding does"
    assert "pos_seed" not in at.query_params and "pos_n" not in at.query_params
    assert at.number_input(key="pos_seed").value == 0


@pytest.mark.parametrize("lang,given", [("en", "smollm2"), ("zh", "smollm2"), ("en", "SmolLM2")])
def test_a_link_naming_the_bundled_model_opens_it(lang, given):
    """`?model=smollm2`, the short form a teacher types into a shared link, opens SmolLM2: a
    bound select box reads its link as the shown label, which dropped the engine name (BERT)."""
    from attnviz import i18n

    with i18n.use(lang):
        label = i18n.gettext(CHOICES[SMOLLM2])
        assert urlstate.cleaned({MODEL_KEY: [given]}) == ([], {MODEL_KEY: [label]})
    params = {MODEL_KEY: given} if lang == "en" else {MODEL_KEY: given, "lang": lang}
    at = open_with("pages/windows.py", params)
    assert not at.exception, [e.value for e in at.exception]
    assert at.selectbox(key=MODEL_KEY).value == SMOLLM2
    assert at.query_params[MODEL_KEY] == label
    shown = [c.value.replace("\\", "") for c in at.sidebar.caption]  # Markdown-escaped
    assert any(c.startswith("SmolLM2-135M-Instruct") and ("30 layers x 9 heads" in c or
               "30 层 x 9 个头" in c) for c in shown), shown


def test_other_model_values_are_left_to_streamlit():
    assert urlstate.cleaned({MODEL_KEY: ["gpt2"]}) == ([], {})
    assert urlstate.cleaned({"sbs_mode": ["smollm2"]}) == ([], {})
