"""What to trace: one frozen, validated request (the input and the engine options).

A request is made once, where the user's choices are read, and checked there; the engine, the
Trace it returns and every cache use the same object. Its value is the cache key: two equal
requests to one model give bit-identical traces.

    TraceRequest("I saw a saw")                              learned positions, full attention
    TraceRequest("I saw a saw", positions="none")            order becomes invisible
    TraceRequest("I saw a saw", window=1, causal=True)       |i - j| <= 1 and j <= i
    TraceRequest(ids=(101, 1045, 2387, 102))                 token ids already made
    TraceRequest(image=rgb_array)                            a vision transformer's input
    TraceRequest("I saw a saw", target="ich sah eine Säge")  an encoder-decoder's source and
                                                             target (the decoder's text)

Options (values, not flags, as in nanoGPT's GPTConfig):
- positions: "learned" | "none" | "sinusoidal" | "shuffled"   (engine.positions)
- window:    None (full attention) or w >= 0: query i sees keys j with |i - j| <= w
- causal:    True keeps j <= i (a decoder's mask)
- seed:      which shuffle for positions="shuffled"; other modes ignore it, so it is set to 0
             for them and two requests that differ only in an unused seed are equal.
- ablate:    None, or an intervention in the forward pass: an Ablation (heads switched off)
             or a Patch (activations copied from another run), value types defined below and
             applied by engine.intervene.
             TraceRequest("I saw a saw", ablate=Ablation(heads=((0, 3),)))
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from .images import ImageInput

# How a trace places its tokens (engine.positions): here, so a request is made without torch.
POSITION_MODES = ("learned", "none", "sinusoidal", "shuffled")


@dataclass(frozen=True)
class TraceRequest:
    """A text (with an optional second sentence or target), token ids, or an image; and the
    engine options. Which inputs a model takes is the model's to say (Model.trace refuses the
    others with a plain sentence)."""

    text: str | None = None
    pair: str | None = None  # second sentence (segment B): [CLS] text [SEP] pair [SEP]
    positions: str = "learned"
    window: int | None = None  # half-width: query i sees keys |i - j| <= window
    causal: bool = False
    seed: int = 0
    ids: tuple[int, ...] | None = None  # instead of text: token ids (special tokens included)
    segments: tuple[int, ...] | None = None  # with ids: 0 = sentence A, 1 = sentence B
    target: str | None = None  # encoder-decoder: the decoder's text (the source is `text`)
    image: ImageInput | None = None  # instead of text: an RGB image (array or PIL image)
    ablate: Ablation | Patch | None = None  # an intervention in the forward pass


    def __post_init__(self) -> None:
        set_ = lambda name, value: object.__setattr__(self, name, value)  # noqa: E731
        if self.positions not in POSITION_MODES:
            raise ValueError(f"positions must be one of {', '.join(POSITION_MODES)}; "
                             f"got {self.positions!r}")
        if self.window is not None:
            if isinstance(self.window, (bool, np.bool_)) or not isinstance(
                    self.window, (int, np.integer)) or self.window < 0:
                raise ValueError(f"window must be a whole number >= 0 or None; "
                                 f"got {self.window!r}")
            set_("window", int(self.window))
        if not isinstance(self.causal, (bool, np.bool_)):
            raise ValueError(f"causal must be True or False; got {self.causal!r}")
        set_("causal", bool(self.causal))
        if isinstance(self.seed, (bool, np.bool_)) or not isinstance(self.seed, (int, np.integer)):
            raise ValueError(f"seed must be a whole number; got {self.seed!r}")
        set_("seed", int(self.seed) if self.positions == "shuffled" else 0)
        if self.ablate is not None and not isinstance(self.ablate, (Ablation, Patch)):
            raise ValueError("ablate must be an Ablation or a Patch (attnviz.engine.request)")
        if self.ablate is not None and self.ablate.empty:
            set_("ablate", None)  # switching nothing off is the plain trace, with its key
        if sum(x is not None for x in (self.text, self.ids, self.image)) != 1:
            raise ValueError("give one input: a text, token ids or an image")
        if self.target is not None:
            if not isinstance(self.target, str):
                raise ValueError("target must be a string")
            if self.image is not None:
                raise ValueError("a target text goes with a source text, not with an image")
            set_("target", self.target or None)  # "" and None: no target text
        if self.image is not None:
            set_("image", ImageInput.of(self.image))
            if self.pair is not None or self.segments is not None:
                raise ValueError("an image goes alone: no second sentence or segments")
        elif self.text is not None:
            if not isinstance(self.text, str) or not (self.pair is None or isinstance(
                    self.pair, str)):
                raise ValueError("text and pair must be strings")
            if self.segments is not None:
                raise ValueError("segments go with token ids, not with a text")
            set_("pair", self.pair or None)  # "" and None: no second sentence
        else:
            if self.pair is not None:
                raise ValueError("a second sentence goes with a text, not with token ids")
            ids = tuple(int(i) for i in self.ids)
            if not ids:
                raise ValueError("no tokens to encode")
            segs = (0,) * len(ids) if self.segments is None else tuple(
                int(s) for s in self.segments)
            if len(segs) != len(ids):
                raise ValueError(f"{len(segs)} segments for {len(ids)} token ids")
            set_("ids", ids)
            set_("segments", segs)

    def with_options(self, **options) -> TraceRequest:
        """The same input with other options (checked again): request.with_options(window=1)."""
        unknown = set(options) - OPTION_NAMES - {"ablate"}
        if unknown:
            raise ValueError(f"unknown trace options: {', '.join(sorted(unknown))}")
        return replace(self, **options)

    def options(self) -> dict:
        """The engine options as a plain dict (positions, window, causal, seed)."""
        return {name: getattr(self, name) for name in sorted(OPTION_NAMES)}

    def as_dict(self) -> dict:
        """Every field as plain JSON-able values (an image as its size and digest)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.image is not None:
            out["image"] = self.image.as_dict()
        if self.ablate is None:
            del out["ablate"]  # a plain request's dict names no intervention
        else:
            out["ablate"] = self.ablate.as_dict()
        return out


