"""The fast path against the plain path, in the same run: what it gains on what a user waits for.

settings().fast_paths (ATTNVIZ_FAST_PATHS, on by default) is the one switch of the fast path,
the preload's warm-up (ui.preload.warm_lesson, warm_class); off, the plain path runs instead.
Measured here both ways: the lesson's taggers and what a class opens first, computed as the
page's first visitor computes them when nothing is warm, against reading them under the
page's key once the warm-up has put them there.

A fast path stays only where it gains at least 1.5x on this; the engine's own trace has no
fast path (benchmarks/bench_engine.py measures it against transformers).

    make bench BENCH=fast_paths   (or: python -m benchmarks.bench_fast_paths)
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks.report import Table, show  # noqa: E402

COST = "It trains the lesson's taggers once and computes what a class opens first."
GOAL = 1.5  # what a fast path must gain to stay


def warm_up() -> Table:
    """Each result the warm-up computes: what the page's first visitor waits for without it
    (the page computes it), and with it (the page reads it under its key)."""
    from attnviz import settings as app_settings
    from attnviz.analysis import attribution, corpus_heads, taggers
    from attnviz.analysis.head_stats import CONVENTIONS
    from attnviz.engine.load import load_model
    from attnviz.plotting import neuron
    from attnviz.ui import lesson, window_cost
    from attnviz.ui.cache import cached

    model = load_model(device="cpu")
    settings = lesson.settings_from(0, taggers.Settings.epochs)  # the page's defaults
    sentences = tuple(corpus_heads.split_sentences(corpus_heads.sample_text()))
    conv = next(iter(CONVENTIONS))
    lengths = window_cost.lengths_up_to(window_cost.DEFAULT_TOP)
    dev, w = str(model.device), window_cost.DEFAULT_WINDOW
    items = [
        ("lesson: the seven taggers, trained", "taggers", settings,
         lambda: taggers.train_all(settings)),
        ("corpus heads: the bundled sample", "results", ("corpus", model.key, sentences, conv),
         lambda: corpus_heads.corpus_heads(model, sentences, conv)),
        ("similarity: sentence B prepared", "results",
         attribution.side_key(model.key, attribution.DEFAULT_B, attribution.DEFAULT_STEPS),
         lambda: attribution.prepare_side(model, attribution.DEFAULT_B)),
        ("inside one score: the grids laid out", "results", ("bench_fast_paths", "grids"),
         neuron.prepare_grids),
        ("windows: the cost tab's timings", "results", window_cost.key(dev, lengths, w),
         lambda: window_cost.measure(dev, lengths, w, lambda *a: None)),
    ]
    rows, worst = [], None
    with tempfile.TemporaryDirectory() as tmp, app_settings.override(cache_dir=tmp):
        for name, kind, key, compute in items:
            t0 = time.perf_counter()
            cached(kind, key, compute)  # the warm-up (or, without it, the first visitor)
            cold = time.perf_counter() - t0
            t0 = time.perf_counter()
            cached(kind, key, compute)  # a visitor once it is warm
            warm = time.perf_counter() - t0
            gain = cold / max(warm, 1e-6)
            worst = gain if worst is None else min(worst, gain)
            rows.append([name, f"{cold:.2f}", f"{1000 * warm:.3f}"])
    return Table(["the page's first visitor waits for", "computed by the page (s)",
                  "read under the page's key after the warm-up (ms)"], rows,
                 title="The warm-up's results (the lesson's taggers at the default settings, "
                       "what a class opens first), bundled model, one run each",
                 note=f"the warm-up: {worst:,.0f}x or more on each; goal >= {GOAL}x. The "
                      "families page's demo models, also warmed, are not timed here.")


def main() -> list[Table]:
    return show(warm_up())


if __name__ == "__main__":
    main()
