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

from . import html as export

ROOT = Path(__file__).resolve().parents[2]
APP = ROOT / "app.py"


@dataclass(frozen=True)
class ViewSpec:
    """One page of the pack: the app page to run and the session state to run it with."""

    page: str  # "pages/x.py"
    title: str
    state: dict = field(default_factory=dict)


def lesson_views() -> list[ViewSpec]:
    """Every step of the lesson, its answer shown."""
    from ..analysis import lesson

    reveal = {f"lesson_reveal_{s.key}": True for s in lesson.STEPS}
    n = len(lesson.STEPS)
    return [ViewSpec("pages/lesson.py", f"Lesson {i}/{n}: {s.title}",
                     {"lesson_step": i, **reveal}) for i, s in enumerate(lesson.STEPS, 1)]


def walkthrough_views() -> list[ViewSpec]:
    """Every step of "Self-attention step by step" (the toy numbers, as the page opens)."""
    steps = {1: "Vectors", 2: "Queries, keys, values", 3: "Similarity",
             4: "Scale, temperature", 5: "Softmax", 6: "Weighted sum", 7: "Multi-head",
             8: "Why softmax"}
    return [ViewSpec("pages/step_by_step.py", f"Step by step {k}: {name}", {"sbs_step": k})
            for k, name in steps.items()]


def views(n_layers: int) -> list[ViewSpec]:
    """The pack's views in teaching order."""
    return [
        *lesson_views(),
        *walkthrough_views(),
        ViewSpec("pages/positions.py", "Positional encoding"),
        ViewSpec("pages/windows.py", "Windows and receptive fields"),
        *(ViewSpec("pages/layer_heads.py", f"Heads of layer {i}", {"layer": i})
          for i in range(n_layers)),
        ViewSpec("pages/head_stats.py", "Head statistics, rollout and flow"),
        ViewSpec("pages/value_norms.py", "Weights vs value norms"),
    ]


def run_view(spec: ViewSpec, state: dict, timeout: int = 600):
    """Run one page headless with `state` and the spec's state; its recorded view."""
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
    view.title = spec.title
    view.settings = {k: v for k, v in view.settings.items() if v}
    return view


def build(out_dir: Path | str, text: str, pair: str | None = None, model: str | None = None,
          progress: Callable[[str], None] = print) -> list[Path]:
    """Run every view for `text` (and `pair`, `model`) and write the site into `out_dir`."""
    if not APP.is_file():
        raise ValueError(f"the pack runs the app's pages: {APP} not found (use a checkout)")
    from ..engine import load_model

    state = {"text": text, "pair": pair or ""}
    if model:
        state["model_dir"] = model
    m = load_model(model)
    specs = views(m.n_layers)
    written = []
    for i, spec in enumerate(specs, 1):
        progress(f"[{i}/{len(specs)}] {spec.title}")
        written.append(run_view(spec, state))
    progress(f"writing {len(written)} pages and plotly.min.js to {out_dir}")
    settings = {"sentence": text, **({"second sentence": pair} if pair else {}),
                "model": model or "bundled all-MiniLM-L6-v2"}
    intro = ["A lesson on self-attention exported by attnviz: every page below opens from "
             "disk, with no server and no network. Figures keep their hover; each page "
             "links its numbers (.npz and .csv files in this folder)."]
    return export.write_site(out_dir, written, "attnviz: self-attention, " + text[:60],
                             intro, settings)