OPTION_NAMES = frozenset({"positions", "window", "causal", "seed"})


# ------------------------------------------------------------ interventions (a request's ablate)
ABLATION_MODES = ("zero", "mean")

# The reference set of mean ablation: short, plain sentences of everyday English (a head's mean
# output over every token of all of them, [CLS] and [SEP] included).
REFERENCE_SENTENCES = (
    "The cat sat on the mat.",
    "She reads a book every night before bed.",
    "We walked to the station in the rain.",
    "My brother plays the guitar in a band.",
    "The teacher wrote the answer on the board.",
    "It was cold, so they lit a fire.",
    "Birds fly south when winter comes.",
    "He bought bread and milk at the shop.",
)


def _pairs(value, name: str) -> tuple[tuple[int, int], ...]:
    try:
        out = tuple(sorted({(int(a), int(b)) for a, b in value}))
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be (layer, index) pairs of whole numbers") from None
    if any(a < 0 or b < 0 for a, b in out):
        raise ValueError(f"{name}: layers, heads and tokens count from 0")
    return out


@dataclass(frozen=True)
class Ablation:
    """Heads (and whole attention sublayers) switched off; see the module docstring.

    A head is a query head: its output Y_h is replaced. Where key/value heads are shared
    (grouped-query attention: Llama 3, SmolLM2, Qwen, Mistral, Gemma), the key/value head it
    reads stays for the other heads of its group; removing a key/value head means switching
    off every query head that reads it (Model.kv_group(head), Trace.kv_group(head)). A trace
    of such an ablation carries a note saying so."""

    heads: tuple[tuple[int, int], ...] = ()  # (layer, head) pairs, from 0
    layers: tuple[int, ...] = ()  # attention sublayers left out entirely
    mode: str = "zero"  # "zero" | "mean"
    reference: tuple[str, ...] = REFERENCE_SENTENCES  # mean ablation's sentences
    decoder_heads: tuple[tuple[int, int], ...] = ()  # BART: decoder self-attention heads
    cross_heads: tuple[tuple[int, int], ...] = ()  # BART: decoder cross-attention heads

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", _pairs(self.heads, "heads"))
        object.__setattr__(self, "decoder_heads", _pairs(self.decoder_heads, "decoder_heads"))
        object.__setattr__(self, "cross_heads", _pairs(self.cross_heads, "cross_heads"))
        try:
            layers = tuple(sorted({int(x) for x in self.layers}))
        except (TypeError, ValueError):
            raise ValueError("layers must be whole numbers") from None
        if any(x < 0 for x in layers):
            raise ValueError("layers count from 0")
        object.__setattr__(self, "layers", layers)
        if self.mode not in ABLATION_MODES:
            raise ValueError(f"mode must be one of {', '.join(ABLATION_MODES)}; got {self.mode!r}")
        if isinstance(self.reference, str) or not all(isinstance(s, str) and s.strip()
                                                       for s in self.reference):
            raise ValueError("reference must be a tuple of sentences")
        object.__setattr__(self, "reference", tuple(self.reference))
        if self.mode == "mean" and not self.reference and (
                self.heads or self.decoder_heads or self.cross_heads):
            raise ValueError("mean ablation needs reference sentences")

    @property
    def empty(self) -> bool:
        return not (self.heads or self.layers or self.decoder_heads or self.cross_heads)

    def as_dict(self) -> dict:
        out = {"kind": "ablation", "heads": [list(p) for p in self.heads],
               "layers": list(self.layers), "mode": self.mode,
               "reference": list(self.reference) if self.mode == "mean" else None}
        for name in ("decoder_heads", "cross_heads"):  # BART's, named only when used
            if getattr(self, name):
                out[name] = [list(p) for p in getattr(self, name)]
        return out


