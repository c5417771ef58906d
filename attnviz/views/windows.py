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

from ..analysis import cost, head_stats, receptive
from ..analysis import windows as win
from ..analysis.common import special_mask
from ..engine import TraceRequest
from ..engine.attention import causal_mask
from ..engine.trace import START_TOKENS
from ..i18n import N_, _
from ..plotting import windows as plots
from ..plotting.common import axis_labels
from .blocks import Heading, Markdown, Table
from .common import literal, model_notes, not_bert_like, numbers, shown_name

PASSAGE = ("I saw a saw in the shed, so I took the saw and cut the old board in two "
           "before the rain came.")
TABS = (N_("Masks and weights"), N_("Receptive fields"), N_("How much context?"),
        N_("Long sequences: cost"), N_("Today's decoders: sliding windows and the sink"))
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
    """[] for a BERT-like model, else why the first three tabs are not shown for it; for a
    decoder, also where its own windows are drawn (the last tab: causal sliding windows, the
    reach after l layers, the first token's share)."""
    out = not_bert_like(model, _("This tab"))
    if out and not model.capabilities["bidirectional"]:
        out.append(Markdown(_(
            "Its masks, receptive fields and context sweeps are an encoder's: a window of ±w "
            "that looks both ways. A decoder's windows look back only: the tab *{tab}* draws "
            "them for this model, with how far a token reaches after l layers and the share of "
            "weight each head puts on the first token.").format(tab=_(TABS[4])), "info"))
    return out


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


# ------------------------------------------------------------------ today's decoders
DECODER_TOKENS, DECODER_LAYERS = 24, 6  # the pictures' sizes (real windows hold thousands)
MISTRAL_LAYERS, MISTRAL_WINDOW = 32, 4096  # Mistral 7B (its config: num_hidden_layers,
#                                            sliding_window)
PATTERN_NAMES = {"mistral": N_("Mistral:<br>every layer slides"),
                 "gemma2": N_("Gemma 2: sliding<br>and full, alternating"),
                 "gemma3": N_("Gemma 3: five sliding,<br>then one full")}


def sliding_intro() -> Markdown:
    return Markdown(_(
        "Today's decoders use a window too, a causal one: in Mistral's **sliding window** "
        "query $i$ sees the last $W$ keys, $i - W < j \\le i$, in every layer (Mistral 7B: "
        "$W$ = {w:,}). Gemma 2 alternates a sliding layer with a full (causal) one; Gemma 3 has "
        "five sliding layers to each full one. Below, $W$ and the sentence are small enough to "
        "see: {n} tokens, {layers} layers.").format(w=MISTRAL_WINDOW, n=DECODER_TOKENS,
                                                    layers=DECODER_LAYERS))


def sliding_masks(size: int) -> dict:
    """{English name: [n, n] bool}: the sliding window of `size` keys and the full causal mask."""
    n = DECODER_TOKENS
    return {"sliding": win.sliding_mask(n, size).numpy(),
            "full": causal_mask(n).numpy()}


def sliding_masks_figure(masks: dict, size: int):
    shown = {_("sliding window, W = {w}").format(w=size): masks["sliding"],
             _("full (causal)"): masks["full"]}
    return plots.decoder_masks(shown, _("A local (sliding) layer and a global (full) one"))


def reaches(size: int) -> dict:
    """{pattern: {"types", "reach" [layers + 1, n] bool for the last token, "first"
    [layers + 1] the formula's first reachable input}} for each of win.LAYER_PATTERNS."""
    n, last = DECODER_TOKENS, DECODER_TOKENS - 1
    out = {}
    for pattern in win.LAYER_PATTERNS:
        types = win.layer_types(pattern, DECODER_LAYERS)
        reach = win.composed_reach(win.layer_masks(n, size, types))  # [L + 1, n, n]
        out[pattern] = {"types": types, "reach": reach[:, last],
                        "first": win.reach_formula(last, size, types)}
    return out


