"""The bundled model without transformers (engine.light): its config and tokenizer, read
straight from the files, against transformers itself (AutoConfig, AutoTokenizer), and a load
that imports no transformers module. Files that say anything the light path does not
reproduce go to transformers."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

import attnviz
from attnviz.engine import ARRAY_FIELDS, bundled_model_dir
from attnviz.engine import load as load_module
from attnviz.engine.light import CONFIG_FIELDS, LightTokenizer, bert_config, bert_tokenizer
from tests.fresh import last_line

ROOT = Path(__file__).resolve().parents[1]
LONG = "I saw a saw that could saw any saw I saw, and Café naïve 我看见了一把锯子. " * 40

TEXTS = [
    "I saw a saw",
    "我看见了一把锯子",
    "我用锯锯木头。",
    "The QUICK Brown fOx JUMPS over the lazy DOG",
    "Café naïve résumé Ångström Straße e\u0301 ÉCOLE",
    "Hello, world! (a) [b] {c}; \"quoted\" 'single' — dash… ellipsis? #tag @user 3.14 $5",
    "I ❤️ 🤖 and 👍🏽 🇫🇷",
    "[SEP] [MASK] [PAD] [CLS] [UNK]",
    "[sep] [mask] [Mask] [ SEP ] a[SEP]b [MASK]ed ##ing",
    "",
    " ",
    "   \t\n  ",
    "a\x00b\u200bc\u00a0d\x7f",
    "x" * 150 + " tail",  # longer than WordPiece's 100 characters: [UNK]
    "Привет мир مرحبا 안녕하세요 こんにちは",
    LONG,
]
PAIRS = [
    ("I saw a saw", "It was sharp"),
    ("", "only the second"),
    ("only the first", ""),
    (LONG, "a short second sentence"),
    ("a short first sentence", LONG),
    (LONG, LONG[::-1]),
    ("[SEP]", "[MASK] [CLS]"),
]
MAX = 512  # the bundled model's positions: what model.py truncates to


@pytest.fixture(scope="module")
def folder():
    return bundled_model_dir()


@pytest.fixture(scope="module")
def hf_tok(folder):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


@pytest.fixture(scope="module")
def light_tok(folder):
    tok = bert_tokenizer(folder)
    assert isinstance(tok, LightTokenizer), "the bundled files should take the light path"
    return tok


def encode(tok, *args, **kwargs):
    """A call's outputs as a plain dict (or the exception's type: both must fail alike)."""
    try:
        out = tok(*args, **kwargs)
    except Exception as e:  # the Rust truncation refuses a max_length below the template's
        return type(e).__name__
    return {k: list(v) for k, v in out.items()}


# ----------------------------------------------------------------------------------- config
def test_config_holds_what_transformers_reads(folder):
    from transformers import AutoConfig

    hf = AutoConfig.from_pretrained(folder, local_files_only=True)
    raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    light = bert_config(raw)
    assert light is not None
    for name in CONFIG_FIELDS:
        ours, theirs = getattr(light, name), getattr(hf, name)
        assert ours == theirs and type(ours) is type(theirs), (name, ours, theirs)


def test_every_attribute_the_engine_reads_from_the_config(folder, monkeypatch):
    """Loading and tracing read only fields of the light config, each equal to
    transformers' (found by recording every attribute asked for, getattr included)."""
    from transformers import AutoConfig

    hf = AutoConfig.from_pretrained(folder, local_files_only=True)
    asked: set[str] = set()

    class Recorder:
        def __init__(self, config):
            self._config = config

        def __getattr__(self, name):
            asked.add(name)
            return getattr(self._config, name)

    real = load_module.bert_config
    monkeypatch.setattr(load_module, "bert_config", lambda raw: Recorder(real(raw)))
    model = attnviz.load_model(device="cpu")
    model.trace("I saw a saw", "It was sharp")
    assert {"num_hidden_layers", "num_attention_heads", "hidden_size", "intermediate_size",
            "max_position_embeddings", "vocab_size", "type_vocab_size", "layer_norm_eps",
            "hidden_act"} <= asked
    assert asked <= set(CONFIG_FIELDS), asked - set(CONFIG_FIELDS)
    for name in asked:
        assert getattr(model.config, name) == getattr(hf, name), name


@pytest.mark.parametrize("change", [
    {"hidden_size": 384.0},  # transformers decides what a float size means
    {"num_hidden_layers": True},
    {"rope_theta": 10000.0},  # a key the light config does not know
    {"model_type": "roberta"},
    {"layer_norm_eps": 0},
])
def test_a_config_the_light_path_does_not_know_goes_to_transformers(folder, change):
    raw = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    assert bert_config(raw) is not None
    assert bert_config(raw | change) is None


