"""Windows and receptive fields (pages/windows.py): truncated self-attention (the lecture's
speech example) vs full and causal, receptive fields across depth vs a 1-D CNN, how much
context BERT uses (with [CLS]/[SEP] kept visible or not), and the measured cost of full vs
windowed attention.

Numbers: Traces with `window=` / `causal=` (their `mask`), analysis.receptive (gradient
fields), analysis.windows (context sweeps, the weight on [CLS]/[SEP]), analysis.cost (the
measurements are passed in: the page times them once per server); figures: plotting.windows.

`trace_of(**options)` below is the page's way to the sentence's trace with other engine
options (the app's cached ctx.trace, the pack's Pack.trace)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..analysis import cost, receptive
from ..analysis import windows as win
from ..analysis.common import special_mask
from ..engine import TraceRequest
from ..engine.trace import START_TOKENS
from ..i18n import N_, _
from ..plotting import windows as plots
from ..plotting.common import axis_labels
from .blocks import Heading, Markdown, Table
from .common import literal, not_bert_like, numbers

PASSAGE = ("I saw a saw in the shed, so I took the saw and cut the old board in two "
           "before the rain came.")
TABS = (N_("Masks and weights"), N_("Receptive fields"), N_("How much context?"),
        N_("Long sequences: cost"))
METHOD_NAMES = {"full": N_("full"), "masked": N_("masked"), "windowed": N_("windowed")}
COST_COLUMNS = {"length": N_("length"), "window": N_("window"), "method": N_("method"),
                "seconds": N_("seconds"), "median_seconds": N_("median seconds")}
KEPT, PLAIN = N_("[CLS]/[SEP] kept visible"), N_("plain window")  # shown through _()
SOURCES = {"passage": N_("a longer passage"), "sidebar": N_("sidebar sentence")}


def intro() -> list:
    return [Heading(_("Windows and receptive fields"), 1), Markdown(_(
        "Truncated self-attention (the lecture's speech example) lets query $i$ see only the "
        "keys $j$ with $|i-j| \\le w$: $\\alpha'_{i,j} = \\mathrm{softmax}_{|i-j|\\le w}"
        "(q^i\\cdot k^j/\\sqrt{d_k})$. A decoder's causal mask keeps $j \\le i$.\n\n"
        "The lecture's slogan: *a CNN is self-attention that can only attend within a "
        "receptive field; self-attention is a CNN whose field is learned.* The paper it cites "
        "proves something narrower (Cordonnier, Loukas & Jaggi 2020, Theorem 1): a multi-head "
        "self-attention layer with $k^2$ heads and a relative positional encoding can express "
        "any $k\\times k$ convolution. One windowed head is not a convolution: it mixes one "
        "projection of the inputs with scalar weights, $b^i = \\sum_{|i-j|\\le w} "
        "\\alpha'_{i,j}\\, W^v a^j$, where a convolution applies its own matrix to each "
        "offset. What this page compares is the field: where information can come from."
    ))]


def bert_only(model) -> list:
    """[] for a BERT-like model, else why the first three tabs are not shown for it."""
    return not_bert_like(model, _("This tab"))


# ------------------------------------------------------------------ masks and weights
def mask_traces(trace_of: Callable, w: int) -> dict:
    """{English name: trace} for full, windowed (±w) and causal attention."""
    return {"full": trace_of(), f"window ±{w}": trace_of(window=w),
            "causal": trace_of(causal=True)}


def masks_figure(t, traces: dict, w: int, layer: int, head: int):
    shown = dict(zip(traces, (_("full"), _("window ±{w}").format(w=w), _("causal")),
                     strict=True))
    return plots.masks_and_weights(
        t.tokens, {shown[k]: v.mask for k, v in traces.items()},
        {shown[k]: v.weights[layer, head] for k, v in traces.items()},
        _("Layer {layer}, head {head}: each mask, then the weights α' it gives").format(
            layer=layer, head=head))


def masks_note() -> Markdown:
    return Markdown(_("Rows are queries, columns keys. Outside the blue cells the weight is "
                      "exactly 0 (its score became -inf before the softmax) and every row still "
                      "sums to 1. These windows hide [CLS] and [SEP] from tokens farther than "
                      "w, as a plain window does; *How much context?* also tries keeping them "
                      "visible."), "caption")


def masks_download(t, traces: dict, layer: int, head: int):
    masks = {k: v.mask for k, v in traces.items()}  # English names: the download's
    weights = {k: v.weights[layer, head] for k, v in traces.items()}
    return numbers(_("Download masks and weights (.npz)"), {
        "tokens": t.tokens, **{f"mask_{i}": m for i, m in enumerate(masks.values())},
        **{f"weights_{i}": x for i, x in enumerate(weights.values())},
        "names": list(masks)}, f"attnviz_windows_L{layer}H{head}.npz")


def masks_tab(t, trace_of: Callable, w: int, layer: int, head: int) -> list:
    """The first tab (its widgets left out)."""
    traces = mask_traces(trace_of, w)
    return [masks_figure(t, traces, w, layer, head), masks_note(),
            masks_download(t, traces, layer, head)]


# ------------------------------------------------------------------ receptive fields
def fields_request(request: TraceRequest, source: str) -> TraceRequest:
    """The sidebar's request or the longer passage (`source`: a SOURCES value)."""
    return request if source == SOURCES["sidebar"] else TraceRequest(PASSAGE)


