"""Serving settings for a classroom (issue 8) and a scan of the code for unsafe calls.

Checks `.streamlit/config.toml` (file watcher off, XSRF on, no error details to users, small
upload and message limits), that Streamlit itself reads those values from the file, and that no
Python file in the project renders user text as HTML (`unsafe_allow_html=True`, `st.html`,
components' html) or loads a model from anywhere but a local folder (`from_pretrained` without
`local_files_only=True`, `trust_remote_code=True`). The scan reads the syntax tree (ast), so a
string that merely mentions these names (as in this file) is not a hit.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path

import pytest

from tests.fresh import last_line

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / ".streamlit" / "config.toml"
SKIP_DIRS = {".venv", "venv", ".git", "build", "dist", "test-output", "node_modules",
             "__pycache__", ".pytest_cache", ".ruff_cache", "assets"}

MAX_UPLOAD_MB = 10  # attnviz takes no uploads; Streamlit's default is 200
MAX_MESSAGE_MB = 100  # a 512-token overview fits; Streamlit's default is 200


@pytest.fixture(scope="module")
def cfg() -> dict:
    return tomllib.loads(CONFIG.read_text(encoding="utf-8"))


def test_config_values(cfg):
    server, client = cfg["server"], cfg["client"]
    assert server["fileWatcherType"] == "none"
    assert server["enableXsrfProtection"] is True
    assert server.get("enableCORS", True) is True
    assert server.get("runOnSave", False) is False
    assert server["headless"] is True
    assert client["showErrorDetails"] == "none"
    assert 0 < server["maxUploadSize"] <= MAX_UPLOAD_MB
    assert 0 < server["maxMessageSize"] <= MAX_MESSAGE_MB
    assert cfg.get("browser", {}).get("gatherUsageStats") is False
    # Streamlit's default full gc.collect(2) after every rerun held the GIL for ~150 ms with
    # torch, transformers and the figure caches loaded: every other session waited (make load).
    assert cfg["runner"]["postScriptGC"] is False
    # plotly.js is a file the app serves (static/, ui.live_chart), which a browser fetches
    # once and keeps, never bytes on each session's websocket.
    assert server["enableStaticServing"] is True


def test_config_keys_are_real_streamlit_options(cfg):
    """A misspelt key is silently ignored by Streamlit; every key must be a known option."""
    from streamlit import config

    known = set(config.get_config_options())
    keys = [f"{section}.{name}" for section, opts in cfg.items() for name in opts]
    unknown = [k for k in keys if k not in known]
    assert not unknown, f"unknown Streamlit options in config.toml: {unknown}"


def test_streamlit_reads_the_config_file():
    """Streamlit, started in the repo folder, sees the file's values (not its defaults)."""
    code = (
        "import json; from streamlit import config; config.get_config_options(force_reparse=True);"
        "print(json.dumps({k: config.get_option(k) for k in ['server.fileWatcherType',"
        "'server.enableXsrfProtection','client.showErrorDetails','server.maxUploadSize',"
        "'server.maxMessageSize']}))"
    )
    got = json.loads(last_line(code, timeout=120))
    assert got["server.fileWatcherType"] == "none"
    assert got["server.enableXsrfProtection"] is True
    assert got["client.showErrorDetails"] == "none"
    assert got["server.maxUploadSize"] <= MAX_UPLOAD_MB
    assert got["server.maxMessageSize"] <= MAX_MESSAGE_MB


# ------------------------------------------------------------------------- code scan
def python_files() -> list[Path]:
    """The project's own .py files: the skipped folders, hidden folders (local tooling, not the
    app) and .egg-info are not entered at all (the virtual environment holds thousands)."""
    files = []
    for folder, subfolders, names in os.walk(ROOT):
        subfolders[:] = [d for d in subfolders if not (
            d in SKIP_DIRS or d.endswith(".egg-info") or d.startswith("."))]
        files += [Path(folder) / n for n in names if n.endswith(".py")]
    return sorted(files)


