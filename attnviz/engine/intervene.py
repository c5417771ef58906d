"""Switch it off and see: interventions in the one eager forward pass (ablation and activation
patching), the causal question beside every attention map.

A head's output is Y_h = W_h V_h [tokens, head_dim], before the heads are concatenated and
multiplied by W_O (engine.model). An intervention replaces some of these before W_O:

    Ablation(heads=((l, h), ...), mode="zero")   Y_h := 0
    Ablation(heads=..., mode="mean")             Y_h := mean of Y_h over every token of the
                                                 REFERENCE sentences (one vector, every row)
    Ablation(decoder_heads=..., cross_heads=...) BART's decoder: a head of its masked
                                                 self-attention, or of its cross-attention
                                                 (queries from the decoder, keys and values
                                                 from the encoder), Y_h := 0 or its mean
    Ablation(layers=(l, ...))                    the whole attention sublayer of layer l left
                                                 out: Z = concat(Y) W_O + b_O := 0, so the
                                                 layer's input passes by the residual only
    Patch(source, heads=((l, h), ...))           Y_h := Y_h of the source run
    Patch(source, residual=((l, t), ...))        the residual stream entering layer l at
                                                 token t := the source run's (hidden_states[l])
    Patch(source, decoder_heads=..., cross_heads=...)   BART's decoder: a head's output of its
                                                 masked self-attention or its cross-attention
                                                 := the source run's, token by token (the two
                                                 decoders read the same number of tokens)

Zero and mean ablation differ in what "gone" means. Zero puts a value there that the head never
produces: the head's average contribution (which later LayerNorms and layers have learned to
expect) goes too. Mean ablation keeps that average and removes only what this sentence's tokens
made the head say (Michel et al. 2019 mask heads to zero; interpretability work such as Wang et
al. 2022 prefers the mean). The reference set is REFERENCE_SENTENCES, encoded with the same
options as the ablated sentence (for BART's decoder: each sentence's decoder reading the
sentence itself, as it does without a target).

Activation patching (Vig et al. 2020; Meng et al. 2022) runs a clean and a corrupted sentence
of the same length and copies one activation from one run into the other: where ablation asks
"what does this head matter?", patching asks "does this head carry the difference between the
two sentences?".

Positions off is the request's own option, TraceRequest(positions="none"): the position
embeddings are left out (engine.positions).

Every intervention is a small frozen value, part of the TraceRequest (its `ablate` field), so
traces made with it are cached by their key like every other trace. `Edit` is the same thing as
tensors, which `Model.encode` applies layer by layer; a batch of sequences can carry one edit
each (the head-importance map ablates every head of a layer in one batched pass).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING

import cachetools
import numpy as np

from .request import Ablation, Patch, TraceRequest

if TYPE_CHECKING:  # torch is imported with the first model: a request can be made without it
    import torch

def check(intervention, n_layers: int, n_heads: int, n_tokens: int | None = None) -> None:
    """A plain ValueError when an intervention names a layer, head or token the model lacks."""
    heads = intervention.heads
    layers = getattr(intervention, "layers", ())
    residual = getattr(intervention, "residual", ())
    for layer, head in heads:
        if layer >= n_layers or head >= n_heads:
            raise ValueError(f"no head ({layer}, {head}): the model has {n_layers} layers of "
                             f"{n_heads} heads (counted from 0)")
    for layer in layers:
        if layer >= n_layers:
            raise ValueError(f"no layer {layer}: the model has {n_layers} (counted from 0)")
    for layer, token in residual:
        if layer >= n_layers or (n_tokens is not None and token >= n_tokens):
            raise ValueError(f"no layer input ({layer}, {token}): {n_layers} layers, "
                             f"{n_tokens} tokens (counted from 0)")


def check_decoder(ablation, model) -> None:
    """A plain ValueError when decoder or cross-attention heads (of an Ablation or a Patch) are
    named for a model without a decoder (BART has one), or heads it lacks."""
    if not (ablation.decoder_heads or ablation.cross_heads):
        return
    n_layers = getattr(model, "n_decoder_layers", 0)
    if not n_layers:
        raise ValueError(f"{model.title} has no decoder: decoder and cross-attention heads are "
                         "an encoder-decoder's (BART)")
    for name in ("decoder_heads", "cross_heads"):
        for layer, head in getattr(ablation, name):
            if layer >= n_layers or head >= model.n_heads:
                raise ValueError(f"no decoder head ({layer}, {head}): the decoder has "
                                 f"{n_layers} layers of {model.n_heads} heads (counted from 0)")


# ------------------------------------------------------------------------ tensors
@dataclass
class Edit:
    """An intervention as tensors, applied by Model.encode (leading batch dimensions [...]
    optional, one edit per sequence of a batch):

    keep       [..., layers, heads] bool: False = that head's output Y_h is replaced
    fill       what replaces it: None (zero) or broadcastable to [..., layers, heads, n, d]
    attention  [..., layers] bool: True = the layer's attention output Z is kept
    inputs     (where [..., layers, n, 1] bool, values [..., layers, n, hidden]): the layer's
               input at those tokens replaced (residual-stream patching); or None
    """

    keep: torch.Tensor | None = None
    fill: torch.Tensor | None = None
    attention: torch.Tensor | None = None
    inputs: tuple[torch.Tensor, torch.Tensor] | None = None

    def layer_input(self, li: int, x: torch.Tensor) -> torch.Tensor:
        import torch

        if self.inputs is None:
            return x
        where, values = self.inputs
        return torch.where(where[..., li, :, :], values[..., li, :, :], x)

    def head_outputs(self, li: int, y: torch.Tensor) -> torch.Tensor:  # y [..., H, n, d]
        import torch

        if self.keep is None:
            return y
        keep = self.keep[..., li, :, None, None]  # [..., H, 1, 1]
        fill = 0.0 if self.fill is None else self.fill[..., li, :, :, :]
        if self.fill is not None and fill.shape[-2] not in (1, y.shape[-2]):  # a patch's source
            raise ValueError(f"patching copies activations token by token: the source run has "
                             f"{fill.shape[-2]} tokens here, this run {y.shape[-2]}; choose two "
                             "of the same length")
        return torch.where(keep, y, fill)

    def attention_output(self, li: int, z: torch.Tensor) -> torch.Tensor:  # z [..., n, hidden]
        import torch

        if self.attention is None:
            return z
        return torch.where(self.attention[..., li, None, None], z, 0.0)


MEANS_BYTES = 16 * 2**20  # the mean outputs kept (a model's are [layers, heads, 1, d] float32)
_MEANS: cachetools.LRUCache = cachetools.LRUCache(MEANS_BYTES, getsizeof=lambda m: m.nbytes)
_MEANS_LOCK = threading.Lock()  # cachetools' caches are not thread-safe


def mean_outputs(model, reference: tuple[str, ...], request=None,
                 field: str = "outputs") -> torch.Tensor:
    """Each head's output averaged over every token of the reference sentences, encoded with
    the request's options: [layers, heads, 1, head_dim] float32 on the model's device, summed
    in float64. `field`: the trace's outputs of the encoder ("outputs") or of BART's decoder
    ("decoder_outputs", "cross_outputs"), each sentence's decoder reading the sentence itself.

    Kept (least recently used dropped past MEANS_BYTES) under Model.key, which names the weights
    by their digest: a checkpoint saved again into the same folder and loaded again has other
    means."""
    import torch

    if model.capabilities.get("input") != "text":
        raise ValueError(f"mean ablation averages over reference sentences; {model.title} reads "
                         "images: use zero ablation")
    options = {} if request is None else {k: v for k, v in request.options().items()}
    key = (model.key, reference, tuple(sorted(options.items())), field)
    with _MEANS_LOCK:
        found = _MEANS.get(key)
    if found is not None:
        return found
    total, count = None, 0
    for text in reference:
        t = model.trace(TraceRequest(text, **options))
        outputs = getattr(t, field)  # [layers, heads, tokens, d]
        y = torch.as_tensor(np.asarray(outputs), dtype=torch.float64).sum(dim=2)  # [L, H, d]
        total = y if total is None else total + y
        count += outputs.shape[2]
    mean = (total / count)[:, :, None, :].to(device=model.device, dtype=torch.float32)
    if mean.nbytes <= _MEANS.maxsize:
        with _MEANS_LOCK:
            _MEANS[key] = mean
    return mean


def ablation_edit(model, ablation: Ablation, request=None) -> Edit | None:
    """The Edit of an Ablation (None for an ablation of nothing: the plain pass, bit for bit)."""
    import torch

    if ablation.empty:
        return None
    check(ablation, model.n_layers, model.n_heads)
    check_decoder(ablation, model)
    if not ablation.heads and not ablation.layers:  # only BART's decoder: decoder_edits
        return None
    edit = Edit()
    if ablation.heads:
        keep = torch.ones(model.n_layers, model.n_heads, dtype=torch.bool, device=model.device)
        for layer, head in ablation.heads:
            keep[layer, head] = False
        edit.keep = keep
        if ablation.mode == "mean":
            edit.fill = mean_outputs(model, ablation.reference, request)
    if ablation.layers:
        att = torch.ones(model.n_layers, dtype=torch.bool, device=model.device)
        att[list(ablation.layers)] = False
        edit.attention = att
    return edit


def decoder_edits(model, intervention, request=None) -> tuple[Edit | None, Edit | None]:
    """BART's decoder: (the Edit of its self-attention heads, that of its cross-attention
    heads), each None when no head of it is named. An Ablation's heads are set to 0 or their
    mean; a Patch's to the source run's outputs, traced with the request's options."""
    import torch

    if not isinstance(intervention, (Ablation, Patch)) or not (
            intervention.decoder_heads or intervention.cross_heads):
        return None, None
    check_decoder(intervention, model)
    source = None
    if isinstance(intervention, Patch):
        options = {} if request is None else request.options()
        source = model.trace(intervention.source.with_options(**options))  # lengths: Edit
    out = []
    for name, field in (("decoder_heads", "decoder_outputs"), ("cross_heads", "cross_outputs")):
        heads = getattr(intervention, name)
        if not heads:
            out.append(None)
            continue
        keep = torch.ones(model.n_decoder_layers, model.n_heads, dtype=torch.bool,
                          device=model.device)
        for layer, head in heads:
            keep[layer, head] = False
        if source is not None:  # [layers, heads, m, d]: the source's, token by token
            fill = torch.as_tensor(np.asarray(getattr(source, field)), device=model.device)
        elif intervention.mode == "mean":
            fill = mean_outputs(model, intervention.reference, request, field)
        else:
            fill = None
        out.append(Edit(keep=keep, fill=fill))
    return out[0], out[1]


def patch_edit(model, patch: Patch, source_trace, n: int) -> Edit | None:
    """The Edit of a Patch, given the source run's trace (n tokens in the patched run)."""
    import torch

    check_decoder(patch, model)
    if not (patch.heads or patch.residual):  # nothing of the encoder's (BART: decoder_edits)
        return None
    m = len(source_trace.tokens)
    if m != n:
        raise ValueError(f"patching copies activations token by token: the source has {m} "
                         f"tokens, this sentence {n}; choose two of the same length")
    check(patch, model.n_layers, model.n_heads, n)
    edit = Edit()
    dev = model.device
    if patch.heads:
        keep = torch.ones(model.n_layers, model.n_heads, dtype=torch.bool, device=dev)
        for layer, head in patch.heads:
            keep[layer, head] = False
        edit.keep = keep
        edit.fill = torch.as_tensor(np.asarray(source_trace.outputs), device=dev)
    if patch.residual:
        where = torch.zeros(model.n_layers, n, 1, dtype=torch.bool, device=dev)
        for layer, token in patch.residual:
            where[layer, token] = True
        values = torch.as_tensor(np.asarray(source_trace.hidden_states[:-1]), device=dev)
        edit.inputs = (where, values)
    return edit