def fields_figure(f: dict, toks: list[str], token: int, w: int):
    return plots.receptive_fields(
        f, toks, token, w, _("Which inputs can change token t at depth l: |∂(r·h_l[t])/∂x_j|, "
                             "r a fixed random unit vector (blank = exactly 0)"))


def fields_note(depth: int, f: dict, n: int, token: int, w: int,
                toks: list[str] | None = None) -> Markdown:
    """The fields' reach in the tokens' numbers (engine.token_labels of `toks`: [CLS] #0,
    words from 1; positions when `toks` is not given)."""
    measured = {k: receptive.field_extent(v)[-1] for k, v in f.items()}
    a, b = receptive.field_extent(receptive.analytic_field("window", n, depth, token, w))[-1]
    shift = 0 if toks is None or (toks and toks[0] in START_TOKENS) else 1

    def number(p: int) -> int:  # clamped ends of the analytic field may lie outside
        return int(p) + shift
    a, b = number(a), number(b)
    reach = _(", ").join(_("{kind} reaches #{lo}..#{hi}").format(
        kind=plots.field_title(k, w), lo=number(lo), hi=number(hi))
        for k, (lo, hi) in measured.items())
    return Markdown(_(
        "At depth {depth}: {reach}. Analytic field of the window and of the CNN (kernel 2w + 1): "
        "t ± l·w = #{a}..#{b}. The gradients are taken along r, one fixed random unit vector, so "
        "a single number per input says whether (and how much) it can change h_l[t]. Inside the "
        "field both models' gradients depend on the input (the CNN's too, through GELU); what "
        "does not depend on the content is the CNN's mixing weights, its kernels, while "
        "attention computes its weights α' from the sentence.").format(
        depth=depth, reach=reach, a=a, b=b), "caption")


def fields_download(toks: list[str], f: dict):
    return numbers(_("Download the gradient fields (.npz)"), {"tokens": toks, **f},
                   "attnviz_receptive_fields.npz")


# ------------------------------------------------------------------ how much context?
# A sweep this short is short work: ~2n windows of n tokens, encoded as one batch per sweep
# (analysis.windows.windows_per_batch), two sweeps well under a second on a quiet machine.
QUICK_SWEEP_TOKENS = 24


def context_sweeps(model, request: TraceRequest, progress: Callable[[float, str], None]) -> dict:
    """{KEPT: sweep, PLAIN: sweep} over w = 0 .. n - 1 (thinned for long inputs)."""
    ids, segments, _offsets = model.tokenize(request.text, request.pair)
    windows = [0, *win.sweep_windows(len(ids))]
    return {name: win.context_sweep(
        model, ids, segments, windows, keep_special=(name == KEPT),
        progress=lambda f, msg, k=k, name=name: progress((k + f) / 2, f"{_(name)}, {msg}"))
        for k, name in enumerate((KEPT, PLAIN))}


def _shown_window(s: dict, main: str, w: int) -> int:
    """The index of the sweep's window closest to w from below (the last one past it)."""
    return int(np.searchsorted(s[main].windows, min(w, s[main].windows[-1])))


def _pair_label(t, s: dict, main: str) -> str:
    names = axis_labels(t.tokens)
    pair = s[main].pair
    return _("{a} and {b}").format(a=names[pair[0]], b=names[pair[1]]) if pair else ""


def context_figure(t, s: dict, kept: bool, w: int):
    main = KEPT if kept else PLAIN
    k = _shown_window(s, main, w)
    return plots.context_curve(
        s[main].windows, {_(name): {"mean": x.mean_cosine, "worst": x.cosine.min(axis=1),
                                    "pair": x.pair_cosine} for name, x in s.items()},
        _(main), s[main].full_pair_cosine, _pair_label(t, s, main), int(s[main].windows[k]),
        _("How far the final vectors move when each token sees only ±w neighbours"))


