"""The bundled BERT's config and tokenizer read straight from its files, without transformers.

Importing transformers is a long pure-Python import that holds the GIL while a fresh server
serves its first visitor; for the bundled model (engine.load's default) these two light
pieces stand in for `AutoConfig.from_pretrained` and `AutoTokenizer.from_pretrained`:

    bert_config(config_json)   LightBertConfig: the file's values, BertConfig's defaults
    bert_tokenizer(folder)     LightTokenizer: tokenizers.Tokenizer on tokenizer.json, with
                               the part of transformers' tokenizer API attnviz uses

Each returns None when its files say anything it does not know (a key, a type, a tokenizer
pipeline that transformers would build differently from tokenizer_config.json): engine.load
then uses transformers, as for every other checkpoint. tests/test_engine_light.py checks both
against transformers itself.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


# --------------------------------------------------------------------------------- config
@dataclass(frozen=True)
class LightBertConfig:
    """transformers' BertConfig fields and defaults (v5), plus position_embedding_type and
    model_type, which a BERT config.json carries beside them."""

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int | None = 0
    use_cache: bool = True
    classifier_dropout: float | None = None
    is_decoder: bool = False
    add_cross_attention: bool = False
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    tie_word_embeddings: bool = True
    position_embedding_type: str = "absolute"
    model_type: str = "bert"


# What each field may hold for the light path (anything else: transformers decides).
_INT, _FLOAT, _NUM = (int,), (float,), (int, float)
_TYPES: dict[str, tuple[type, ...]] = {
    "vocab_size": _INT, "hidden_size": _INT, "num_hidden_layers": _INT,
    "num_attention_heads": _INT, "intermediate_size": _INT, "hidden_act": (str,),
    "hidden_dropout_prob": _NUM, "attention_probs_dropout_prob": _NUM,
    "max_position_embeddings": _INT, "type_vocab_size": _INT, "initializer_range": _FLOAT,
    "layer_norm_eps": _FLOAT, "pad_token_id": (int, type(None)), "use_cache": (bool,),
    "classifier_dropout": (int, float, type(None)), "is_decoder": (bool,),
    "add_cross_attention": (bool,), "bos_token_id": (int, type(None)),
    "eos_token_id": (int, type(None)), "tie_word_embeddings": (bool,),
    "position_embedding_type": (str,), "model_type": (str,),
}
# Keys a saved config carries that no field of ours depends on.
_BOOKKEEPING = frozenset({"_name_or_path", "architectures", "transformers_version",
                          "gradient_checkpointing"})


def bert_config(raw: dict) -> LightBertConfig | None:
    """The config of a BERT config.json, or None when it holds a key or a type this does not
    know (transformers then reads it, and says what is wrong)."""
    if raw.get("model_type") != "bert":
        return None
    values = {}
    for key, value in raw.items():
        if key in _BOOKKEEPING:
            continue
        allowed = _TYPES.get(key)
        if allowed is None or (isinstance(value, bool) and bool not in allowed):
            return None  # unknown key, or a bool where a number goes
        if not isinstance(value, allowed):
            return None
        values[key] = value
    return LightBertConfig(**values)


CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(LightBertConfig))

# ------------------------------------------------------------------------------ tokenizer
# BertTokenizer's named special tokens and defaults; transformers lists them in this order.
SPECIAL_ORDER = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
                 "mask_token")
BERT_SPECIALS = {"unk_token": "[UNK]", "sep_token": "[SEP]", "pad_token": "[PAD]",
                 "cls_token": "[CLS]", "mask_token": "[MASK]"}
LARGE_INTEGER = int(1e20)  # transformers: a model_max_length above this means "none"
VERY_LARGE_INTEGER = int(1e30)  # transformers' model_max_length when the config has none
_CONFIG_KEYS = frozenset({"do_lower_case", "tokenize_chinese_chars", "strip_accents",
                          "name_or_path", "do_basic_tokenize", "never_split", "tokenizer_class",
                          "model_max_length", *BERT_SPECIALS})
_STRATEGIES = ("longest_first", "only_first", "only_second")


class Encoded(dict):
    """What `LightTokenizer(...)` returns: transformers' BatchEncoding for one text (a dict
    of lists) with its `sequence_ids()`."""

    encoding: Any = None  # the tokenizers.Encoding

    def sequence_ids(self, batch_index: int = 0) -> list[int | None]:
        """Which sentence each token came from (None: a token the template added)."""
        if batch_index != 0:
            raise IndexError("one text was encoded")
        return self.encoding.sequence_ids


class LightTokenizer:
    """A BERT tokenizer.json behind the part of transformers' tokenizer API that attnviz
    uses: calling it on a text (and a pair), convert_ids_to_tokens / convert_tokens_to_ids,
    the named special tokens and their ids, all_special_tokens / all_special_ids,
    get_vocab(), len(). Made by `bert_tokenizer`, which checks that transformers would build
    the same pipeline from the folder."""

    truncation_side = "right"

    def __init__(self, backend, specials: dict[str, str], model_max_length: int):
        backend.no_truncation()  # tokenizer.json may carry both (the bundled one: 128 tokens);
        backend.no_padding()  # transformers sets them per call, as __call__ does here
        self._tok = backend
        self.model_max_length = model_max_length
        self.special_tokens_map = dict(specials)
        for name in SPECIAL_ORDER:
            token = specials.get(name)
            setattr(self, name, token)
            setattr(self, f"{name}_id",
                    None if token is None else self.convert_tokens_to_ids(token))

    @property
    def all_special_tokens(self) -> list[str]:
        tokens = (self.special_tokens_map.get(name) for name in SPECIAL_ORDER)
        return list(dict.fromkeys(t for t in tokens if t is not None))

    @property
    def all_special_ids(self) -> list[int]:
        return self.convert_tokens_to_ids(self.all_special_tokens)

    def __len__(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    def get_vocab(self) -> dict[str, int]:
        return self._tok.get_vocab(with_added_tokens=True)

    def convert_tokens_to_ids(self, tokens: str | list[str]) -> int | list[int]:
        if isinstance(tokens, str):
            index = self._tok.token_to_id(tokens)
            return self.unk_token_id if index is None else index
        return [self.convert_tokens_to_ids(t) for t in tokens]

    def convert_ids_to_tokens(self, ids: int | list[int]) -> str | list[str]:
        if isinstance(ids, int):
            return self._tok.id_to_token(ids)
        return [self._tok.id_to_token(int(i)) for i in ids]

    def __call__(self, text: str, text_pair: str | None = None, *,
                 add_special_tokens: bool = True, truncation: bool | str | None = None,
                 max_length: int | None = None,
                 return_special_tokens_mask: bool = False) -> Encoded:
        """One text (and a second one) as transformers encodes it: an empty second text is
        no pair, `max_length` alone truncates, truncation without one stops at
        model_max_length; nothing is padded."""
        if not isinstance(text, str) or not isinstance(text_pair, (str, type(None))):
            raise TypeError("the light tokenizer encodes one text (and a second one), as str")
        if max_length is not None and truncation is None:
            truncation = "longest_first"
        if truncation is True:
            truncation = "longest_first"
        elif truncation in (None, False, "do_not_truncate"):
            truncation = None
        elif truncation not in _STRATEGIES:
            raise ValueError(f"unknown truncation strategy {truncation!r}")
        if truncation is not None and max_length is None:
            if self.model_max_length > LARGE_INTEGER:
                truncation = None
            else:
                max_length = self.model_max_length
        self._truncate(truncation, max_length)
        enc = self._tok.encode(text, text_pair or None, add_special_tokens=add_special_tokens)
        out = Encoded(input_ids=enc.ids, token_type_ids=enc.type_ids,
                      attention_mask=enc.attention_mask)
        if return_special_tokens_mask:
            out["special_tokens_mask"] = enc.special_tokens_mask
        out.encoding = enc
        return out

    def _truncate(self, strategy: str | None, max_length: int | None) -> None:
        """The backend's truncation for this call, changed only when it differs (as
        transformers' set_truncation_and_padding does)."""
        current = self._tok.truncation
        if strategy is None:
            if current is not None:
                self._tok.no_truncation()
            return
        target = {"max_length": max_length, "stride": 0, "strategy": strategy,
                  "direction": self.truncation_side}
        if current is None or {k: current.get(k) for k in target} != target:
            self._tok.enable_truncation(**target)

    def __repr__(self) -> str:
        return f"LightTokenizer(vocab={len(self)}, specials={self.all_special_tokens})"