def reach_figure(r: dict):
    return plots.reach_figure({_(PATTERN_NAMES[p]): x["reach"] for p, x in r.items()},
                              {_(PATTERN_NAMES[p]): x["first"] for p, x in r.items()},
                              DECODER_TOKENS - 1)


def reach_text(r: dict, size: int) -> Markdown:
    m = r["mistral"]
    layers = len(m["types"])
    return Markdown(_(
        "Blue: the inputs that can change the last token (number {t}) after each layer, found "
        "by composing the layers' masks; the mark at each row's left edge is the formula. Each "
        "sliding layer reaches $W - 1$ = {step} tokens further back: after $l$ sliding layers, "
        "$l\\,(W-1)$ (here {span} after {layers} layers, from input {first}). One full layer "
        "reaches everything before the token at once, as in Gemma. For Mistral 7B, "
        "{mlayers} layers with $W$ = {w:,}, the last layer may depend on the last "
        "**{mspan:,}** tokens, though each layer reads only {w:,}.").format(
        t=DECODER_TOKENS - 1, step=size - 1, span=win.span(layers, size), layers=layers,
        first=int(m["first"][-1]), mlayers=MISTRAL_LAYERS, w=MISTRAL_WINDOW,
        mspan=win.span(MISTRAL_LAYERS, MISTRAL_WINDOW)), "caption")


def sliding_download(masks: dict, r: dict, size: int):
    return numbers(_("Download masks and reach (.npz)"), {
        "window": np.array(size), "mask_sliding": masks["sliding"], "mask_full": masks["full"],
        **{f"reach_{p}": x["reach"] for p, x in r.items()},
        **{f"formula_first_{p}": x["first"] for p, x in r.items()},
        **{f"layer_types_{p}": np.array(x["types"]) for p, x in r.items()}},
        "attnviz_sliding_windows.npz")


def sliding_tab(size: int) -> list:
    """The decoders tab's toy part (its slider left out): masks, then reach through depth."""
    masks, r = sliding_masks(size), reaches(size)
    return [sliding_intro(), sliding_masks_figure(masks, size), reach_figure(r),
            reach_text(r, size), sliding_download(masks, r, size)]


def is_causal(t) -> bool:
    """Whether the trace's mask lets no token see a later one (a decoder's)."""
    m = np.asarray(t.mask, dtype=bool)
    return bool(not np.triu(m, 1).any())


def sink_text(model, share: np.ndarray, even: float, n: int) -> Markdown:
    layer, head = np.unravel_index(int(np.argmax(share)), share.shape)
    return Markdown(_(
        "**The attention sink.** In {model}, for this sentence ({n} tokens), the heads put "
        "**{mean:.0%}** of their weight on the first token on average (over layers, heads and "
        "the queries after it); an even spread over what each query may see would give "
        "{even:.0%}. {big} of the {total} heads give it more than half; the most, layer "
        "{layer} head {head}, {top:.0%}. Xiao et al. (2023) call such a token an *attention "
        "sink*: a place to put weight that is not needed elsewhere.").format(
        model=literal(shown_name(model)), n=n, mean=float(share.mean()), even=even,
        big=int((share > 0.5).sum()), total=share.size, layer=int(layer), head=int(head),
        top=float(share.max())))


def sink_part(model, t) -> list:
    """On a decoder: each head's weight on the first token; a note for other models."""
    if not is_causal(t) or t.n_tokens < 2:
        return [Markdown(_("The attention sink is measured on a decoder: pick one (SmolLM2, "
                           "GPT-2) in the sidebar."), "info")]
    share, even = head_stats.first_token_share(t), win.even_share(t.n_tokens)
    return [sink_text(model, share, even, t.n_tokens), *model_notes(model),
            plots.sink_figure(share, even),
            numbers(_("Download the weight on the first token (.npz)"), {
                "tokens": t.tokens, "first_token_share": share, "even_share": np.array(even)},
                "attnviz_attention_sink.npz")]


