"""The lesson pack: `python -m attnviz html --text "I saw a saw" --out DIR`.

Each view of the pack (a lesson step with its answer, a step of the walkthrough, one layer's
heads, all heads, inside one score, head statistics, positions, windows, value norms,
ablation) is what its app page shows as it opens with the view's settings: the page's own
functions in attnviz.views build it from the same trace (attnviz.engine: load_model,
Model.trace) and the same analysis, so the site holds the pages' figures, text and numbers,
never a second copy of them; attnviz.export.html writes it (index.html, a page per view,
plotly.min.js once). No Streamlit here.

A pack is bounded: its traces read at most PACK_MAX_TOKENS tokens (a view's figures and
numbers grow with the square of the tokens; the pages say how many were dropped), and the
typed text is shown up to PACK_SHOWN_CHARS characters; the index says what was left out.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .. import i18n
from ..i18n import N_, _
from ..views.common import adapted_request, trace_report
from . import html as export

PACK_MAX_TOKENS = 128  # tokens a pack's traces read (the app reads up to the model's positions)
PACK_SHOWN_CHARS = 1000  # characters of the typed text shown on each page


@dataclass
class Pack:
    """What every view of the pack reads: the model, the sentence(s) as its family takes
    them, their traces and the lesson's trained taggers, each computed once."""

    model: object
    text: str
    pair: str | None = None
    traces: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)

    @functools.cached_property
    def adapted(self) -> tuple:
        """(request, notes): the sentence(s) as the model's family takes them."""
        return adapted_request(self.model, self.text, self.pair)

    @property
    def request(self):
        return self.adapted[0]

    def trace(self, **options):
        """The trace of the sentence with these engine options."""
        return self.trace_request(self.request.with_options(**options))

    def trace_request(self, request):
        """The trace of any request."""
        if request not in self.traces:
            self.traces[request] = self.model.trace(request)
        return self.traces[request]

    def once(self, key, compute: Callable):
        """compute() once per key for the whole pack (taggers, their numbers, the sweep)."""
        if key not in self.results:
            self.results[key] = compute()
        return self.results[key]

    def report(self) -> list:
        """What a page says with the sentence's trace (tokens dropped, notes)."""
        return trace_report(self.model, self.trace(), self.adapted[1])


@dataclass(frozen=True)
class ViewSpec:
    """One page of the pack: its title, the function that makes its blocks from the Pack,
    and the settings it is shown with (as the app's URL holds them)."""

    title: str  # in the language the views were listed in (see build)
    make: Callable[[Pack], list]
    params: dict = field(default_factory=dict)


def lesson_view(p: Pack, step: int) -> list:
    """One step of the lesson, its answer shown, with the page's default training settings;
    the taggers and the sweep over seeds are read once for the pack from the app's cache
    folder (the same bits the app shows), or trained there by the first step that shows them."""
    from ..analysis import taggers
    from ..settings import settings as app_settings
    from ..views import lesson

    settings = taggers.Settings()
    folder = app_settings().cache_path / "lesson"  # what the app keeps (ui.lesson.kept_folder)
    trained = lambda: p.once("taggers", lambda: taggers.kept_or_trained(  # noqa: E731
        settings, folder))
    return lesson.page(
        p.model, p.trace_request, p.text, step, trained,
        lambda: p.once("lesson_numbers", lambda: lesson.numbers_of(trained())),
        lambda: p.once("lesson_sweep", lambda: taggers.kept_or_swept(settings, folder,
                                                                      trained=trained())),
        settings)


