"""Command line: `python -m attnviz export --text "I saw a saw" --out trace.npz`.

The NPZ's arrays carry the engine's names and shapes (see attnviz.engine.trace.ARRAY_FIELDS).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .engine.positions import POSITION_MODES


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, non-zero exit
        self.exit(2, f"attnviz: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="attnviz", description="See self-attention in BERT.")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    e = sub.add_parser("export", help="run the engine on a text and write every intermediate")
    e.add_argument("--text", required=True, help="the sentence to encode")
    e.add_argument("--pair", default=None, help="optional second sentence (segment B)")
    e.add_argument("--out", required=True, help="output .npz file")
    e.add_argument("--model", default=None, help="local BERT checkpoint folder (default: bundled)")
    e.add_argument("--positions", default="learned", choices=POSITION_MODES)
    e.add_argument("--window", type=int, default=None, help="truncated attention: +-W tokens")
    e.add_argument("--causal", action="store_true", help="each token sees only earlier tokens")
    e.add_argument("--seed", type=int, default=0, help="seed for --positions shuffled")
    e.add_argument("--device", default=None, help="cpu, cuda or auto (default)")
    i = sub.add_parser("info", help="describe a model folder (default: the bundled model)")
    i.add_argument("--model", default=None)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from .engine import ModelError, TraceRequest, load_model

    try:
        if args.command == "export":  # the request is checked before the model loads
            request = TraceRequest(args.text, args.pair, positions=args.positions,
                                   window=args.window, causal=args.causal, seed=args.seed)
            if not args.text.strip():
                raise ValueError("--text is empty")
            out = Path(args.out)
            if out.parent and not out.parent.exists():
                raise ValueError(f"output folder does not exist: {out.parent}")
        model = load_model(args.model, device=args.device)
        if args.command == "info":
            print(model)
            return 0
        t = model.trace(request)
        t.save_npz(out)
    except (ModelError, ValueError, OSError) as err:
        print(f"attnviz: error: {err}", file=sys.stderr)
        return 2
    note = ""
    if t.dropped:
        note = f" ({t.dropped} tokens dropped: input longer than {model.max_positions})"
    print(f"wrote {out}: {t.n_tokens} tokens, {t.n_layers} layers x {t.n_heads} heads{note}")
    return 0
