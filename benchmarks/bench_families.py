"""Every family's full trace vs transformers' eager model with attentions and hidden states,
at 128 tokens (a 224 x 224 image for ViT; BART: a 128-token source and a 128-token target).

The models have the width of the base sizes (768, 12 heads) and, under `make bench`, 4 layers
each (BART 4 + 4), 3 runs each; `python -m benchmarks.bench_families full`: the base sizes (12
layers; DistilBERT 6; BART 6 + 6), 10 runs each. Random weights (engine.random_models: no
pretrained weights of these families can be installed here; speed does not depend on the
values). BERT is the bundled MiniLM (6 x 384), as in bench_engine. Same weights, same input,
the two peers run alternately; medians.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

import attnviz
from attnviz.engine import bundled_model_dir
from attnviz.engine.random_models import save_random_checkpoint

from .bench_engine import median_ms
from .report import Table, show

TOKENS = 128
COST = ("It builds models of five families (4 layers of 768) and runs each against "
        "transformers (`full`: the base sizes, more than ten minutes on a shared 2-core "
        "machine).")
QUICK_LAYERS, QUICK_REPEATS = 4, 3
BASE = dict(hidden=768, heads=12, layers=12, intermediate=3072, positions=512)
FAMILIES = {  # family: (HF class, sizes)
    "bert": ("BertModel", None),
    "roberta": ("RobertaModel", BASE),
    "distilbert": ("DistilBertModel", dict(BASE, layers=6)),
    "gpt2": ("GPT2Model", dict(BASE, positions=1024)),
    "vit": ("ViTModel", dict(BASE, image_size=224, patch_size=16)),
    "bart": ("BartModel", dict(BASE, layers=6)),
}


def peers(family: str, folder: Path, model) -> tuple[dict, str]:
    import transformers

    cls = getattr(transformers, FAMILIES[family][0])
    dev = model.device
    hf = cls.from_pretrained(folder, local_files_only=True,
                             attn_implementation="eager").to(dev).eval()
    rng = np.random.default_rng(0)
    if family == "vit":
        image = rng.integers(0, 256, (224, 224, 3), dtype=np.uint8)
        request = attnviz.TraceRequest(image=image)
        pixels = torch.from_numpy(model.processing.pixels(request.image))[None]
        kwargs, what = dict(pixel_values=pixels.to(dev)), "224 x 224 image (197 tokens)"
    else:
        vocab = len(model.tokenizer)
        ids = rng.integers(5, vocab, TOKENS).tolist()
        request = attnviz.TraceRequest(ids=tuple(ids))
        kwargs, what = dict(input_ids=torch.tensor([ids], device=dev)), f"{TOKENS} tokens"
        if family == "bart":
            dec = model.decoder_input(request, ids).ids
            kwargs["decoder_input_ids"] = torch.tensor([dec], device=dev)
            what = f"{TOKENS} + {len(dec)} tokens"

    def ours():
        model.trace(request)

    def hf_eager():
        with torch.inference_mode():
            out = hf(**kwargs, output_attentions=True, output_hidden_states=True)
            [v.cpu() for v in out.values() if isinstance(v, torch.Tensor)]

    return {"attnviz": ours, "hf_eager": hf_eager}, what


def run(device: str = "cpu", repeats: int = 10, layers: int | None = None) -> list[dict]:
    """Each family against transformers (`layers`: every random model's, else its base)."""
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="attnviz-bench-"))
    try:
        for family, (_, sizes) in FAMILIES.items():
            if sizes is None:
                folder = bundled_model_dir()
            else:
                if layers is not None:
                    sizes = dict(sizes, layers=layers)
                folder = save_random_checkpoint(family, tmp / family, **sizes)
            model = attnviz.load_model(folder, device=device)
            fns, what = peers(family, folder, model)
            med = median_ms(fns, repeats, model.device)
            rows.append(dict(family=model.title, size=f"{model.n_layers} x {model.hidden}",
                             input=what, **{f"{k}_ms": v for k, v in med.items()},
                             ratio=med["attnviz"] / med["hf_eager"]))
            if sizes is not None:
                shutil.rmtree(tmp / family, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def table(rows: list[dict], device: str, repeats: int = 10,
          layers: int | None = None) -> Table:
    import transformers

    return Table(["family", "layers x hidden", "input", "attnviz trace (ms)",
                  "HF eager + attentions (ms)", "attnviz / HF"],
                 [[r["family"], r["size"], r["input"], f"{r['attnviz_ms']:.1f}",
                   f"{r['hf_eager_ms']:.1f}", f"{r['ratio']:.2f}x"] for r in rows],
                 title=f"Each family's trace against transformers {transformers.__version__} "
                       f"eager (attentions + hidden states), {device.upper()}; medians of "
                       f"{repeats}, run alternately"
                       + (f"; random models of {layers} layers (quick size; BERT: the bundled "
                          "model)" if layers else ""))


def main() -> list[Table]:
    full = "full" in sys.argv[1:]
    repeats, layers = (10, None) if full else (QUICK_REPEATS, QUICK_LAYERS)
    tables = [table(run("cpu", repeats, layers), "cpu", repeats, layers)]
    if torch.cuda.is_available():
        tables.append(table(run("cuda", repeats, layers), "cuda", repeats, layers))
    return show(*tables)


if __name__ == "__main__":
    main()
