"""The engine against the independent reference: transformers' BertModel in eager mode.

hidden_states and weights must match within 1e-5 (float32) from 1 to 512 tokens, for the
bundled checkpoint and for randomly initialised BERTs of other sizes.
"""

import shutil

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine import bundled_model_dir

TOL = 1e-5


def hf_reference(hf, ids, segments=None):
    """transformers' eager BertModel: hidden states, attentions, and each head's context."""
    contexts = []
    hooks = [
        layer.attention.self.register_forward_hook(lambda m, i, o: contexts.append(o[0][0]))
        for layer in hf.encoder.layer
    ]
    try:
        with torch.no_grad():
            out = hf(
                torch.tensor([ids]),
                token_type_ids=None if segments is None else torch.tensor([segments]),
                output_attentions=True, output_hidden_states=True,
            )
    finally:
        for h in hooks:
            h.remove()
    hs = torch.stack(out.hidden_states)[:, 0].numpy()  # [L+1, n, hidden]
    att = torch.stack(out.attentions)[:, 0].numpy()  # [L, H, n, n]
    ctx = torch.stack(contexts).numpy()  # [L, n, hidden]
    return hs, att, ctx


def check_trace_against(hf, t, heads):
    hs, att, ctx = hf_reference(hf, t.token_ids.tolist(), t.segments.tolist())
    assert att.shape == t.weights.shape, "HF returned no attentions (not eager?)"
    np.testing.assert_allclose(t.hidden_states, hs, atol=TOL, rtol=0)
    np.testing.assert_allclose(t.weights, att, atol=TOL, rtol=0)
    L, n = ctx.shape[0], ctx.shape[1]
    per_head = ctx.reshape(L, n, heads, -1).transpose(0, 2, 1, 3)  # [L, H, n, d]
    np.testing.assert_allclose(t.outputs, per_head, atol=TOL, rtol=0)


def words(n_tokens):
    """A text of roughly n_tokens WordPiece tokens."""
    base = ("the quick brown fox jumps over the lazy dog while I saw a saw near the river bank "
            "and a watch on my watch ").split()
    return " ".join(base[i % len(base)] for i in range(n_tokens))


@pytest.mark.parametrize("n_words", [0, 4, 40, 126, 600])
def test_bundled_model_matches_hf_eager(model, hf_model, n_words):
    t = model.trace(words(n_words) if n_words else "")
    assert t.n_tokens == min(n_words + 2, 512)
    check_trace_against(hf_model, t, model.n_heads)


def test_one_token_and_512_exactly(model, hf_model):
    for ids in ([101], list(np.random.default_rng(0).integers(1000, 30000, 512))):
        t = model.trace_ids(ids)
        assert t.n_tokens == len(ids)
        check_trace_against(hf_model, t, model.n_heads)


def test_sentence_pair_segments_match_hf(model, hf_model):
    t = model.trace("I saw a saw", "the saw was sharp")
    assert t.segments.tolist() == [0] * 6 + [1] * 5
    assert t.tokens[5] == "[SEP]" and t.tokens[-1] == "[SEP]"
    check_trace_against(hf_model, t, model.n_heads)


def test_cpu_matrices_are_the_checkpoints(cpu_model, hf_model):
    """Each layer's matrices hold the checkpoint's values exactly, [out, in] as torch's
    Linear stores them."""
    for layer, ref in zip(cpu_model.layers, hf_model.encoder.layer, strict=True):
        sa = ref.attention.self
        want = {"qkv_w": torch.cat([sa.query.weight, sa.key.weight, sa.value.weight]),
                "out_w": ref.attention.output.dense.weight,
                "ff1_w": ref.intermediate.dense.weight, "ff2_w": ref.output.dense.weight}
        for name, w in want.items():
            got = getattr(layer, name)
            assert got.shape == w.shape and got.is_contiguous(), name
            assert torch.equal(got, w.detach()), name


def test_queries_keys_values_match_hf_projections(model, hf_model):
    t = model.trace("I saw a saw")
    d = model.head_dim
    for layer in range(model.n_layers):
        x = torch.from_numpy(t.hidden_states[layer])
        sa = hf_model.encoder.layer[layer].attention.self
        with torch.no_grad():
            for name, proj in (("queries", sa.query), ("keys", sa.key), ("values", sa.value)):
                ref = proj(x).reshape(t.n_tokens, model.n_heads, d).transpose(0, 1).numpy()
                np.testing.assert_allclose(getattr(t, name)[layer], ref, atol=TOL, rtol=0)
    # scores are the raw q.k: softmax(scores * scale) reproduces the weights
    logits = torch.from_numpy(t.scores) * t.scale
    np.testing.assert_allclose(torch.softmax(logits, -1).numpy(), t.weights, atol=1e-6)
    np.testing.assert_allclose(t.scale, 1 / np.sqrt(d))


CONFIGS = [
    dict(hidden_size=64, num_attention_heads=4, num_hidden_layers=3, intermediate_size=128,
         max_position_embeddings=128),
    dict(hidden_size=48, num_attention_heads=3, num_hidden_layers=2, intermediate_size=200,
         max_position_embeddings=64, type_vocab_size=3),
    dict(hidden_size=96, num_attention_heads=8, num_hidden_layers=1, intermediate_size=96,
         max_position_embeddings=40, hidden_act="gelu_new"),
]


@pytest.mark.parametrize("cfg", CONFIGS, ids=["h64x4x3", "h48x3x2", "h96x8x1_gelu_new"])
def test_random_bert_checkpoints_match_hf(tmp_path, cfg):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=30522, **cfg)
    BertModel(config, add_pooling_layer=False).save_pretrained(tmp_path)
    ref = BertModel.from_pretrained(
        tmp_path, local_files_only=True, attn_implementation="eager").eval()
    src = bundled_model_dir()
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(src / name, tmp_path / name)
    m = attnviz.load_model(tmp_path, device="cpu")
    assert (m.n_layers, m.n_heads, m.hidden) == (
        cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["hidden_size"])
    text = words(200)  # longer than max positions: truncated
    t = m.trace(text, "and a second segment")
    assert t.n_tokens == cfg["max_position_embeddings"] and t.dropped > 0
    check_trace_against(ref, t, m.n_heads)
    check_trace_against(ref, m.trace("I saw a saw"), m.n_heads)
