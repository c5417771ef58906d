"""Small randomly initialised checkpoints of every family, saved as Hugging Face saves them.

No pretrained GPT-2, RoBERTa, DistilBERT, ViT or BART can be installed with attnviz; these
stand in for them where a real one is not needed: the engine's parity tests against
transformers, the benchmarks, and trying the pages without a Hugging Face cache.

    save_random_checkpoint("gpt2", "models/tiny-gpt2")            config + weights + tokenizer
    save_random_checkpoint("vit", "models/tiny-vit", hidden=64)    + preprocessor_config.json
    save_random_checkpoint("llama", "models/tiny-llama", kv_heads=2)   grouped keys/values
    save_random_checkpoint("gemma2", "models/tiny-gemma2", sliding_window=3)

The weights are transformers' own initialisation with every tensor then moved by seeded
noise (LayerNorm scales are not all 1 and biases not all 0, so a parity test sees every
parameter). Byte-level BPE tokenizers (GPT-2, RoBERTa, BART) are trained on a short built-in
text; WordPiece ones (BERT, DistilBERT) are the bundled model's; today's decoders (Llama,
Mistral, Qwen2, Qwen3, Gemma 2, Gemma 3 text: DECODER_NAMES) get a byte-level BPE that starts
every text with <s>, and head_dim = hidden / heads unless the config says otherwise.
Attention patterns of random weights teach nothing about language: these checkpoints are for
checking numbers and layouts.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import torch

CORPUS = """I saw a saw. The quick brown fox jumps over the lazy dog while I saw a saw near the
river bank, and a watch on my watch. Attention is all you need: queries, keys and values.
A bank by the river; a bank in the city. The cat sat on the mat because it was warm.
Self-attention lets every token look at every other token. Decoders look only backwards.
""" * 4

DECODER_NAMES = ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text")
FAMILY_NAMES = ("bert", "roberta", "distilbert", "gpt2", "vit", "bart", *DECODER_NAMES)
BPE_SPECIALS = {"gpt2": ["<|endoftext|>"],
                "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"],
                "bart": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]}


def train_bpe(specials: list[str],
              vocab_size: int = 600) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """A byte-level BPE vocabulary and merges learnt from CORPUS (every byte is in it)."""
    from tokenizers import ByteLevelBPETokenizer

    tok = ByteLevelBPETokenizer()  # its trainer starts from all 256 byte stand-ins
    tok.train_from_iterator([CORPUS], vocab_size=vocab_size, min_frequency=1,
                            special_tokens=specials, show_progress=False)
    with tempfile.TemporaryDirectory() as d:
        tok.save_model(d)
        vocab = json.loads((Path(d) / "vocab.json").read_text(encoding="utf-8"))
        lines = (Path(d) / "merges.txt").read_text(encoding="utf-8").splitlines()
    return vocab, [tuple(m.split(" ")) for m in lines if m and not m.startswith("#")]


def _wordpiece(folder: Path) -> int:
    from .load import bundled_model_dir

    src = bundled_model_dir()
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt",
                 "special_tokens_map.json"):
        if (src / name).is_file():
            shutil.copy(src / name, folder / name)
    return len((src / "vocab.txt").read_text(encoding="utf-8").splitlines())


def _bpe_tokenizer(family: str, folder: Path) -> int:
    from transformers import BartTokenizer, GPT2Tokenizer, RobertaTokenizer

    vocab, merges = train_bpe(BPE_SPECIALS[family])
    if family == "gpt2":
        end = "<|endoftext|>"
        tok = GPT2Tokenizer(vocab=vocab, merges=merges, bos_token=end, eos_token=end,
                            unk_token=end)
    else:
        cls = RobertaTokenizer if family == "roberta" else BartTokenizer
        tok = cls(vocab=vocab, merges=merges)
    tok.save_pretrained(folder)
    return len(tok)


def _decoder_tokenizer(folder: Path) -> int:
    """A byte-level BPE learnt from CORPUS, as a fast tokenizer that starts each text with <s>."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=600, special_tokens=["<s>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator([CORPUS], trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tok.token_to_id("<s>"))])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    fast.save_pretrained(folder)
    return len(fast) + 16  # room for tokens a family's own tokenizer class may add