@dataclass(frozen=True)
class Patch:
    """Activations copied from a source run (same number of tokens) into this one."""

    source: object  # a TraceRequest or a text: the run activations are copied from
    heads: tuple[tuple[int, int], ...] = ()  # (layer, head): Y_h from the source
    residual: tuple[tuple[int, int], ...] = ()  # (layer, token): layer l's input at token t
    decoder_heads: tuple[tuple[int, int], ...] = ()  # BART: decoder self-attention heads
    cross_heads: tuple[tuple[int, int], ...] = ()  # BART: decoder cross-attention heads

    def __post_init__(self) -> None:
        source = self.source
        if isinstance(source, str):
            source = TraceRequest(source)
        if not isinstance(source, TraceRequest):
            raise ValueError("a patch's source is a text or a TraceRequest")
        if source.ablate is not None:
            raise ValueError("a patch's source is a plain run (no intervention of its own)")
        object.__setattr__(self, "source", source)
        object.__setattr__(self, "heads", _pairs(self.heads, "heads"))
        object.__setattr__(self, "residual", _pairs(self.residual, "residual"))
        object.__setattr__(self, "decoder_heads", _pairs(self.decoder_heads, "decoder_heads"))
        object.__setattr__(self, "cross_heads", _pairs(self.cross_heads, "cross_heads"))

    @property
    def empty(self) -> bool:
        return not (self.heads or self.residual or self.decoder_heads or self.cross_heads)

    def as_dict(self) -> dict:
        out = {"kind": "patch", "source": self.source.as_dict(),
               "heads": [list(p) for p in self.heads],
               "residual": [list(p) for p in self.residual]}
        for name in ("decoder_heads", "cross_heads"):  # BART's, named only when used
            if getattr(self, name):
                out[name] = [list(p) for p in getattr(self, name)]
        return out