def lesson_views() -> list[ViewSpec]:
    """Every step of the lesson, its answer shown."""
    from ..analysis import lesson

    n = len(lesson.STEPS)
    return [ViewSpec(_("Lesson {i}/{n}: {title}").format(i=i, n=n, title=_(s.title)),
                     lambda p, i=i: lesson_view(p, i), {"lesson_step": i})
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


def positions_view(p: Pack) -> list:
    from ..views import positions

    return positions.page(p.model, p.request, p.trace, report=p.report())


def windows_view(p: Pack) -> list:
    from ..views import windows

    return windows.page(p.model, p.trace, report=p.report())


def layer_heads_view(p: Pack, layer: int) -> list:
    from ..views import layer_heads

    return layer_heads.page(p.trace(), layer, report=p.report())


def explore_view(p: Pack) -> list:
    from ..views import explore

    return explore.page(p.trace(), report=p.report())


def inside_score_view(p: Pack) -> list:
    from ..views import inside_score

    return inside_score.page(p.trace(), report=p.report())


def head_stats_view(p: Pack) -> list:
    from ..views import head_stats

    return head_stats.page(p.trace(), report=p.report())


def value_norms_view(p: Pack) -> list:
    from ..views import value_norms

    return value_norms.page(p.model, p.trace(), report=p.report())


def ablation_view(p: Pack) -> list:
    from ..views import ablation

    if p.request.text is None:
        return ablation.intro()
    return ablation.page(p.model, p.request, report=p.report())


def views(n_layers: int) -> list[ViewSpec]:
    """The pack's views in teaching order, titled in the current language; `params`: the
    view's own settings as the app's URL holds them (a default value is left out there)."""
    return [
        *lesson_views(),
        *walkthrough_views(),
        ViewSpec(_("Positional encoding"), positions_view),
        ViewSpec(_("Windows and receptive fields"), windows_view),
        *(ViewSpec(_("Heads of layer {layer}").format(layer=i),
                   lambda p, i=i: layer_heads_view(p, i), {"layer": i} if i else {})
          for i in range(n_layers)),
        ViewSpec(_("All heads, token lines"), explore_view),
        ViewSpec(_("Inside one score"), inside_score_view),
        ViewSpec(_("Head statistics, rollout and flow"), head_stats_view),
        ViewSpec(_("Weights vs value norms"), value_norms_view),
        ViewSpec(_("Switch it off and see"), ablation_view),
    ]


def shown(text: str) -> str:
    """The typed text as a pack's pages show it: its first PACK_SHOWN_CHARS characters."""
    if len(text) <= PACK_SHOWN_CHARS:
        return text
    return _("{start}… ({n:,} more characters)").format(start=text[:PACK_SHOWN_CHARS],
                                                         n=len(text) - PACK_SHOWN_CHARS)


def settings_line(p: Pack, lang: str, params: dict) -> dict:
    """The settings a view is shown with: the sentence(s), the language, the view's own."""
    out = {_("sentence"): shown(p.text)}
    if p.pair:
        out[_("second sentence")] = shown(p.pair)
    return {**out, "lang": i18n.LANGUAGES[lang], **params}


def build(out_dir: Path | str, text: str, pair: str | None = None, model: str | None = None,
          progress: Callable[[str], None] = print, lang: str = i18n.DEFAULT,
          replace: bool = False) -> list[Path]:
    """Make every view for `text` (and `pair`, `model`) and write the site into `out_dir`, in
    the language `lang` ("en" or "zh": pages, titles, index); file names stay English.
    `out_dir` is checked before anything is made (export.check_out_dir; `replace`: write
    over the files of a folder attnviz did not write)."""
    if lang not in i18n.LANGUAGES:
        raise ValueError(f"--lang must be one of {', '.join(i18n.LANGUAGES)}, not {lang!r}")
    out = export.check_out_dir(out_dir, replace)
    with i18n.use(lang):
        return _build(out, text, pair, model, progress, lang, replace)


def _build(out_dir: Path, text: str, pair: str | None, model: str | None,
           progress: Callable[[str], None], lang: str, replace: bool) -> list[Path]:
    from ..engine import load_model

    p = Pack(load_model(model, max_tokens=PACK_MAX_TOKENS), text, pair or None)
    specs = views(p.model.n_layers)
    with i18n.use("en"):  # the same file names in every language
        slugs = [export.slug(s.title) for s in views(p.model.n_layers)]
    written = []
    for i, (spec, name) in enumerate(zip(specs, slugs, strict=True), 1):
        progress(f"[{i}/{len(specs)}] {spec.title}")
        written.append(export.View(spec.title, spec.make(p),
                                   settings_line(p, lang, spec.params), name))
    progress(f"writing {len(written)} pages and plotly.min.js to {out_dir}")
    settings = {_("sentence"): shown(text), **({_("second sentence"): shown(pair)} if pair else {}),
                _("model"): model or _("bundled all-MiniLM-L6-v2")}
    intro = [_("A lesson on self-attention exported by attnviz: every page below opens from "
               "disk, with no server and no network. Figures keep their hover; each page "
               "links its numbers (.npz and .csv files in this folder).")]
    dropped = p.trace().dropped
    if dropped:
        intro.append(_("The text is longer than a lesson pack reads: its pages show its first "
                       "{n} tokens; {dropped:,} tokens at the end were left out (the app reads "
                       "up to the model's {positions} positions).").format(
            n=p.model.max_positions, dropped=dropped, positions=p.model.model_positions))
    return export.write_site(out_dir, written, _("attnviz: self-attention, {text}").format(
        text=text[:60]), intro, settings, replace=replace)