def bert_tokenizer(folder: Path) -> LightTokenizer | None:
    """The folder's BERT tokenizer from tokenizer.json, or None unless transformers'
    BertTokenizer would build exactly this one.

    transformers (v5) rebuilds a BERT tokenizer from tokenizer.json's vocabulary with a
    BertNormalizer made from tokenizer_config.json (do_lower_case, tokenize_chinese_chars,
    strip_accents), a BertPreTokenizer, a WordPiece model and a [CLS] $A [SEP] ($B [SEP])
    template; the named special tokens come from special_tokens_map.json over
    tokenizer_config.json over BertTokenizer's defaults. Here tokenizer.json is used as it
    is, so each of those must equal what its file says, and nothing else may be configured.
    """
    try:
        text = (folder / "tokenizer.json").read_text(encoding="utf-8")
        spec = json.loads(text)
        tcfg = _json_object(folder / "tokenizer_config.json")
        smap = _json_object(folder / "special_tokens_map.json")
        if (folder / "added_tokens.json").exists() or not _plain(spec, tcfg, smap):
            return None
        specials = _specials(tcfg, smap)
        if specials is None or not _same_pipeline(spec, tcfg, specials):
            return None
        from tokenizers import Tokenizer

        backend = Tokenizer.from_str(text)
        max_len = tcfg.get("model_max_length", VERY_LARGE_INTEGER)
        return LightTokenizer(backend, specials, max_len)
    except Exception:  # any surprise in the files (tokenizers raises plain Exception):
        return None  # transformers reads them and says what is wrong