def test_missing_keys_take_bert_configs_defaults():
    from transformers import BertConfig

    light, hf = bert_config({"model_type": "bert"}), BertConfig()
    for name in CONFIG_FIELDS:
        assert getattr(light, name) == getattr(hf, name, "absolute"), name


# -------------------------------------------------------------------------------- tokenizer
def test_special_tokens_vocabulary_and_length(light_tok, hf_tok):
    for name in ("unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
                 "bos_token", "eos_token"):
        assert getattr(light_tok, name) == getattr(hf_tok, name), name
        assert getattr(light_tok, name + "_id") == getattr(hf_tok, name + "_id"), name
    assert light_tok.all_special_tokens == hf_tok.all_special_tokens
    assert light_tok.all_special_ids == hf_tok.all_special_ids
    assert light_tok.special_tokens_map == hf_tok.special_tokens_map
    assert len(light_tok) == len(hf_tok) == 30522
    assert light_tok.model_max_length == hf_tok.model_max_length == MAX
    assert light_tok.get_vocab() == hf_tok.get_vocab()
    tokens = ["saw", "##ing", "[MASK]", "not-a-token", "锯", "Saw"]
    assert light_tok.convert_tokens_to_ids(tokens) == hf_tok.convert_tokens_to_ids(tokens)
    assert light_tok.convert_tokens_to_ids("saw") == hf_tok.convert_tokens_to_ids("saw")
    ids = [0, 1, 100, 101, 102, 103, 1045, 30521]
    assert light_tok.convert_ids_to_tokens(ids) == hf_tok.convert_ids_to_tokens(ids)
    assert light_tok.convert_ids_to_tokens(2387) == hf_tok.convert_ids_to_tokens(2387)
    assert light_tok.convert_ids_to_tokens(np.array([101, 2387])) == \
        hf_tok.convert_ids_to_tokens(np.array([101, 2387]))


@pytest.mark.parametrize("text,pair", [(t, None) for t in TEXTS] + PAIRS,
                         ids=lambda v: None if v is None else repr(v[:20]))
def test_encodings_equal_transformers(light_tok, hf_tok, text, pair):
    """model.py's two calls (the full text with its special-token mask; the text cut at the
    model's positions), the plain call, sequence ids, pieces, and truncation at
    lengths down to below the template's (where both refuse)."""
    calls = [
        dict(add_special_tokens=True, return_special_tokens_mask=True),
        dict(add_special_tokens=True, truncation=True, max_length=MAX),
        dict(),
        dict(add_special_tokens=False, return_special_tokens_mask=True),
        dict(truncation=True),  # model_max_length
        dict(max_length=16),  # max_length alone truncates
        dict(truncation=False, max_length=16),  # ... unless truncation says not to
        dict(truncation=True, max_length=7),
        dict(truncation=True, max_length=3),
        dict(truncation=True, max_length=1),
        dict(add_special_tokens=True, return_special_tokens_mask=True),  # truncation undone
    ]
    for kwargs in calls:
        ours, theirs = encode(light_tok, text, pair, **kwargs), encode(hf_tok, text, pair,
                                                                        **kwargs)
        assert ours == theirs, kwargs
        if isinstance(ours, dict):
            assert list(ours) == list(theirs)  # the same keys, in the same order
    a = light_tok(text, pair, add_special_tokens=True)
    b = hf_tok(text, pair, add_special_tokens=True)
    assert a.sequence_ids() == b.sequence_ids()
    assert light_tok.convert_ids_to_tokens(a["input_ids"]) == \
        hf_tok.convert_ids_to_tokens(b["input_ids"])
    assert a.get("token_type_ids") == b.get("token_type_ids")


def test_long_text_is_cut_at_the_models_positions(light_tok):
    full = light_tok(LONG, add_special_tokens=True, return_special_tokens_mask=True)
    cut = light_tok(LONG, add_special_tokens=True, truncation=True, max_length=MAX)
    assert len(full["input_ids"]) > MAX and len(cut["input_ids"]) == MAX
    assert cut["input_ids"][-1] == light_tok.sep_token_id


# ------------------------------------------------------------------------- the whole load
def test_a_trace_from_the_light_path_equals_the_transformers_paths(cpu_model):
    light = cpu_model
    hf = attnviz.load_model(device="cpu", light=False)
    assert isinstance(light.tokenizer, LightTokenizer)
    assert not isinstance(hf.tokenizer, LightTokenizer)
    assert type(hf.config).__module__.startswith("transformers")
    assert light.special_pieces() == hf.special_pieces()
    for text, pair in [("I saw a saw", None), ("I saw a saw", "It was sharp"),
                       ("You typed [SEP] and [MASK] here", None), (LONG, None),
                       ("Café 我看见了一把锯子 🤖", "")]:
        a, b = light.trace(text, pair), hf.trace(text, pair)
        assert a.token_ids.tolist() == b.token_ids.tolist()
        assert a.tokens == b.tokens and a.pieces == b.pieces
        assert (a.dropped, a.typed_control_tokens) == (b.dropped, b.typed_control_tokens)
        assert a.notes == b.notes
        assert torch.equal(torch.from_numpy(a.weights), torch.from_numpy(b.weights))
        for name in ARRAY_FIELDS:
            x, y = getattr(a, name), getattr(b, name)
            assert (x is None and y is None) or np.array_equal(x, y), name


