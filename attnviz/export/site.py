"""The lesson pack: `python -m attnviz html --text "I saw a saw" --out DIR`.

Each view of the pack (a lesson step with its answer, a step of the walkthrough, one layer's
heads, head statistics, positions, windows, value norms) is what its app page shows as it
opens with the view's settings: the same functions of attnviz.views build it from the same
trace (attnviz.engine: load_model, Model.trace) and the same analysis, so the site holds the
pages' own figures, text and numbers, never a second copy of them; attnviz.export.html writes
it (index.html, a page per view, plotly.min.js once). No Streamlit here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import i18n
from ..i18n import N_, _
from . import html as export


@dataclass
class Pack:
    """What every view of the pack reads: the model, the sentence(s) as its family takes
    them, their traces (each computed once) and the lesson's trained taggers."""

    model: object
    text: str
    pair: str | None = None
    traces: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)
    lang: str = i18n.DEFAULT
    folder: str | None = None

    @property
    def request(self):
        from ..views.common import adapted_request

        return adapted_request(self.model, self.text, self.pair)[0]

    @property
    def notes(self) -> tuple:
        from ..views.common import adapted_request

        return adapted_request(self.model, self.text, self.pair)[1]

    def trace(self, **options):
        """The trace of the sentence with these engine options (once per request)."""
        request = self.request.with_options(**options)
        if request not in self.traces:
            self.traces[request] = self.model.trace(request)
        return self.traces[request]

    def once(self, key, compute: Callable):
        """compute() once per key for the whole pack (taggers, sweeps...)."""
        if key not in self.results:
            self.results[key] = compute()
        return self.results[key]

    def report(self) -> list:
        """What a page says with the sentence's trace (tokens dropped, notes)."""
        from ..views.common import trace_report

        return trace_report(self.model, self.trace(), self.notes)


@dataclass(frozen=True)
class ViewSpec:
    """One page of the pack: its title, the function that makes its blocks from the Pack,
    and the settings it is shown with (as the app's URL would hold them)."""

    title: str  # in the language the views were listed in (see build)
    make: Callable[[Pack], list]
    params: dict = field(default_factory=dict)


def lesson_views() -> list[ViewSpec]:
    """Every step of the lesson, its answer shown."""
    from ..analysis import lesson

    n = len(lesson.STEPS)
    reveal = {f"lesson_reveal_{s.key}": True for s in lesson.STEPS}
    return [ViewSpec(_("Lesson {i}/{n}: {title}").format(i=i, n=n, title=_(s.title)),
                     lambda p, i=i: legacy(p, "pages/lesson.py", {"lesson_step": i, **reveal}),
                     {"lesson_step": i})
            for i, s in enumerate(lesson.STEPS, 1)]


WALKTHROUGH = {1: N_("Vectors"), 2: N_("Queries, keys, values"), 3: N_("Similarity"),
               4: N_("Scale, temperature"), 5: N_("Softmax"), 6: N_("Weighted sum"),
               7: N_("Multi-head"), 8: N_("Why softmax")}


def walkthrough_views() -> list[ViewSpec]:
    """Every step of "Self-attention step by step" (the toy numbers, as the page opens)."""
    from ..views import step_by_step

    return [ViewSpec(_("Step by step {k}: {name}").format(k=k, name=_(name)),
                     lambda p, k=k: step_by_step.page(p.text, k),
                     {"sbs_step": k} if k != 1 else {})
            for k, name in WALKTHROUGH.items()]


def layer_heads_view(p: Pack, layer: int) -> list:
    from ..views import layer_heads

    return layer_heads.page(p.trace(), layer, report=p.report())


def head_stats_view(p: Pack) -> list:
    from ..views import head_stats

    return head_stats.page(p.trace(), report=p.report())


def value_norms_view(p: Pack) -> list:
    from ..views import value_norms

    return value_norms.page(p.model, p.trace(), report=p.report())


