"""What pages read: the model and the sidebar's sentence as a `Context`, and the traces and
models behind it, loaded or computed once per server from the cache registry.

    ctx = ui.context()                   # the model + TraceRequest of the typed sentence
    t = ctx.trace(window=1)              # Model.trace(ctx.request.with_options(window=1)),
                                         # cached under (model.key, request)

The model may be of any family the engine reads (BERT, RoBERTa, DistilBERT, GPT-2, ViT,
BART): the Context's request is the one that family takes (a ViT: the demo image; BART: the
sidebar's second sentence as the decoder's target; GPT-2: one text) and `Context.notes` says
what was adapted. What a family cannot do reaches the page as the engine's plain ValueError
(`trace_or_message` shows it). A model folder or Hub id that cannot be opened gets one neutral
message, the same whether it exists or not, with the input shown as typed.

One model per (folder, device), shared read-only by every session; one Trace per
`Trace.key` = (model key, TraceRequest).

`read_context()` only reads the widgets' state (and loads what it names): it draws nothing
but a spinner and never reruns the script. Pages call `ui.context()` (ui.router.context), which
first makes sure the sidebar is there.
"""

from __future__ import annotations

import contextlib
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

import streamlit as st

from attnviz.defaults import DEFAULT_MAX_TOKENS, DEFAULT_TEXT
from attnviz.engine import (
    DECODER,
    ENCODER_DECODER,
    VISION,
    ModelError,
    Trace,
    TraceRequest,
    check_allowed_folder,
    demo_image,
    locate_model,
)
from attnviz.i18n import N_, _
from attnviz.settings import settings
from attnviz.views.common import (  # noqa: F401 - pages and ui read them here too
    BERT_LIKE,
    bert_like,
    needs_every_weight,
    shown_name,
    trace_report,
    why_not_bert_like,
)

if TYPE_CHECKING:  # the model's module imports torch: loaded with the first model
    from attnviz.engine import Model

from ..export.html import Markdown
from .cache import cached, is_cached
from .model_picker import NAMES, bundled_choice
from .render import render
from .text import literal


@dataclass(frozen=True)
class Context:
    """What every page needs: the model and the request for the sidebar's sentence(s)."""

    model: Model | None
    request: TraceRequest  # the typed text and pair as the model takes them, default options
    error: str | None = None  # Markdown-safe (typed input escaped)
    sentence: str = ""  # the sidebar's sentence as typed (also for image models)
    notes: tuple[str, ...] = ()  # plain sentences: how the sidebar's input was adapted

    @property
    def text(self) -> str:
        """The text the model reads (the sidebar's sentence for an image model)."""
        return self.request.text if self.request.text is not None else self.sentence

    @property
    def text_pair(self) -> str | None:
        return self.request.pair

    @property
    def kind(self) -> str:
        """The model's kind: 'encoder', 'decoder', 'encoder-decoder' or 'vision'."""
        return self.model.kind if self.model is not None else "encoder"

    def trace(self, **options) -> Trace:
        """The (cached) trace of the sidebar's sentence under these engine options."""
        return cached_trace(self.model, self.request.with_options(**options))


def cached_model(folder: str | None, device: str) -> Model:
    """The model in `folder` (None: the bundled all-MiniLM-L6-v2; a bundled model's name,
    engine.bundled) on `device`, loaded once per server.

    `folder` must already be resolved (engine.check_allowed_folder) so that every spelling of
    one folder is one cache entry."""
    def load() -> Model:
        from attnviz.engine import load_model

        return load_model(folder, device=device, max_tokens=settings().max_tokens)

    return cached("models", (folder, device), load, waiting=lambda: st.spinner(
        "Loading the model (once per server)..."))


def loading(done: bool, text: str) -> AbstractContextManager:
    """st.spinner(text) unless the value is `done` (cached): Streamlit's spinner starts a
    timer thread each time, a sixth of a light rerun that shows nothing."""
    return contextlib.nullcontext() if done else st.spinner(text)


def cached_trace(model: Model, request: TraceRequest) -> Trace:
    """A shared, read-only Trace: identical requests from any session reuse the work."""
    return cached("traces", (model.key, request), lambda: model.trace(request))


def _clean(text: str | None) -> str:
    return (text or "").replace("\x00", "")


