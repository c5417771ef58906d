"""attnviz's ablation and patching numbers beside TransformerLens' HookedEncoder (an independent
implementation of BERT with hooks on every intermediate), on the bundled all-MiniLM-L6-v2.

TransformerLens is not one of attnviz's dependencies (it pulls in wandb, datasets, pandas,
pyarrow...), so it lives in its own virtual environment and this script runs in two halves:
the project's Python computes attnviz's numbers and calls the other environment's Python on
this same file (`--side tl`), which loads the same weights into HookedEncoder and computes the
same things with hooks; then the differences are printed.

    python -m venv ~/.cache/attnviz-tl
    ~/.cache/attnviz-tl/bin/pip install torch==2.13.0 transformer-lens==3.9.0
    .venv/bin/python scripts/compare_transformer_lens.py --tl-python ~/.cache/attnviz-tl/bin/python

HookedEncoder exists up to TransformerLens 3.x (4.0 removed it in favour of TransformerBridge,
which wraps Hugging Face's own modules and so is not an independent implementation).
`HookedEncoder.from_pretrained` resolves the model name on the Hub; offline, the config is
written here from the checkpoint's config.json and the weights are converted by
TransformerLens' own `convert_bert_weights` from a `BertForPreTraining` loaded from the local
folder (its pre-training heads, absent from the checkpoint, are random and never used).

What is compared (conventions in docs/ablation.md):
- the attention weights: attnviz's Trace.weights and blocks.L.attn.hook_pattern;
- the final vectors: Trace.hidden_states[-1] and the encoder output (last block's
  hook_normalized_resid_post; BERT is post-LayerNorm, so no LayerNorm is folded);
- the head-importance map of "I saw a saw" (the two "saw"s' cosine with each head removed),
  zero ablation = blocks.L.attn.hook_z[:, :, h] := 0 (and, the same thing,
  hook_result[:, :, h] := 0), mean ablation = hook_z[:, :, h] := its mean over every token of
  attnviz's REFERENCE_SENTENCES;
- a layer's attention removed: blocks.L.hook_attn_out := 0 (b_O included);
- patching each head's output from "I saw a saw" into "I saw a dog": hook_z from the clean run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

TEXT, CORRUPTED = "I saw a saw", "I saw a dog"


# ------------------------------------------------------------------ attnviz's half
def attnviz_side(tl_python: str) -> int:
    import numpy as np

    import attnviz
    from attnviz.analysis import ablation
    from attnviz.engine import bundled_model_dir
    from attnviz.engine.request import REFERENCE_SENTENCES, TraceRequest

    model = attnviz.load_model(device="cpu")
    req = TraceRequest(TEXT)
    t = model.trace(req)
    ours = {
        "weights": t.weights, "final": t.hidden_states[-1],
        "zero": ablation.head_importance(model, req, "repeat", "zero").values,
        "mean": ablation.head_importance(model, req, "repeat", "mean").values,
        "layers": ablation.layer_removal(model, req)[1],
        "patch": ablation.patching(model, req, TraceRequest(CORRUPTED)).heads,
    }
    pair = ablation.first_repeated_pair(t.tokens)
    job = {"folder": str(bundled_model_dir()), "pair": list(pair),
           "ids": t.token_ids.tolist(), "corrupted": model.trace(CORRUPTED).token_ids.tolist(),
           "reference": [model.tokenize(s)[0] for s in REFERENCE_SENTENCES]}
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "job.json").write_text(json.dumps(job))
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "PYTHONWARNINGS": "ignore"}
        env.pop("PYTHONPATH", None)
        run = subprocess.run([tl_python, __file__, "--side", "tl", "--job", tmp], env=env,
                             capture_output=True, text=True)
        if run.returncode:
            print(run.stdout + run.stderr[-4000:])
            return run.returncode
        theirs = dict(np.load(Path(tmp) / "tl.npz"))
        versions = json.loads((Path(tmp) / "versions.json").read_text())
    import torch
    import transformers
    print(f"attnviz side: torch {torch.__version__}, transformers {transformers.__version__}")
    print("TransformerLens side: " + ", ".join(f"{k} {v}" for k, v in versions.items()))
    print(f'sentence "{TEXT}" (tokens {t.tokens}), corrupted "{CORRUPTED}"')
    worst = 0.0
    for name, what in (("weights", "attention weights [6, 12, n, n] vs hook_pattern"),
                       ("final", "final vectors [n, 384] vs encoder_output"),
                       ("zero", "72-head map, zero ablation (hook_z := 0)"),
                       ("zero_result", "72-head map, zero ablation (hook_result := 0)"),
                       ("mean", "72-head map, mean ablation (hook_z := reference mean)"),
                       ("layers", "a layer's attention removed (hook_attn_out := 0)"),
                       ("patch", "patching each head's output, restored fraction (hook_z)")):
        a = ours["zero" if name == "zero_result" else name]
        d = float(np.abs(np.asarray(a, np.float64) - theirs[name]).max())
        worst = max(worst, d)
        print(f"  max |attnviz - TransformerLens| = {d:.2e}   {what}")
    ranks_equal = np.array_equal(np.argsort(-ours["zero"].ravel(), kind="stable"),
                                 np.argsort(-theirs["zero"].ravel(), kind="stable"))
    print(f"  same ranking of the 72 heads (zero): {ranks_equal}")
    ok = worst <= 1e-5
    print("all within 1e-5" if ok else "DIFFERENCE above 1e-5")
    return 0 if ok else 1


# ------------------------------------------------------------------ TransformerLens' half
def tl_side(folder: str) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    import numpy as np
    import torch
    import transformer_lens
    import transformers
    from transformer_lens import HookedEncoder, HookedTransformerConfig
    from transformer_lens.pretrained.weight_conversions.bert import convert_bert_weights
    from transformers import BertForPreTraining

    transformers.logging.set_verbosity_error()
    job = json.loads((Path(folder) / "job.json").read_text())
    hf = BertForPreTraining.from_pretrained(job["folder"], local_files_only=True).eval()
    c = hf.config
    cfg = HookedTransformerConfig(
        d_model=c.hidden_size, d_head=c.hidden_size // c.num_attention_heads,
        n_heads=c.num_attention_heads, d_mlp=c.intermediate_size, n_layers=c.num_hidden_layers,
        n_ctx=c.max_position_embeddings, eps=c.layer_norm_eps, d_vocab=c.vocab_size,
        act_fn=c.hidden_act, attention_dir="bidirectional",
        original_architecture="BertForMaskedLM", use_attn_result=True, device="cpu",
        dtype=torch.float32)
    enc = HookedEncoder(cfg, move_to_device=False)
    missing, _unexpected = enc.load_state_dict(convert_bert_weights(hf, cfg), strict=False)
    assert not [k for k in missing if not k.endswith(("IGNORE", "mask"))], missing
    enc.eval()
    L, H = cfg.n_layers, cfg.n_heads
    ids = torch.tensor([job["ids"]])
    i, j = job["pair"]

    def final(tokens, hooks=()):
        with torch.no_grad(), enc.hooks(fwd_hooks=list(hooks)):
            return enc.encoder_output(tokens)[0].double()  # [n, d_model]

    def saws(h) -> float:
        return float(torch.nn.functional.cosine_similarity(h[i], h[j], dim=-1))

    def set_head(h, value=0.0):
        def hook(act, hook):  # act [batch, pos, head, ...]
            act = act.clone()
            act[:, :, h] = value
            return act
        return hook

    with torch.no_grad():
        _out, cache = enc.run_with_cache(ids)
    out = {"weights": torch.stack([cache[f"blocks.{li}.attn.hook_pattern"][0]
                                   for li in range(L)]).numpy(),
           "final": final(ids).numpy()}
    # mean ablation's fill: each head's z averaged over every token of the reference sentences
    zs = [[] for _l in range(L)]
    for ref in job["reference"]:
        with torch.no_grad():
            _o, rc = enc.run_with_cache(torch.tensor([ref]), names_filter=lambda n: "hook_z" in n)
        for li in range(L):
            zs[li].append(rc[f"blocks.{li}.attn.hook_z"][0])  # [pos, head, d_head]
    means = [torch.cat(z).mean(0) for z in zs]  # [head, d_head]
    for name, point, fill in (("zero", "hook_z", None), ("zero_result", "hook_result", None),
                              ("mean", "hook_z", means)):
        values = np.zeros((L, H))
        for li in range(L):
            for h in range(H):
                value = 0.0 if fill is None else fill[li][h]
                values[li, h] = saws(final(ids, [(f"blocks.{li}.attn.{point}",
                                                 set_head(h, value))]))
        out[name] = values
    out["layers"] = np.array([saws(final(ids, [(f"blocks.{li}.hook_attn_out",
                                                lambda act, hook: torch.zeros_like(act))]))
                              for li in range(L)])
    bad = torch.tensor([job["corrupted"]])
    with torch.no_grad():
        _o, clean = enc.run_with_cache(ids, names_filter=lambda n: "hook_z" in n)
    m_clean, m_bad = saws(final(ids)), saws(final(bad))
    patch = np.zeros((L, H))
    for li in range(L):
        for h in range(H):
            src = clean[f"blocks.{li}.attn.hook_z"][:, :, h]
            patch[li, h] = (saws(final(bad, [(f"blocks.{li}.attn.hook_z", set_head(h, src))]))
                           - m_bad) / (m_clean - m_bad)
    out["patch"] = patch
    np.savez(Path(folder) / "tl.npz", **out)
    (Path(folder) / "versions.json").write_text(json.dumps({
        "transformer_lens": transformer_lens.__version__ if hasattr(
            transformer_lens, "__version__") else _version("transformer-lens"),
        "torch": torch.__version__, "transformers": transformers.__version__}))


def _version(dist: str) -> str:
    from importlib.metadata import version

    return version(dist)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tl-python", default=str(Path.home() / ".cache/attnviz-tl/bin/python"),
                   help="the Python of a virtual environment with transformer-lens 3.x")
    p.add_argument("--side", choices=("attnviz", "tl"), default="attnviz", help=argparse.SUPPRESS)
    p.add_argument("--job", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.side == "tl":
        tl_side(args.job)
        return 0
    if not Path(args.tl_python).exists():
        print(f"no Python at {args.tl_python}: make the environment first (see the docstring)")
        return 2
    return attnviz_side(args.tl_python)


if __name__ == "__main__":
    sys.exit(main())