def positions_view(p: Pack) -> list:
    from ..views import positions

    return positions.page(p.model, p.request, p.trace, report=p.report())


def windows_view(p: Pack) -> list:
    from ..views import windows

    return windows.page(p.model, p.trace, report=p.report())


def legacy(p: Pack, page: str, state: dict) -> list:
    """A page not yet described by attnviz.views: run in AppTest and recorded."""
    import logging

    from streamlit.testing.v1 import AppTest

    from ..ui import recorder

    for name in list(logging.root.manager.loggerDict):
        if name.startswith("streamlit"):
            logging.getLogger(name).setLevel(logging.ERROR)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"),
                           default_timeout=600)
    for key, value in {"text": p.text, "pair": p.pair or "", "lang": p.lang,
                       **({"model_dir": p.folder} if p.folder else {}), **state}.items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page)
    at.run()
    if at.exception:
        raise RuntimeError(f"{page} failed: {at.exception[0].value}")
    return at.session_state[recorder.STATE_KEY].view().blocks


def views(n_layers: int) -> list[ViewSpec]:
    """The pack's views in teaching order, titled in the current language."""
    return [
        *lesson_views(),
        *walkthrough_views(),
        ViewSpec(_("Positional encoding"), positions_view),
        ViewSpec(_("Windows and receptive fields"), windows_view),
        *(ViewSpec(_("Heads of layer {layer}").format(layer=i),
                   lambda p, i=i: layer_heads_view(p, i), {"layer": i} if i else {})
          for i in range(n_layers)),
        ViewSpec(_("Head statistics, rollout and flow"), head_stats_view),
        ViewSpec(_("Weights vs value norms"), value_norms_view),
    ]


def settings_line(p: Pack, lang: str, params: dict) -> dict:
    """The settings a view is shown with: the sentence(s), the language, the view's own."""
    out = {_("sentence"): p.text}
    if p.pair:
        out[_("second sentence")] = p.pair
    return {**out, "lang": i18n.LANGUAGES[lang], **params}


def build(out_dir: Path | str, text: str, pair: str | None = None, model: str | None = None,
          progress: Callable[[str], None] = print, lang: str = i18n.DEFAULT) -> list[Path]:
    """Make every view for `text` (and `pair`, `model`) and write the site into `out_dir`, in
    the language `lang` ("en" or "zh": pages, titles, index); file names stay English."""
    if lang not in i18n.LANGUAGES:
        raise ValueError(f"--lang must be one of {', '.join(i18n.LANGUAGES)}, not {lang!r}")
    with i18n.use(lang):
        return _build(Path(out_dir), text, pair, model, progress, lang)


def _build(out_dir: Path, text: str, pair: str | None, model: str | None,
           progress: Callable[[str], None], lang: str) -> list[Path]:
    from ..engine import load_model

    p = Pack(load_model(model), text, pair or None, lang=lang, folder=model)
    specs = views(p.model.n_layers)
    with i18n.use("en"):  # the same file names in every language
        slugs = [export.slug(s.title) for s in views(p.model.n_layers)]
    written = []
    for i, (spec, name) in enumerate(zip(specs, slugs, strict=True), 1):
        progress(f"[{i}/{len(specs)}] {spec.title}")
        written.append(export.View(spec.title, spec.make(p),
                                   settings_line(p, lang, spec.params), name))
    progress(f"writing {len(written)} pages and plotly.min.js to {out_dir}")
    settings = {_("sentence"): text, **({_("second sentence"): pair} if pair else {}),
                _("model"): model or _("bundled all-MiniLM-L6-v2")}
    intro = [_("A lesson on self-attention exported by attnviz: every page below opens from "
               "disk, with no server and no network. Figures keep their hover; each page "
               "links its numbers (.npz and .csv files in this folder).")]
    return export.write_site(out_dir, written, _("attnviz: self-attention, {text}").format(
        text=text[:60]), intro, settings)