def _is_true(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _dotted(node: ast.AST) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def unsafe_calls(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) for each call that renders raw HTML or trusts a remote model."""
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _dotted(node.func)
        kw = {k.arg: k.value for k in node.keywords}
        if "unsafe_allow_html" in kw and not (
            isinstance(kw["unsafe_allow_html"], ast.Constant)
            and kw["unsafe_allow_html"].value is False
        ):
            hits.append((node.lineno, f"{name}(unsafe_allow_html=...)"))
        if name in ("st.html", "streamlit.html") or name.endswith("components.html") \
                or name.endswith("components.v1.html"):
            hits.append((node.lineno, f"{name}(...)"))
        if name.endswith("component") and "html" in kw and not (
            isinstance(kw["html"], ast.Constant) and kw["html"].value is None
        ):  # a v2 component's html is put into the page as markup
            hits.append((node.lineno, f"{name}(html=...)"))
        if "trust_remote_code" in kw and not (
            isinstance(kw["trust_remote_code"], ast.Constant)
            and kw["trust_remote_code"].value is False
        ):
            hits.append((node.lineno, f"{name}(trust_remote_code=...)"))
        if name.endswith("from_pretrained") and not _is_true(kw.get("local_files_only")):
            hits.append((node.lineno, f"{name}(...) without local_files_only=True"))
    return hits


def test_scan_finds_what_it_looks_for():
    """The scanner itself: each unsafe pattern is caught, the safe forms are not."""
    bad = ast.parse(
        "st.markdown(x, unsafe_allow_html=True)\nst.html(x)\n"
        "components.v1.html(x)\nAutoModel.from_pretrained(p)\n"
        "AutoModel.from_pretrained(p, local_files_only=True, trust_remote_code=True)\n"
        "st.write(x, unsafe_allow_html=flag)\nst.components.v2.component('c', html=x)\n"
    )
    assert len(unsafe_calls(bad)) == 7
    good = ast.parse(
        "st.markdown(x)\nst.markdown(x, unsafe_allow_html=False)\n"
        "BertModel.from_pretrained(p, local_files_only=True)\ns = 'st.html(x)'\n"
        "v2.component('c', js=JS)\n"
    )
    assert unsafe_calls(good) == []


# Every call unsafe_calls reports names one of these words (its function or a keyword).
NEEDLES = ("html", "trust_remote_code", "from_pretrained")


def test_no_unsafe_html_or_remote_models_in_code():
    files = python_files()
    assert any(f.name == "app.py" for f in files) and len(files) > 10
    found = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        if not any(word in text for word in NEEDLES):
            continue  # none of the calls unsafe_calls finds can be in it
        for line, what in unsafe_calls(ast.parse(text)):
            if (f.relative_to(ROOT).as_posix(), what) not in ALLOWED:
                found.append(f"{f.relative_to(ROOT)}:{line}: {what}")
    assert not found, "unsafe calls:\n" + "\n".join(found)


# The one exception: the page styles hand constant CSS to st.html (checked below).
ALLOWED = {("attnviz/ui/style.py", "st.html(...)")}


def test_page_styles_are_constant_css():
    """ui/style.py's st.html gets a <style> block made of the module's constant strings only:
    no markup inside them, and a name not in the table is refused."""
    from attnviz.ui import style

    assert style.STYLES
    for name, text in style.STYLES.items():
        assert "<" not in text and ">" not in text, name
    block = style.css(*style.STYLES)
    assert block.startswith("<style>") and block.endswith("</style>")
    assert block.count("<") == 2
    with pytest.raises(KeyError):
        style.css("<script>alert(1)</script>")
    tree = ast.parse((ROOT / "attnviz/ui/style.py").read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and _dotted(n.func) == "st.html"]
    assert len(calls) == 1
    arg = calls[0].args[0]
    assert isinstance(arg, ast.Call) and _dotted(arg.func) == "css"


def test_theme_follows_the_viewer(cfg):
    """No forced base theme: Streamlit follows the system's light/dark and its Settings switch
    (figures take their background, fonts and grid from it: plotting writes none)."""
    assert "base" not in cfg.get("theme", {})