STREAM_TEXT = (
    "The old carpenter kept his tools in a wooden chest by the door. Every morning he took "
    "out his saw, his hammer and a box of nails, and he walked to the workshop at the end of "
    "the garden. One day his granddaughter asked him which tool he loved the most. He smiled, "
    "lifted the saw into the light and said that a good saw is like a good friend: it asks "
    "for care, it never hurries, and it tells you the truth about the wood. Then he handed it "
    "to her, showed her how to hold the handle, and told her to let the")
STREAM_WINDOWS = (16, 32, 64)  # keys each layer keeps, besides the first tokens


def streams(model) -> bool:
    """Whether the model can say its next word (a decoder whose output layer the engine
    reads)."""
    return bool(model.capabilities.get("rotary")) and hasattr(model, "next_token_logits")


def streaming(model, size: int) -> dict:
    """win.streaming_next_word on STREAM_TEXT, with its token ids ("ids")."""
    ids = model.tokenize(STREAM_TEXT)[0]
    return {"ids": ids, **win.streaming_next_word(model, ids, size)}


def stream_name(s) -> str:
    if s == "full":
        return _("full context")
    return (_("window, first token dropped") if s == 0 else
            _("window + first token") if s == 1 else
            _("window + first {s} tokens").format(s=s))


def streaming_part(model, res: dict, size: int) -> list:
    """The StreamingLLM comparison: KL divergence of each window's next-word distribution
    from the full context's, and the full context's top 5 words under each."""
    ids, full = res["ids"], res["full"]
    kinds = [k for k in res if k not in ("ids", "full")]
    kl = {k: win.kl_divergence(full, res[k]) for k in kinds}
    top = win.top_words(full, 5)
    words = [model.tokens_of([i])[0] for i, _p in top]
    firsts = {k: model.tokens_of([win.top_words(res[k], 1)[0][0]])[0] for k in kinds}
    closer = 1 in kl and 0 in kl and kl[1] < kl[0]
    text = _(
        "**Keep the sink, or drop it?** The last token of a {n}-token text (below) predicts "
        "the next word; with the whole text its top word is {top} ({p:.0%}). Now let every "
        "layer see only the last {w} tokens: the next-word distribution moves away from the "
        "full context's by a KL divergence of {kls} (nats). {verdict}").format(
        n=len(ids), top=literal(words[0]), p=top[0][1], w=size,
        kls=_("; ").join(_("{name}: {kl:.3f}, top word {word}").format(
            name=stream_name(k), kl=kl[k], word=literal(firsts[k])) for k in kinds),
        verdict=(_("Keeping the first token brings the prediction closer to the full "
                   "context's, as Xiao et al. (2023) found with StreamingLLM.") if closer else
                 _("Here keeping the first token does not bring the prediction closer to the "
                   "full context's: not what Xiao et al. (2023) report on long texts.")))
    probs = {stream_name(k): [float(res[k][i]) for i, _p in top] for k in ("full", *kinds)}
    return [Markdown(text),
            plots.next_word_figure(words, probs, _("The full context's top 5 next words, "
                                                   "under each mask")),
            Markdown(_("The text: “{text}” Positions stay those of the whole text "
                       "(StreamingLLM also renumbers them inside its cache); the mask is "
                       "applied in every layer.").format(text=STREAM_TEXT), "caption"),
            numbers(_("Download the next-word distributions (.npz)"), {
                "token_ids": np.array(ids), "window": np.array(size),
                "full": full, **{f"sinks_{k}": res[k] for k in kinds},
                "kl_from_full": np.array([kl[k] for k in kinds]),
                "sinks": np.array(kinds)}, "attnviz_streaming.npz")]


# ------------------------------------------------------------------ the page
def page(model, trace_of: Callable, w: int = 1, layer: int = 0, head: int = 0,
         report=()) -> list:
    """The page as it opens (the first tab), its widgets left out."""
    t = trace_of()
    refused = bert_only(model)
    return [*intro(), *report,
            *(refused or masks_tab(t, trace_of, w, layer, head))]