def _decoder_model(family: str, vocab: int, hidden: int, heads: int, layers: int,
                   intermediate: int, positions: int, kv_heads: int | None, config: dict):
    import transformers as tr

    classes = {"llama": (tr.LlamaConfig, tr.LlamaModel),
               "mistral": (tr.MistralConfig, tr.MistralModel),
               "qwen2": (tr.Qwen2Config, tr.Qwen2Model),
               "qwen3": (tr.Qwen3Config, tr.Qwen3Model),
               "gemma2": (tr.Gemma2Config, tr.Gemma2Model),
               "gemma3_text": (tr.Gemma3TextConfig, tr.Gemma3TextModel)}
    config_class, model_class = classes[family]
    head_dim = config.pop("head_dim", hidden // heads)
    if family.startswith("gemma"):
        config.setdefault("query_pre_attn_scalar", head_dim)
    cfg = config_class(vocab_size=vocab, hidden_size=hidden, num_attention_heads=heads,
                       num_key_value_heads=kv_heads or heads, num_hidden_layers=layers,
                       intermediate_size=intermediate, max_position_embeddings=positions,
                       head_dim=head_dim, bos_token_id=0, eos_token_id=1, pad_token_id=None,
                       **config)
    return model_class(cfg)


def _perturb(model: torch.nn.Module, seed: int, scale: float) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)


def save_random_checkpoint(family: str, folder, *, seed: int = 0, hidden: int = 32,
                           heads: int = 4, layers: int = 2, intermediate: int = 64,
                           positions: int = 64, image_size: int = 32, patch_size: int = 8,
                           noise: float = 0.1, kv_heads: int | None = None,
                           **config) -> Path:
    """Write a random checkpoint of `family` (one of FAMILY_NAMES) into `folder`; returns it.

    `positions` is the number of tokens the model takes; `kv_heads` a decoder's key/value heads
    (DECODER_NAMES; default: as many as heads); `config` overrides any other transformers
    config field (e.g. hidden_act="gelu_new", decoder_layers=3, sliding_window=3).
    """
    import transformers as tr
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    if family not in FAMILY_NAMES:
        raise ValueError(f"family must be one of {', '.join(FAMILY_NAMES)}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    if family in ("bert", "distilbert"):
        vocab = max(_wordpiece(folder), config.pop("vocab_size", 0))
    elif family == "vit":
        vocab = 0
    elif family in DECODER_NAMES:
        vocab = max(_decoder_tokenizer(folder), config.pop("vocab_size", 0))
    else:
        vocab = max(_bpe_tokenizer(family, folder), config.pop("vocab_size", 0))
    if family == "bert":
        cfg = tr.BertConfig(vocab_size=vocab, hidden_size=hidden, num_attention_heads=heads,
                            num_hidden_layers=layers, intermediate_size=intermediate,
                            max_position_embeddings=positions, **config)
        model = tr.BertModel(cfg, add_pooling_layer=False)
    elif family == "roberta":
        cfg = tr.RobertaConfig(vocab_size=vocab, hidden_size=hidden, num_attention_heads=heads,
                               num_hidden_layers=layers, intermediate_size=intermediate,
                               max_position_embeddings=positions + 2, type_vocab_size=1,
                               pad_token_id=1, bos_token_id=0, eos_token_id=2, **config)
        model = tr.RobertaModel(cfg, add_pooling_layer=False)
    elif family == "distilbert":
        cfg = tr.DistilBertConfig(vocab_size=vocab, dim=hidden, n_heads=heads, n_layers=layers,
                                  hidden_dim=intermediate, max_position_embeddings=positions,
                                  **config)
        model = tr.DistilBertModel(cfg)
    elif family == "gpt2":
        end = 0  # <|endoftext|>, the first token the BPE was trained with
        cfg = tr.GPT2Config(vocab_size=vocab, n_embd=hidden, n_head=heads, n_layer=layers,
                            n_inner=intermediate, n_positions=positions, bos_token_id=end,
                            eos_token_id=end, **config)
        model = tr.GPT2Model(cfg)
    elif family in DECODER_NAMES:
        model = _decoder_model(family, vocab, hidden, heads, layers, intermediate, positions,
                               kv_heads, config)
    elif family == "vit":
        cfg = tr.ViTConfig(hidden_size=hidden, num_attention_heads=heads,
                           num_hidden_layers=layers, intermediate_size=intermediate,
                           image_size=image_size, patch_size=patch_size, **config)
        model = tr.ViTModel(cfg, add_pooling_layer=False)
        tr.ViTImageProcessorPil(size={"height": image_size, "width": image_size}
                                ).save_pretrained(folder)
    else:
        cfg = tr.BartConfig(vocab_size=vocab, d_model=hidden, encoder_attention_heads=heads,
                            decoder_attention_heads=heads, encoder_layers=layers,
                            decoder_layers=config.pop("decoder_layers", layers),
                            encoder_ffn_dim=intermediate, decoder_ffn_dim=intermediate,
                            max_position_embeddings=positions, pad_token_id=1, bos_token_id=0,
                            eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=2,
                            **config)
        model = tr.BartModel(cfg)
    _perturb(model, seed, noise)
    model.save_pretrained(folder)
    return folder