def test_a_servers_token_cap_cuts_alike():
    light = attnviz.load_model(device="cpu", max_tokens=9)
    hf = attnviz.load_model(device="cpu", max_tokens=9, light=False)
    for text, pair in [("I saw a saw that could saw any saw", None),
                       ("I saw a saw that could", "saw any saw I saw")]:
        a, b = light.tokenized(text, pair), hf.tokenized(text, pair)
        assert a == b and len(a.ids) == 9 and a.dropped > 0


def test_loading_the_bundled_model_imports_no_transformers():
    code = ("import sys, attnviz; m = attnviz.load_model(device='cpu'); "
            "m.trace('I saw a saw', 'It was sharp'); "
            "print(type(m.tokenizer).__name__, type(m.config).__name__, "
            "sorted(k for k in sys.modules if k.split('.')[0] == 'transformers'))")
    assert last_line(code) == "LightTokenizer LightBertConfig []"


# ------------------------------------------------------------ files it does not reproduce
def copy_tokenizer(folder: Path, dst: Path) -> Path:
    dst.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                 "vocab.txt", "config.json"):
        shutil.copy(folder / name, dst / name)
    return dst


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


EDITS = {
    "lowercase off in tokenizer_config": ("tokenizer_config.json",
                                          lambda d: d.update(do_lower_case=False)),
    "accents stripped in tokenizer_config": ("tokenizer_config.json",
                                             lambda d: d.update(strip_accents=True)),
    "chinese chars off in tokenizer_config": ("tokenizer_config.json",
                                              lambda d: d.update(tokenize_chinese_chars=False)),
    "an unknown tokenizer_config key": ("tokenizer_config.json",
                                        lambda d: d.update(split_special_tokens=True)),
    "another tokenizer class": ("tokenizer_config.json",
                                lambda d: d.update(tokenizer_class="DistilBertTokenizer")),
    "special tokens that disagree": ("special_tokens_map.json",
                                     lambda d: d.update(mask_token="[UNK]")),
    "an extra special token": ("special_tokens_map.json",
                               lambda d: d.update(additional_special_tokens=["[X]"])),
    "lowercase off in tokenizer.json": ("tokenizer.json",
                                        lambda d: d["normalizer"].update(lowercase=False)),
    "another template": ("tokenizer.json",
                         lambda d: d["post_processor"]["single"].pop(0)),
    "an added token": ("tokenizer.json", lambda d: d["added_tokens"].append(
        dict(d["added_tokens"][0], id=999, content="[unused994]"))),
    "a normalized added token": ("tokenizer.json",
                                 lambda d: d["added_tokens"][4].update(normalized=True)),
    "left truncation": ("tokenizer.json", lambda d: d["truncation"].update(direction="Left")),
    "another word length": ("tokenizer.json",
                            lambda d: d["model"].update(max_input_chars_per_word=50)),
}


def test_an_unchanged_copy_takes_the_light_path(folder, tmp_path):
    assert isinstance(bert_tokenizer(copy_tokenizer(folder, tmp_path / "t")), LightTokenizer)


@pytest.mark.parametrize("edit", list(EDITS))
def test_files_that_disagree_go_to_transformers(folder, tmp_path, edit):
    d = copy_tokenizer(folder, tmp_path / "t")
    name, change = EDITS[edit]
    edit_json(d / name, change)
    assert bert_tokenizer(d) is None


def test_the_bundled_model_with_such_files_loads_through_transformers(folder, tmp_path,
                                                                      monkeypatch):
    d = copy_tokenizer(folder, tmp_path / "bundled")
    # a copy: a link out of the folder is refused (engine.folders)
    shutil.copyfile(folder / "model.safetensors", d / "model.safetensors")
    edit_json(d / "tokenizer_config.json", lambda c: c.update(do_lower_case=False))
    monkeypatch.setattr(load_module, "bundled_model_dir", lambda: d)
    model = attnviz.load_model(device="cpu")
    assert not isinstance(model.tokenizer, LightTokenizer)
    # transformers rebuilds the normalizer from tokenizer_config.json: case kept, and the
    # uncased vocabulary has no 'Saw'; tokenizer.json alone would still lowercase it
    assert model.tokens_of(model.tokenize("Saw")[0]) == ["[CLS]", "[UNK]", "[SEP]"]
    assert bert_tokenizer(folder).convert_ids_to_tokens(
        bert_tokenizer(folder)("Saw")["input_ids"]) == ["[CLS]", "saw", "[SEP]"]