def _shown(text: str, limit: int = 80) -> str:
    """Typed input as the page shows it: literal (no Markdown, KaTeX or HTML), and short."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return literal(text)


BUNDLED_INSTEAD = N_("Showing the bundled model instead.")
DEMO_INSTEAD = N_("Showing a random demo model instead.")


def neutral_refusal(typed: str, fallback: str = BUNDLED_INSTEAD) -> str:
    """The one message for a model name that cannot be opened, whatever the reason on disk:
    the same for a folder that exists and one that does not (Markdown-safe); `fallback` says
    what is shown instead."""
    return _("Model refused: “{name}” is not a checkpoint folder or cached Hub id that this "
             "server can open.").format(name=_shown(typed)) + " " + _(fallback)


def open_checkpoint(typed: str, fallback: str = BUNDLED_INSTEAD) -> str:
    """The resolved folder for a typed folder or Hub id, inside the server's allowed folders
    and holding a config.json; else ModelError(neutral_refusal), which says nothing about what
    exists where."""
    try:
        folder = check_allowed_folder(locate_model(typed))
        if not (folder / "config.json").is_file():
            raise ModelError("no checkpoint")
    except (ModelError, OSError, ValueError):
        raise ModelError(neutral_refusal(typed, fallback)) from None
    return str(folder)


def load_checkpoint(typed: str, device: str, fallback: str = BUNDLED_INSTEAD) -> Model:
    """The model a typed folder or Hub id names, loaded once per server; ModelError with a
    Markdown-safe message (neutral, or the checkpoint's own reason once it is one), ending
    with `fallback` (an N_-marked sentence, shown translated)."""
    folder = open_checkpoint(typed, fallback)
    try:
        with loading(is_cached("models", (folder, device)),
                     _("Loading the model (once per server)...")):
            return cached_model(folder, device)
    except ModelError as e:
        reason = str(e).replace(folder, Path(folder).name)
        raise ModelError(_("Model refused: {reason}.").format(reason=_shown(reason, 300))
                         + " " + _(fallback)) from None
    except Exception as e:  # never a traceback on the page
        raise ModelError(_("Model refused ({error}).").format(error=type(e).__name__)
                         + " " + _(fallback)) from None


KIND_EXAMPLES = {DECODER: N_("a decoder such as GPT-2 (gpt2)"),
                 ENCODER_DECODER: N_("an encoder-decoder such as BART (facebook/bart-base)"),
                 VISION: N_("a vision transformer such as ViT (google/vit-base-patch16-224)"),
                 "encoder": N_("an encoder such as BERT")}  # shown translated


DEMO = {DECODER: ("gpt2", dict(layers=3)), ENCODER_DECODER: ("bart", dict(layers=2)),
        VISION: ("vit", dict(layers=3, image_size=224, patch_size=16))}


def demo_model(kind: str, device: str) -> Model:
    """A small model of `kind` with random weights (engine.random_models), made once per
    server: what a page shows when no trained one is at hand. Its masks, shapes and
    tokenization are the family's; its attention patterns mean nothing."""
    def build() -> Model:
        import shutil
        import tempfile

        from attnviz.engine import load_model
        from attnviz.engine.random_models import save_random_checkpoint

        family, sizes = DEMO[kind]
        folder = Path(tempfile.mkdtemp(prefix="attnviz-demo-"))
        try:
            save_random_checkpoint(family, folder / family, seed=0, hidden=64, heads=4,
                                   intermediate=128, positions=DEFAULT_MAX_TOKENS, **sizes)
            model = load_model(folder / family, device=device,
                               max_tokens=settings().max_tokens)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        model.name = f"random {model.title}"
        return model

    return cached("models", ("demo", kind, device), build, waiting=lambda: st.spinner(
        "Making a small random model (once per server)..."))


def family_model(ctx: Context, kind: str, label: str, key: str) -> tuple[Model, bool]:
    """A model of one kind for a page's section, and whether it is the random demo: the
    folder or Hub id in a box (filled with the sidebar's model when it is of that kind, else
    the first cached one), or, when there is none or it cannot be opened, `demo_model`."""
    from .model_picker import KIND_TYPES, cached_ids

    device = st.session_state.get("device", "auto")
    if key not in st.session_state:
        if ctx.model is not None and ctx.model.kind == kind:
            st.session_state[key] = _clean(st.session_state.get("model_dir")).strip()
        else:
            found = cached_ids(KIND_TYPES[kind])
            st.session_state[key] = found[0][0] if found else ""
    typed = _clean(st.text_input(
        label, key=key, placeholder=_("empty: a random demo model; or a checkpoint folder, or "
                                      "a Hub id in your Hugging Face cache"),
        help=_("Read offline (the sidebar lists your cached models); nothing is downloaded."),
        max_chars=4096,  # a folder path (Linux's PATH_MAX) or a Hub id (ui.boxes)
    )).strip()
    if typed:
        try:
            model = load_checkpoint(typed, device, fallback=DEMO_INSTEAD)
            if model.kind == kind:
                return model, False
            render(Markdown(_("“{typed}” is a {title} ({kind}); this part needs {example}. "
                              "Showing a random demo model instead.").format(
                typed=_shown(typed), title=model.title, kind=model.kind,
                example=_(KIND_EXAMPLES[kind])), "warning"))
        except ModelError as e:
            render(Markdown(str(e), "warning"))
    model = demo_model(kind, device)
    render(Markdown(_("No trained {title} given, so this is a small {title} with random weights "
                      "({layers} layers, {heads} heads): its masks, shapes and tokens are "
                      "{title}'s, its attention patterns mean nothing. For a trained one, type "
                      "{example} above (a folder, or a Hub id in your Hugging Face cache).").format(
        title=model.title, layers=model.n_layers, heads=model.n_heads,
        example=_(KIND_EXAMPLES[kind])), "info"))
    return model, True


def adapted_request(model: Model, text: str, pair: str | None) -> tuple[TraceRequest, tuple]:
    """The sidebar's sentence(s) as this model's family takes them, and what was adapted
    (attnviz.views.common.adapted_request, with the demo image made once per server)."""
    from ..views.common import adapted_request as adapted

    return adapted(model, text, pair, image=_demo_image() if model.kind == VISION else None)


def _demo_image():
    return cached("results", ("demo_image",), demo_image)


def read_context() -> Context:
    """The sentence, model and device chosen in the sidebar, read from the widgets' state."""
    folder = _clean(st.session_state.get("model_dir")).strip() or None
    device = st.session_state.get("device", "auto")
    model, error = None, None
    if folder:
        try:
            model = load_checkpoint(folder, device)
        except ModelError as e:
            error = str(e)
    choice = None if folder else bundled_choice()  # a bundled model other than the default
    if model is None and choice is not None:
        try:
            with loading(is_cached("models", (choice, device)),
                         _("Loading the model (once per server; SmolLM2's 4-bit GGUF file is "
                           "converted on its first use, a minute or two)...")):
                model = cached_model(choice, device)
        except Exception as e:
            error = _("{name} could not be loaded: {error}. Showing all-MiniLM-L6-v2 "
                      "instead.").format(name=_(NAMES[choice]), error=literal(str(e)))
    if model is None:
        try:
            with loading(is_cached("models", (None, device)),
                         _("Loading the model (once per server)...")):
                model = cached_model(None, device)
        except Exception as e:
            error = _("The bundled model could not be loaded: {error}").format(
                error=literal(str(e)))
    text = _clean(st.session_state.get("text", DEFAULT_TEXT))
    pair = _clean(st.session_state.get("pair")).strip() or None
    if model is None:
        return Context(model, TraceRequest(text, pair), error, text)
    request, notes = adapted_request(model, text, pair)
    return Context(model, request, error, text, notes)


def require_text(ctx: Context) -> bool:
    """Show a friendly message and return False when there is nothing to encode."""
    if ctx.model is None:
        render(Markdown(ctx.error or _("No model is loaded."), "error"))
        return False
    if ctx.request.image is None and not ctx.text.strip():
        render(Markdown(_("Type a sentence in the sidebar to begin, e.g. *I saw a saw*."), "info"))
        return False
    return True


def require_bert_like(ctx: Context, what: str) -> bool:
    """True when the loaded model is `bert_like`; else one sentence saying why not, False."""
    if ctx.model is None or bert_like(ctx.model):
        return True
    render(Markdown(why_not_bert_like(ctx.model, what), "info"))
    return False


def trace_or_message(ctx: Context, streams: bool = False, **options) -> Trace | None:
    """The trace for the sidebar's sentence, or None after showing a clear message.
    `streams`: the page reads a trace that does not hold every weight (a long decoder input)
    a layer at a time; a page that does not is told None with a sentence why
    (views.common.needs_every_weight)."""
    if not require_text(ctx):
        return None
    if ctx.error:
        render(Markdown(ctx.error, "warning"))
    try:
        request = ctx.request.with_options(**options)
        with loading(is_cached("traces", (ctx.model.key, request)),
                     _("Running {title}...").format(title=ctx.model.title)):
            t = cached_trace(ctx.model, request)
    except ValueError as e:
        render(Markdown(_("Cannot run {title} on this: {error}").format(
            title=ctx.model.title, error=literal(str(e))), "error"))
        return None
    report(ctx.model, t, ctx.notes)
    if not streams and (refusal := needs_every_weight(ctx.model, t)):
        render(refusal)
        return None
    return t


def report(model: Model, t: Trace, notes=()) -> None:
    """What a page says with a trace: tokens dropped (a warning), then the notes, each in the
    session's language (the engine's notes are N_-marked English msgids, such as a decoder's
    causal mask; a note that is no catalogue text shows as it is)."""
    shown = SimpleNamespace(dropped=t.dropped, notes=tuple(_(note) for note in t.notes))
    render(trace_report(model, shown, tuple(_(note) for note in notes)))