def context_text(t, s: dict, kept: bool, w: int) -> list:
    main = KEPT if kept else PLAIN
    k = _shown_window(s, main, w)
    share = win.special_share(t.weights, t.tokens)
    even = float(special_mask(t.tokens).mean())
    wk = int(s[main].windows[k])
    a, b = s[KEPT].mean_cosine[k], s[PLAIN].mean_cosine[k]
    gone = (a - b) / (1 - b) if b < 1 else 0.0
    worst = (_("worst token: {worst:.2f} with the specials visible") if kept else
             _("worst token: {worst:.2f} with the plain window")).format(
        worst=s[main].cosine[k].min())
    out = [Markdown(_(
        "With w = {w}, the final vectors keep a mean cosine of **{kept:.2f}** with full "
        "attention when [CLS] and [SEP] stay visible and **{plain:.2f}** with a plain window "
        "({worst}). This BERT's heads put **{share:.0%}** of their weight on [CLS] and [SEP] for "
        "this sentence (mean over layers, heads and queries; {even:.0%} if spread evenly over "
        "the tokens): they serve as a resting place, a *sink*. A plain window cuts most tokens "
        "off them, and keeping them visible removes **{gone:.0%}** of the drop at w = {w}.")
        .format(w=wk, kept=a, plain=b, worst=worst, share=share.mean(), even=even, gone=gone))]
    if s[main].pair is not None:
        out.append(Markdown(_("The pair {pair}: cosine {cos:.3f} with w = {w}, {full:.3f} with "
                              "full attention ({mask}).").format(
            pair=literal(_pair_label(t, s, main)), cos=s[main].pair_cosine[k], w=wk,
            full=s[main].full_pair_cosine, mask=_(main)), "caption"))
    else:
        out.append(Markdown(_("No token appears twice here; try *I saw a saw* to follow the two "
                              "saws."), "info"))
    out.append(Markdown(_("Either way, this BERT was trained with full attention only: any "
                          "window puts it outside its training distribution. These curves show "
                          "how the trained model copes with a mask it never saw, not how much "
                          "context a model trained with a window would need."), "caption"))
    return out


def context_download(t, s: dict, kept: bool):
    main = KEPT if kept else PLAIN
    return numbers(_("Download the sweeps (.npz)"), {
        "tokens": s[main].tokens, "windows": s[main].windows,
        "special_share_per_layer": win.special_share(t.weights, t.tokens),
        **{f"{tag}_{name}": value for tag, x in (("kept", s[KEPT]), ("plain", s[PLAIN]))
           for name, value in (("cosine", x.cosine), ("mean_cosine", x.mean_cosine),
                               *((("pair_cosine", x.pair_cosine),) if x.pair else ()))},
        **({"pair": np.array(s[main].pair)} if s[main].pair else {})},
        "attnviz_context_sweep.npz")


# ------------------------------------------------------------------ long sequences: cost
def cost_intro() -> Markdown:
    return Markdown(_("Speech has ~100 frames per second: attention over a minute is L = 6000. "
                      "This tab times random queries, keys and values (one head, d = 64), not "
                      "BERT: the sentence, w, layer and head of the other tabs do not enter "
                      "here. Full attention vs the windowed implementation that never builds "
                      "the L×L matrix."))


def cost_figure(ms: list, device: str):
    return plots.cost_chart(cost.measurements_table(ms), cost.device_name(device),
                            ms[0].memory_method)


def cost_note() -> Markdown:
    return Markdown(_("Peak memory counts the tensors allocated, so it repeats exactly; times "
                      "are the best of 5 calls and wobble when other programs share the "
                      "processor."), "caption")


def cost_table(ms: list) -> Table:
    """The measurements as shown: methods and headers in the current language, MiB."""
    table = cost.measurements_table(ms)
    shown = {**table, "method": [_(METHOD_NAMES[m]) for m in table["method"]]}
    return Table({**{_(COST_COLUMNS[k]): v for k, v in shown.items() if k != "peak_bytes"},
                  _("peak MiB"): table["peak_bytes"] / 2**20})


def cost_download(ms: list):
    return numbers(_("Download the measurements (.csv)"), cost.measurements_table(ms),
                   "attnviz_window_cost.csv", "csv")


# ------------------------------------------------------------------ the page
def page(model, trace_of: Callable, w: int = 1, layer: int = 0, head: int = 0,
         report=()) -> list:
    """The page as it opens (the first tab), its widgets left out."""
    t = trace_of()
    refused = bert_only(model)
    return [*intro(), *report,
            *(refused or masks_tab(t, trace_of, w, layer, head))]
