"""BART (Lewis et al. 2020, "BART: Denoising Sequence-to-Sequence Pre-training"): an
encoder-decoder, the lecture notes' "attention from decoder to encoder". The encoder is a
post-LayerNorm stack (engine.model) on

    a^i = LayerNorm_emb(s * word[x_i] + position[2 + i])     (s = sqrt(d) if scale_embedding)

The decoder reads the target shifted right by one (it starts with decoder_start_token_id, as
in training: row i is where it predicts target token i) and each of its layers has three
sublayers, each followed by add & LayerNorm:

    masked self-attention   Q, K, V from the decoder; causal (j <= i), always
    cross-attention         Q from the decoder, K and V from the encoder's last layer
                            S = Q K^T  [decoder tokens, encoder tokens]: rows = decoder
    feed-forward

Byte-level BPE tokens ('Ġ' marks a leading space), <s> text </s>. Positions, window and
causal options apply to the encoder; position modes apply to both (each has its own table).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from ...i18n import N_
from ..attention import attention, causal_mask
from ..intervene import decoder_edits
from ..model import ENCODER_DECODER, Layer, Model, Tokenized, activation
from ..positions import position_vectors
from ..request import TraceRequest
from ..tokens import BYTE_BPE, control_token_note, display_tokens, typed_control_tokens

OFFSET = 2  # BART's learned positions start at row 2


@dataclass
class DecoderLayer:
    """A decoder layer: masked self-attention (`self_attn`, with ln1), cross-attention, and the
    feed-forward (with ln2) as in `Layer`."""

    self_attn: Layer
    cross_q_w: torch.Tensor  # [hidden, hidden]
    cross_q_b: torch.Tensor
    cross_kv_w: torch.Tensor  # [2 * hidden, hidden]  W^k, W^v stacked
    cross_kv_b: torch.Tensor
    cross_out_w: torch.Tensor
    cross_out_b: torch.Tensor
    cross_ln_w: torch.Tensor
    cross_ln_b: torch.Tensor


def _shapes_attention(prefix: str, h: int) -> dict[str, tuple[int, ...]]:
    out = {}
    for m in ("q_proj", "k_proj", "v_proj", "out_proj"):
        out[f"{prefix}.{m}.weight"] = (h, h)
        out[f"{prefix}.{m}.bias"] = (h,)
    return out


class Bart(Model):
    model_types = ("bart",)
    title = "BART"
    kind = ENCODER_DECODER
    token_scheme = BYTE_BPE
    base_prefixes = ("model.",)
    ignorable = (r"^(encoder|decoder)\.version$",)

    @classmethod
    def sizes(cls, config) -> dict[str, int]:
        return dict(layers=config.encoder_layers, heads=config.encoder_attention_heads,
                    hidden=config.d_model, intermediate=config.encoder_ffn_dim,
                    positions=config.max_position_embeddings, vocab=config.vocab_size,
                    decoder_layers=config.decoder_layers,
                    decoder_heads=config.decoder_attention_heads,
                    decoder_intermediate=config.decoder_ffn_dim)

    @classmethod
    def parameter_shapes(cls, config) -> dict[str, tuple[int, ...]]:
        s = cls.sizes(config)
        h = s["hidden"]
        out: dict[str, tuple[int, ...]] = {"shared.weight": (s["vocab"], h)}
        for part, layers, i in (("encoder", s["layers"], s["intermediate"]),
                                ("decoder", s["decoder_layers"], s["decoder_intermediate"])):
            out |= {f"{part}.embed_positions.weight": (s["positions"] + OFFSET, h),
                    f"{part}.layernorm_embedding.weight": (h,),
                    f"{part}.layernorm_embedding.bias": (h,)}
            for li in range(layers):
                p = f"{part}.layers.{li}."
                out |= _shapes_attention(p + "self_attn", h)
                if part == "decoder":
                    out |= _shapes_attention(p + "encoder_attn", h)
                    out |= {p + "encoder_attn_layer_norm.weight": (h,),
                            p + "encoder_attn_layer_norm.bias": (h,)}
                out |= {p + "self_attn_layer_norm.weight": (h,),
                        p + "self_attn_layer_norm.bias": (h,),
                        p + "fc1.weight": (i, h), p + "fc1.bias": (i,),
                        p + "fc2.weight": (h, i), p + "fc2.bias": (h,),
                        p + "final_layer_norm.weight": (h,), p + "final_layer_norm.bias": (h,)}
        return out

    @classmethod
    def aliases(cls, config) -> dict[str, tuple[str, ...]]:
        return {"shared.weight": ("encoder.embed_tokens.weight", "decoder.embed_tokens.weight")}

    @classmethod
    def refuse(cls, config: dict) -> str | None:
        if config.get("add_final_layer_norm") or config.get("normalize_before"):
            return "BART variants with pre-LayerNorm (mBART-style) are not supported"
        if config.get("encoder_attention_heads", 12) != config.get("decoder_attention_heads", 12):
            return "BART checkpoints whose encoder and decoder have different head counts " \
                   "are not supported"
        return None

    @property
    def capabilities(self) -> dict:
        return super().capabilities | {"target": True}

    def setup(self, config) -> None:
        self.n_layers, self.n_heads = config.encoder_layers, config.encoder_attention_heads
        self.hidden = config.d_model
        self.n_decoder_layers = config.decoder_layers
        self.eps = 1e-5  # BART's LayerNorms use torch's default eps
        self.act = activation(config.activation_function)
        self.embed_scale = math.sqrt(self.hidden) if config.scale_embedding else 1.0
        self.decoder_start = int(config.decoder_start_token_id)
        p = self.param
        self.word_embeddings = p("shared.weight")
        self.position_embeddings = p("encoder.embed_positions.weight")[OFFSET:]
        self.decoder_position_embeddings = p("decoder.embed_positions.weight")[OFFSET:]
        self.emb_ln = (p("encoder.layernorm_embedding.weight"),
                       p("encoder.layernorm_embedding.bias"))
        self.decoder_emb_ln = (p("decoder.layernorm_embedding.weight"),
                               p("decoder.layernorm_embedding.bias"))
        self.layers = [self._layer(f"encoder.layers.{i}.") for i in range(self.n_layers)]
        self.decoder_layers: list[DecoderLayer] = []
        for i in range(self.n_decoder_layers):
            s = f"decoder.layers.{i}."
            c = s + "encoder_attn."
            self.decoder_layers.append(DecoderLayer(
                self_attn=self._layer(s),
                cross_q_w=p(c + "q_proj.weight"), cross_q_b=p(c + "q_proj.bias"),
                cross_kv_w=torch.cat([p(c + "k_proj.weight"), p(c + "v_proj.weight")]),
                cross_kv_b=torch.cat([p(c + "k_proj.bias"), p(c + "v_proj.bias")]),
                cross_out_w=p(c + "out_proj.weight"), cross_out_b=p(c + "out_proj.bias"),
                cross_ln_w=p(s + "encoder_attn_layer_norm.weight"),
                cross_ln_b=p(s + "encoder_attn_layer_norm.bias"),
            ))

    def _layer(self, s: str) -> Layer:
        p = self.param
        a = s + "self_attn."
        return Layer(
            qkv_w=torch.cat([p(a + f"{m}_proj.weight") for m in "qkv"]),
            qkv_b=torch.cat([p(a + f"{m}_proj.bias") for m in "qkv"]),
            out_w=p(a + "out_proj.weight"), out_b=p(a + "out_proj.bias"),
            ln1_w=p(s + "self_attn_layer_norm.weight"), ln1_b=p(s + "self_attn_layer_norm.bias"),
            ff1_w=p(s + "fc1.weight"), ff1_b=p(s + "fc1.bias"),
            ff2_w=p(s + "fc2.weight"), ff2_b=p(s + "fc2.bias"),
            ln2_w=p(s + "final_layer_norm.weight"), ln2_b=p(s + "final_layer_norm.bias"),
        )

    # ------------------------------------------------------------- embeddings
    def _embed(self, ids, table, ln, positions: str, seed: int):
        x = self.word_embeddings[torch.as_tensor(ids, device=self.device)] * self.embed_scale
        e, pos_ids = position_vectors(positions, table, len(ids), seed)
        if e is not None:
            x = x + e
        x = F.layer_norm(x, (self.hidden,), *ln, self.eps)
        return x, (pos_ids if pos_ids is not None else np.full(len(ids), -1))

    def embed(self, ids, segments, positions: str = "learned",
              seed: int = 0) -> tuple[torch.Tensor, np.ndarray]:
        """The encoder's a^i = LayerNorm_emb(s word[x_i] + e^i) -> ([tokens, hidden], ids)."""
        return self._embed(ids, self.position_embeddings, self.emb_ln, positions, seed)

    def embed_decoder(self, ids, positions: str = "learned", seed: int = 0):
        """The decoder's input vectors, from its own position table."""
        return self._embed(ids, self.decoder_position_embeddings, self.decoder_emb_ln,
                           positions, seed)

    # ---------------------------------------------------------------- decoder
    def decoder_input(self, request: TraceRequest, source_ids: list[int]) -> Tokenized:
        """The target's ids shifted right by one: [decoder_start] + target[:-1]. Without a
        target, the source itself (BART's pre-training task is to rebuild its input)."""
        limit = int(self.decoder_position_embeddings.shape[0])
        if self._cap is not None:
            limit = min(limit, self._cap)
        if request.target is None:
            labels, controls = list(source_ids), ()
        else:
            with self._tok_lock:
                full = self.tokenizer(request.target, add_special_tokens=True,
                                      return_special_tokens_mask=True)
                pieces = self.tokenizer.convert_ids_to_tokens(list(full["input_ids"]))
            labels = list(full["input_ids"])
            unk = getattr(self.tokenizer, "unk_token", None)
            controls = typed_control_tokens(pieces, full["special_tokens_mask"],
                                            self.special_pieces() - {unk})
        ids = ([self.decoder_start] + labels[:-1])[:limit]
        return Tokenized(ids, [0] * len(ids), max(0, len(labels) - limit), controls)

    def decode(self, y: torch.Tensor, memory: torch.Tensor, self_edit=None,
               cross_edit=None) -> dict[str, torch.Tensor]:
        """Run the decoder on y [m, hidden] with the encoder's last states `memory` [n, hidden];
        every intermediate stacked over layers (see trace.DECODER_FIELDS). `self_edit`,
        `cross_edit` (engine.intervene.Edit, as decoder_edits makes them) replace heads'
        outputs Y_h before W_O, or (their `attention`) a layer's whole attention output Z."""
        m, n, H, d = y.shape[0], memory.shape[0], self.n_heads, self.head_dim
        scale = 1.0 / math.sqrt(d)
        mask = causal_mask(m, y.device)
        rec: dict[str, list[torch.Tensor]] = {}

        def keep(**named):
            for k, v in named.items():
                rec.setdefault(k, []).append(v)

        states = [y]
        for li, layer in enumerate(self.decoder_layers):
            sa = layer.self_attn
            q, k, v = F.linear(y, sa.qkv_w, sa.qkv_b).view(m, 3, H, d).permute(1, 2, 0, 3)
            out, w, s = attention(q, k, v, mask, scale)  # masked self-attention
            if self_edit is not None:
                out = self_edit.head_outputs(li, out)  # a head switched off: Y_h replaced
            keep(decoder_queries=q, decoder_keys=k, decoder_values=v, decoder_scores=s,
                 decoder_weights=w, decoder_outputs=out)
            z = F.linear(out.transpose(0, 1).reshape(m, self.hidden), sa.out_w, sa.out_b)
            if self_edit is not None:
                z = self_edit.attention_output(li, z)  # the whole sublayer left out
            y = F.layer_norm(y + z, (self.hidden,), sa.ln1_w, sa.ln1_b, self.eps)
            cq = F.linear(y, layer.cross_q_w, layer.cross_q_b).view(m, H, d).transpose(0, 1)
            ck, cv = F.linear(memory, layer.cross_kv_w, layer.cross_kv_b).view(
                n, 2, H, d).permute(1, 2, 0, 3)
            out, w, s = attention(cq, ck, cv, None, scale)  # [H, m, d], [H, m, n]
            if cross_edit is not None:
                out = cross_edit.head_outputs(li, out)
            keep(cross_queries=cq, cross_keys=ck, cross_values=cv, cross_scores=s,
                 cross_weights=w, cross_outputs=out)
            z = F.linear(out.transpose(0, 1).reshape(m, self.hidden), layer.cross_out_w,
                         layer.cross_out_b)
            if cross_edit is not None:
                z = cross_edit.attention_output(li, z)
            y = F.layer_norm(y + z, (self.hidden,), layer.cross_ln_w, layer.cross_ln_b, self.eps)
            ff = F.linear(self.act(F.linear(y, sa.ff1_w, sa.ff1_b)), sa.ff2_w, sa.ff2_b)
            y = F.layer_norm(y + ff, (self.hidden,), sa.ln2_w, sa.ln2_b, self.eps)
            states.append(y)
        out = {k: torch.stack(v).contiguous() for k, v in rec.items()}
        out["decoder_hidden_states"] = torch.stack(states)
        out["decoder_mask"] = mask
        return out

    # ------------------------------------------------------------------ trace
    def check_request(self, request: TraceRequest) -> TraceRequest:
        if request.image is not None:
            raise ValueError("BART reads text, not images: choose a vision transformer (ViT)")
        return request

    def notes(self, request, tok) -> tuple[str, ...]:
        notes = list(super().notes(request, tok))
        if request.target is None:
            notes.append(N_("No target text given: BART's decoder reads the source sentence "
                            "itself (its pre-training task is to rebuild its input)."))
        if request.window is not None or request.causal:
            notes.append(N_("The window and causal options apply to the encoder; the decoder "
                            "keeps its causal mask and its cross-attention sees every encoder "
                            "token."))
        return tuple(notes)

    @torch.inference_mode()
    def _record(self, tok: Tokenized, request: TraceRequest):
        trace = super()._record(tok, request)
        dec = self.decoder_input(request, tok.ids)
        y, dec_pos = self.embed_decoder(dec.ids, request.positions, request.seed)
        memory = torch.as_tensor(trace.hidden_states[-1], device=self.device)
        recorded = self.decode(y, memory, *decoder_edits(self, request.ablate, request))
        pieces = self.pieces_of(dec.ids)
        cpu = lambda t: t.detach().cpu().numpy()  # noqa: E731
        trace.decoder_tokens = display_tokens(pieces, self.token_scheme, self.special_pieces())
        trace.decoder_pieces = pieces
        trace.decoder_token_ids = np.asarray(dec.ids, dtype=np.int64)
        trace.decoder_position_ids = np.asarray(dec_pos, dtype=np.int64)
        trace.decoder_embeddings = cpu(y)
        for name, value in recorded.items():
            setattr(trace, name, cpu(value))
        if dec.controls:
            trace.typed_control_tokens = tuple(dict.fromkeys(
                trace.typed_control_tokens + dec.controls))
            trace.notes = (control_token_note(trace.typed_control_tokens, self.title),
                           *trace.notes[1 if tok.controls else 0:])
        if dec.dropped:
            trace.notes = (*trace.notes, f"The target was cut at the decoder's {len(dec.ids)} "
                                         "positions.")
        return trace
