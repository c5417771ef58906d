"""The lesson pack: `python -m attnviz html --text "I saw a saw" --out DIR`.

Each view (a lesson step, a step of the walkthrough, one layer's heads, head statistics,
positions, windows...) is the app's own page, run headless in Streamlit's AppTest with the
view's settings in its session state, and recorded by attnviz.ui.recorder exactly as the
"Download this view (HTML)" button records it. So the site shows the pages' own figures,
text and numbers, made by the same analysis and plotting calls, never a second copy of them;
attnviz.export.html writes it (index.html, a page per view, plotly.min.js once).

The pages live in the repository (app.py, pages/); the pack is built from a checkout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import i18n
from ..i18n import N_, _
from . import html as export

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"


@dataclass(frozen=True)
class ViewSpec:
    """One page of the pack: the app page to run and the session state to run it with."""

    page: str  # "pages/x.py"
    title: str  # in the language the views were listed in (see build)
    state: dict = field(default_factory=dict)


def lesson_views() -> list[ViewSpec]:
    """Every step of the lesson, its answer shown."""
    from ..analysis import lesson

    reveal = {f"lesson_reveal_{s.key}": True for s in lesson.STEPS}
    n = len(lesson.STEPS)
    return [ViewSpec("pages/lesson.py", _("Lesson {i}/{n}: {title}").format(
        i=i, n=n, title=_(s.title)), {"lesson_step": i, **reveal})
        for i, s in enumerate(lesson.STEPS, 1)]


def walkthrough_views() -> list[ViewSpec]:
    """Every step of "Self-attention step by step" (the toy numbers, as the page opens)."""
    steps = {1: N_("Vectors"), 2: N_("Queries, keys, values"), 3: N_("Similarity"),
             4: N_("Scale, temperature"), 5: N_("Softmax"), 6: N_("Weighted sum"),
             7: N_("Multi-head"), 8: N_("Why softmax")}
    return [ViewSpec("pages/step_by_step.py", _("Step by step {k}: {name}").format(
        k=k, name=_(name)), {"sbs_step": k}) for k, name in steps.items()]


def views(n_layers: int) -> list[ViewSpec]:
    """The pack's views in teaching order, titled in the current language."""
    return [
        *lesson_views(),
        *walkthrough_views(),
        ViewSpec("pages/positions.py", _("Positional encoding")),
        ViewSpec("pages/windows.py", _("Windows and receptive fields")),
        *(ViewSpec("pages/layer_heads.py", _("Heads of layer {layer}").format(layer=i),
                   {"layer": i}) for i in range(n_layers)),
        ViewSpec("pages/head_stats.py", _("Head statistics, rollout and flow")),
        ViewSpec("pages/value_norms.py", _("Weights vs value norms")),
    ]


def run_view(spec: ViewSpec, state: dict, timeout: int = 600, slug: str = "view"):
    """Run one page headless with `state` and the spec's state; its recorded view (its file
    named `slug`). The page's language is the state's "lang" (English without one)."""
    from streamlit.testing.v1 import AppTest

    from ..ui import recorder
    from ..ui.router import DEFAULT_PAGE

    for name in list(logging.root.manager.loggerDict):  # no "missing context" notes
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    for key, value in {**state, **spec.state}.items():
        at.session_state[key] = value
    at.run()
    if spec.page != DEFAULT_PAGE:
        at.switch_page(spec.page)
        at.run()
    if at.exception:
        raise RuntimeError(f"{spec.page} failed: {at.exception[0].value}")
    rec = at.session_state[recorder.STATE_KEY]
    view = rec.view()
    view.title, view.slug = spec.title, slug
    view.settings = {k: v for k, v in view.settings.items() if v}
    return view


def build(out_dir: Path | str, text: str, pair: str | None = None, model: str | None = None,
          progress: Callable[[str], None] = print, lang: str = i18n.DEFAULT) -> list[Path]:
    """Run every view for `text` (and `pair`, `model`) and write the site into `out_dir`, in
    the language `lang` ("en" or "zh": pages, titles, index); file names stay English."""
    if lang not in i18n.LANGUAGES:
        raise ValueError(f"--lang must be one of {', '.join(i18n.LANGUAGES)}, not {lang!r}")
    with i18n.use(lang):
        return _build(Path(out_dir), text, pair, model, progress, lang)


def _build(out_dir: Path, text: str, pair: str | None, model: str | None,
           progress: Callable[[str], None], lang: str) -> list[Path]:
    if not APP.is_file():
        raise ValueError(f"the pack runs the app's pages: {APP} not found (use a checkout)")
    from ..engine import load_model

    state = {"text": text, "pair": pair or "", "lang": lang}
    if model:
        state["model_dir"] = model
    m = load_model(model)
    specs = views(m.n_layers)
    with i18n.use("en"):  # the same file names in every language
        slugs = [export.slug(s.title) for s in views(m.n_layers)]
    written = []
    for i, (spec, name) in enumerate(zip(specs, slugs, strict=True), 1):
        progress(f"[{i}/{len(specs)}] {spec.title}")
        written.append(run_view(spec, state, slug=name))
    progress(f"writing {len(written)} pages and plotly.min.js to {out_dir}")
    settings = {_("sentence"): text, **({_("second sentence"): pair} if pair else {}),
                _("model"): model or _("bundled all-MiniLM-L6-v2")}
    intro = [_("A lesson on self-attention exported by attnviz: every page below opens from "
               "disk, with no server and no network. Figures keep their hover; each page "
               "links its numbers (.npz and .csv files in this folder).")]
    return export.write_site(out_dir, written, _("attnviz: self-attention, {text}").format(
        text=text[:60]), intro, settings)
