"""Command line: `python -m attnviz export --text "I saw a saw" --out trace.npz`, `python -m
attnviz info`, `python -m attnviz lesson --json [--seed S]` and `python -m attnviz html --text
"I saw a saw" --out DIR` (a static site of the lesson's views: attnviz.export.site).

The NPZ's arrays carry the engine's names and shapes (see attnviz.engine.trace.ARRAY_FIELDS).
`lesson` trains the lesson's taggers (analysis.taggers) and prints, per tagger, its parameters
and held-out accuracy: all words, ambiguous, double-role, and by the distance of the deciding
word (taggers.report), so the lesson's claims can be reproduced outside the app.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .engine.positions import POSITION_MODES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, non-zero exit
        self.exit(2, f"attnviz: error: {message}\n")


def npz_out(value: str) -> Path:
    """The file `--out` names for an .npz, checked before any work: refused (ValueError, one
    line) when empty, a link, a folder, or in a folder that does not exist. Written exactly
    under that name (no .npz added) by `write_npz`."""
    if not value.strip():
        raise ValueError("--out is empty: name the .npz file to write")
    out = Path(value)
    if out.is_symlink():
        raise ValueError(f"--out is a link, not written through: {out}")
    if out.is_dir():
        raise ValueError(f"--out is a folder, not a file: {out}")
    if not out.parent.is_dir():
        raise ValueError(f"output folder does not exist: {out.parent}")
    return out


def write_npz(out: Path, save) -> None:
    """`save(file)` writes into a new file beside `out`, which is then renamed over it: a
    reader never sees half a file, and a link put there meanwhile is replaced, not written
    through."""
    import os
    import tempfile

    fd, part = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            save(f)
        os.replace(part, out)
    except BaseException:
        Path(part).unlink(missing_ok=True)
        raise


MODEL_HELP = ("a checkpoint folder, or a Hub id found in the local Hugging Face cache (never "
              "downloaded): BERT, RoBERTa, DistilBERT, GPT-2, ViT or BART; or a bundled model: "
              "minilm (all-MiniLM-L6-v2, the default) or smollm2 (SmolLM2-135M-Instruct, "
              "converted once from its 4-bit GGUF file)")


def say(line: str) -> None:
    """A line of progress (a bundled model's first conversion), on stderr."""
    print(f"attnviz: {line}", file=sys.stderr, flush=True)
MAX_IMAGE_BYTES = 64 << 20


def read_image(path: str):
    """An RGB array [H, W, 3] from a PNG or JPEG file, or ValueError."""
    import numpy as np
    from PIL import Image

    file = Path(path)
    if not file.is_file():
        raise ValueError(f"no such image file: {path}")
    if file.stat().st_size > MAX_IMAGE_BYTES:
        raise ValueError(f"image file larger than {MAX_IMAGE_BYTES >> 20} MiB: {path}")
    try:
        with Image.open(file) as im:
            return np.asarray(im.convert("RGB"))
    except Exception as err:  # noqa: BLE001 - any unreadable file is one message
        raise ValueError(f"cannot read {path} as an image ({type(err).__name__})") from None


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="attnviz", description="See self-attention in BERT and its relatives.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    e = sub.add_parser("export", help="run the engine on a text and write every intermediate")
    what = e.add_mutually_exclusive_group(required=True)
    what.add_argument("--text", help="the sentence to encode")
    what.add_argument("--image", help="a PNG or JPEG file, for a vision transformer (ViT)")
    e.add_argument("--pair", default=None, help="optional second sentence (segment B)")
    e.add_argument("--target", default=None,
                   help="an encoder-decoder's (BART's) decoder input; default: none")
    e.add_argument("--out", required=True, help="output .npz file")
    e.add_argument("--model", default=None, help=MODEL_HELP)
    e.add_argument("--positions", default="learned", choices=POSITION_MODES)
    e.add_argument("--window", type=int, default=None, help="truncated attention: +-W tokens")
    e.add_argument("--causal", action="store_true", help="each token sees only earlier tokens")
    e.add_argument("--seed", type=int, default=0, help="seed for --positions shuffled")
    e.add_argument("--device", default=None, help="cpu, cuda or auto (default)")
    h = sub.add_parser("html", help="write the lesson's views as a static site (no server, "
                       "no network needed to open it)")
    h.add_argument("--text", required=True, help="the sentence to encode")
    h.add_argument("--pair", default=None, help="optional second sentence (segment B)")
    h.add_argument("--out", required=True, help="output folder: new, empty, or one attnviz "
                   "wrote before (created if missing)")
    h.add_argument("--replace", action="store_true",
                   help="write into a folder attnviz did not write, over its files of the "
                   "same names")
    h.add_argument("--model", default=None, help=MODEL_HELP)
    h.add_argument("--lang", default="en", choices=("en", "zh"),
                   help="the site's language: en (English, default) or zh (Chinese)")
    i = sub.add_parser("info", help="describe a model folder (default: the bundled model)")
    i.add_argument("--model", default=None, help=MODEL_HELP)
    i.add_argument("--device", default=None, help="cpu, cuda or auto (default)")
    n = sub.add_parser("lesson", help="the lesson's taggers (trained, or read where the app "
                       "kept them for the same settings); print their held-out numbers")
    n.add_argument("--json", action="store_true", help="print JSON (default: a table)")
    n.add_argument("--again", action="store_true",
                   help="train them again even when kept (the same numbers, bit for bit)")
    n.add_argument("--seed", type=int, default=0, help="seed of the corpus and the training")
    n.add_argument("--epochs", type=int, default=None, help="passes over the training set")
    a = sub.add_parser("ablate", help="switch each head off and rank the heads by the change "
                       "of a measure; optionally patch from a clean into a corrupted sentence")
    a.add_argument("--text", required=True, help="the sentence (the clean one for --patch)")
    a.add_argument("--pair", default=None, help="second sentence, for --measure pair")
    a.add_argument("--measure", default="repeat", choices=("repeat", "pair", "change"),
                   help="repeat: cosine of the first repeated word's two tokens (default); "
                   "pair: the pair's similarity; change: mean change of every final vector")
    a.add_argument("--mode", default="zero", choices=("zero", "mean"),
                   help="zero: a head's output set to 0; mean: its mean over reference sentences")
    a.add_argument("--patch", default=None, metavar="CORRUPTED",
                   help="a corrupted sentence of the same length: patch each head from --text")
    a.add_argument("--top", type=int, default=10, help="how many heads to list")
    a.add_argument("--head", default=None, metavar="LAYER,HEAD",
                   help="also remove this one head: each token's final-vector cosine to the "
                        "plain run's (and every head's weight differences in --out)")
    a.add_argument("--part", default="encoder", choices=("encoder", "decoder", "cross"),
                   help="--head's attention: the encoder's, or BART's decoder self-attention "
                        "or cross-attention")
    a.add_argument("--json", action="store_true", help="print JSON (default: a table)")
    a.add_argument("--out", default=None, help="also write the numbers to this .npz file")
    a.add_argument("--model", default=None, help=MODEL_HELP)
    a.add_argument("--device", default=None, help="cpu, cuda or auto (default)")
    return p


def lesson(args: argparse.Namespace) -> int:
    """The taggers for the settings, as the lesson page has them: read from the cache folder
    where the app (or an earlier run) kept them, else trained (seconds to a minute on a CPU)
    and kept there; `--again` trains them whatever is kept. Prints their numbers."""
    from .analysis import taggers
    from .settings import settings as app_settings

    if args.seed < 0 or (args.epochs is not None and not 1 <= args.epochs <= 100):
        raise ValueError("--seed must be >= 0 and --epochs between 1 and 100")
    settings = taggers.Settings(seed=args.seed, **(
        {} if args.epochs is None else {"epochs": args.epochs}))
    kept_in = app_settings().cache_path / "lesson"  # the page's folder (ui.lesson.kept_folder)
    out = taggers.report(taggers.train_all(settings) if args.again else
                         taggers.kept_or_trained(settings, kept_in))
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    base = out["majority_tag"]
    print(f"held-out accuracy (%), seed {args.seed}: ambiguous words, deciding word near "
          f"(distance {out['near_means_distance_at_most']}) / far, double-role words")
    print(f"{'tagger':<38}{'parameters':>11}{'all':>7}{'ambig.':>8}{'near':>7}{'far':>7}"
          f"{'double':>8}")
    for row in out["taggers"].values():
        h = row["held_out"]
        print(f"{row['label']:<38}{row['parameters']:>11,}" + "".join(
            f"{100 * h[k]:>{w}.1f}" for k, w in (("all", 7), ("ambiguous", 8), ("near", 7),
                                                 ("far", 7), ("double_role", 8))))
    print(f"{'majority tag per word':<38}{'':>11}{'':>7}" + "".join(
        f"{100 * base[k]:>{w}.1f}" for k, w in (("ambiguous", 8), ("near", 7), ("far", 7),
                                                ("double_role", 8))))
    return 0


def html(args: argparse.Namespace) -> int:
    """Make the lesson's views (attnviz.views, as the pages open) and write them as a static
    site in --out."""
    from .engine import ModelError
    from .export import site

    try:
        if not args.text.strip():
            raise ValueError("--text is empty")
        if not args.out.strip():
            raise ValueError("--out is empty: name the folder to write")
        out = Path(args.out)
        if out.exists() and not out.is_dir():
            raise ValueError(f"--out is a file, not a folder: {out}")
        written = site.build(out, args.text, args.pair, args.model,
                             progress=lambda line: print(line, flush=True), lang=args.lang,
                             replace=args.replace)
    except (ModelError, ValueError, OSError, RuntimeError) as err:
        print(f"attnviz: error: {err}", file=sys.stderr)
        return 2
    print(f"wrote {len(written)} files to {out}: open {out / 'index.html'}")
    return 0


def ablate(args: argparse.Namespace) -> int:
    """Rank every head by the change of a measure when it alone is switched off
    (analysis.ablation.head_importance); with --patch, the fraction of the measure's difference
    each clean head restores in the corrupted run (for BART also each decoder self-attention
    and cross-attention head: analysis.ablation.decoder_patching)."""
    import numpy as np

    from .analysis import ablation
    from .engine import ModelError, TraceRequest, load_model

    try:
        if not args.text.strip() or not 1 <= args.top <= 10000:
            raise ValueError("--text is empty or --top is not between 1 and 10000")
        out_file = npz_out(args.out) if args.out is not None else None
        request = TraceRequest(args.text, args.pair)
        model = load_model(args.model, device=args.device, progress=say)
        imp = ablation.head_importance(model, request, args.measure, args.mode)
        out = {"measure": args.measure, "mode": args.mode, "base": imp.base,
               "tokens": imp.tokens, "pair_tokens": imp.pair,
               "heads": [{"layer": a, "head": b, "value": float(imp.values[a, b]),
                          "change": float(imp.effect[a, b])}
                         for a, b in imp.ranking()[:args.top]]}
        arrays = {"values": imp.values, "effect": imp.effect}
        beside = ablation.beside_stats(model, request, imp)
        out["spearman"] = {k: None if np.isnan(r) else r for k, r in beside.rho.items()}
        if args.head is not None:
            try:
                layer, head = (int(x) for x in args.head.split(","))
            except ValueError:
                raise ValueError("--head is LAYER,HEAD: two whole numbers, e.g. 2,7") from None
            nb = ablation.one_head(model, request, layer, head, args.mode, args.part)
            out["one_head"] = {"layer": layer, "head": head, "part": args.part,
                               "tokens": nb.tokens, "token_cosine": nb.token_cosine.tolist()}
            arrays |= {"one_head_token_cosine": nb.token_cosine,
                       "one_head_weights_diff": nb.weights_diff}
        if args.patch is not None:
            p = ablation.patching(model, request, TraceRequest(args.patch))
            order = np.argsort(-p.heads.ravel(), kind="stable")[:args.top]
            out["patch"] = {"clean": p.clean, "corrupted": p.corrupted, "heads": [
                {"layer": int(k // model.n_heads), "head": int(k % model.n_heads),
                 "restored": float(p.heads.ravel()[k])} for k in order]}
            arrays |= {"patch_heads_restored": p.heads}
            if p.residual is not None:
                arrays["patch_residual_restored"] = p.residual
            if getattr(model, "n_decoder_layers", 0):  # BART: the decoder's heads too
                d = ablation.decoder_patching(model, request, TraceRequest(args.patch))
                for part in ("decoder", "cross"):
                    values = getattr(d, part)
                    order = np.argsort(-values.ravel(), kind="stable")[:args.top]
                    out["patch"][f"{part}_heads"] = [
                        {"layer": int(k // model.n_heads), "head": int(k % model.n_heads),
                         "restored": float(values.ravel()[k])} for k in order]
                    arrays[f"patch_{part}_heads_restored"] = values
                out["patch"]["decoder_clean"] = d.clean
                out["patch"]["decoder_corrupted"] = d.corrupted
        if out_file is not None:
            write_npz(out_file, lambda f: np.savez(f, **arrays))
    except (ModelError, ValueError, OSError) as err:
        print(f"attnviz: error: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"{args.measure} ({args.mode} ablation): {imp.base:.6f} with every head")
    print(f"{'layer':>5} {'head':>4} {'without it':>11} {'change':>10}")
    for row in out["heads"]:
        print(f"{row['layer']:>5} {row['head']:>4} {row['value']:>11.6f} {row['change']:>+10.6f}")
    print("Spearman's rho of |change| with each head statistic: " + ", ".join(
        f"{k} {'-' if r is None else f'{r:+.3f}'}" for k, r in out["spearman"].items()))
    if "one_head" in out:
        oh = out["one_head"]
        print(f"{oh['part']} layer {oh['layer']}, head {oh['head']} removed: each token's "
              "final vector, cosine to the plain run's:")
        for i, (tok, c) in enumerate(zip(oh["tokens"], oh["token_cosine"], strict=True)):
            print(f"{i:>5} {tok!r:>14} {c:>11.6f}")
    if "patch" in out:
        pt = out["patch"]
        print(f"patching into {args.patch!r}: clean {pt['clean']:.6f}, corrupted "
              f"{pt['corrupted']:.6f}; restored by one head:")
        for row in pt["heads"]:
            print(f"{row['layer']:>5} {row['head']:>4} {row['restored']:>11.4f}")
        for part, name in (("decoder", "masked self-attention"), ("cross", "cross-attention")):
            if f"{part}_heads" in pt:
                print(f"the decoder's {name} (its repeated tokens' cosine: clean "
                      f"{pt['decoder_clean']:.6f}, corrupted {pt['decoder_corrupted']:.6f}); "
                      "restored by one head:")
                for row in pt[f"{part}_heads"]:
                    print(f"{row['layer']:>5} {row['head']:>4} {row['restored']:>11.4f}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run one command; any failure is one line on stderr and exit status 2 (never a
    traceback)."""
    try:
        return _main(argv)
    except Exception as err:  # noqa: BLE001 - a command line prints a sentence, not a traceback
        print(f"attnviz: error: {type(err).__name__}: {err}".splitlines()[0], file=sys.stderr)
        return 2


def _main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "lesson":
        try:
            return lesson(args)
        except ValueError as err:
            print(f"attnviz: error: {err}", file=sys.stderr)
            return 2
    if args.command == "html":
        return html(args)
    if args.command == "ablate":
        return ablate(args)
    from .engine import ModelError, TraceRequest, load_model
    from .engine.bundled import dequantized_from

    try:
        if args.command == "export":  # the request is checked before the model loads
            if args.image is not None:
                request = TraceRequest(image=read_image(args.image), pair=args.pair,
                                       target=args.target, positions=args.positions,
                                       window=args.window, causal=args.causal, seed=args.seed)
            else:
                if not args.text.strip():
                    raise ValueError("--text is empty")
                request = TraceRequest(args.text, args.pair, target=args.target,
                                       positions=args.positions, window=args.window,
                                       causal=args.causal, seed=args.seed)
            out = npz_out(args.out)
        model = load_model(args.model, device=args.device, progress=say)
        if args.command == "info":
            print(model)
            quantization = dequantized_from(model)
            if quantization is not None:
                print(f"weights dequantized from 4 bits ({quantization}, a GGUF file): its "
                      "numbers are those of the 4-bit model, not of the original float weights")
            return 0
        t = model.trace(request)
        write_npz(out, t.save_npz)
    except (ModelError, ValueError, OSError) as err:
        print(f"attnviz: error: {err}", file=sys.stderr)
        return 2
    note = ""
    if t.dropped:
        note = f" ({t.dropped} tokens dropped: input longer than {model.max_positions})"
    print(f"wrote {out}: {t.n_tokens} tokens, {t.n_layers} layers x {t.n_heads} heads{note}")
    return 0