def _json_object(path: Path) -> dict:
    """A JSON object file's content; {} for a file that is not there."""
    if not path.exists():
        return {}
    value = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(value, dict):
        raise ValueError(f"{path.name} is not a JSON object")
    return value


def _plain(spec: dict, tcfg: dict, smap: dict) -> bool:
    """Only the settings this module reproduces, with values of the expected kinds."""
    if set(tcfg) - _CONFIG_KEYS or set(smap) - set(BERT_SPECIALS):
        return False
    if tcfg.get("tokenizer_class", "BertTokenizer") not in ("BertTokenizer", "BertTokenizerFast"):
        return False
    if tcfg.get("do_basic_tokenize", True) is not True or tcfg.get("never_split") is not None:
        return False
    if not all(isinstance(tcfg.get(k, True), bool) for k in ("do_lower_case",
                                                              "tokenize_chinese_chars")):
        return False
    if tcfg.get("strip_accents") is not None and not isinstance(tcfg["strip_accents"], bool):
        return False
    length = tcfg.get("model_max_length", VERY_LARGE_INTEGER)
    if isinstance(length, bool) or not isinstance(length, int) or length <= 0:
        return False
    truncation = spec.get("truncation")
    if truncation is not None and truncation.get("direction", "Right") != "Right":
        return False  # transformers would truncate from the left
    return True


def _specials(tcfg: dict, smap: dict) -> dict[str, str] | None:
    """The named special tokens; None when the two files disagree or one is not a string."""
    out = {}
    for name, default in BERT_SPECIALS.items():
        given = {f[name] for f in (tcfg, smap) if name in f}
        if len(given) > 1 or not all(isinstance(t, str) for t in given):
            return None
        out[name] = given.pop() if given else default
    return out


def _same_pipeline(spec: dict, tcfg: dict, specials: dict[str, str]) -> bool:
    """tokenizer.json's pipeline is the one BertTokenizer builds from tokenizer_config.json."""
    model = spec.get("model") or {}
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or any(t not in vocab for t in specials.values()):
        return False
    if (model.get("type") != "WordPiece" or model.get("unk_token") != specials["unk_token"]
            or model.get("continuing_subword_prefix") != "##"
            or model.get("max_input_chars_per_word") != 100):
        return False
    normalizer = {"type": "BertNormalizer", "clean_text": True,
                  "handle_chinese_chars": tcfg.get("tokenize_chinese_chars", True),
                  "strip_accents": tcfg.get("strip_accents"),
                  "lowercase": tcfg.get("do_lower_case", True)}
    if spec.get("normalizer") != normalizer:
        return False
    if spec.get("pre_tokenizer") != {"type": "BertPreTokenizer"}:
        return False
    if spec.get("decoder") != {"type": "WordPiece", "prefix": "##", "cleanup": True}:
        return False
    cls, sep = specials["cls_token"], specials["sep_token"]

    def special(token: str, type_id: int) -> dict:
        return {"SpecialToken": {"id": token, "type_id": type_id}}

    def sequence(name: str, type_id: int) -> dict:
        return {"Sequence": {"id": name, "type_id": type_id}}

    template = {
        "type": "TemplateProcessing",
        "single": [special(cls, 0), sequence("A", 0), special(sep, 0)],
        "pair": [special(cls, 0), sequence("A", 0), special(sep, 0), sequence("B", 1),
                 special(sep, 1)],
        "special_tokens": {t: {"id": t, "ids": [vocab[t]], "tokens": [t]}
                           for t in dict.fromkeys((cls, sep))},
    }
    if spec.get("post_processor") != template:
        return False
    # the added tokens: exactly the named special tokens, matched as typed, at their ids
    added = spec.get("added_tokens") or []
    plain = {"single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
             "special": True}
    wanted = set(specials.values())
    return (len(added) == len(wanted)
            and {a.get("content") for a in added} == wanted
            and all(a == {"id": vocab[a["content"]], "content": a["content"], **plain}
                    for a in added))
