"""Save every page's Plotly figure JSON (and the text it writes) for a set of saved cases.

Used to check that a refactor changes no figure: run it before and after, then compare:

    python scripts/figure_snapshot.py save BEFORE_DIR
    python scripts/figure_snapshot.py save AFTER_DIR
    python scripts/figure_snapshot.py compare BEFORE_DIR AFTER_DIR

Each case is a page with session-state values (sentence, tab, step, layer...); every lazy tab
of a page is opened in turn. Measured timings (the windows cost tab) are left out.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SENTENCES = ["I saw a saw", "The cat sat on the mat, and the dog sat too."]
TABS = {
    "pages/positions.py": ("pos_tab", ["1 · Shuffle the words", "2 · I saw a saw",
                                       "3 · The encodings", "4 · Compare the choices"]),
    "pages/windows.py": ("win_tab", ["Masks and weights", "Receptive fields",
                                     "How much context?"]),
    "pages/layer_heads.py": ("lh_tab", ["Weights, all heads", "Scores, all heads",
                                        "One head, exact"]),
    "pages/images.py": ("img_tab", ["Attention map vs conv window", "Convolution as attention"]),
}


def cases() -> list[tuple[str, str, dict]]:
    """(name, page, session state) for every saved case."""
    out = []
    for s, text in enumerate(SENTENCES):
        for page in ("pages/layer_heads.py", "pages/explore.py", "pages/inside_score.py",
                     "pages/head_stats.py", "pages/positions.py", "pages/windows.py"):
            out.append((f"{Path(page).stem}_s{s}", page, {"text": text}))
        for mode in ("toy", "real"):
            for step in range(1, 9):
                out.append((f"steps_{mode}_{step}_s{s}", "pages/step_by_step.py",
                            {"text": text, "sbs_mode": mode, "sbs_step": step}))
    out.append(("explore_pair", "pages/explore.py", {"text": "I saw a saw", "pair": "It cut."}))
    out.append(("explore_hide", "pages/explore.py", {"text": "I saw a saw", "ex_hide": True,
                                                     "ex_renorm": True, "ex_layer": 3,
                                                     "ex_head": 7}))
    out.append(("layer_heads_l4", "pages/layer_heads.py", {"text": "I saw a saw", "layer": 4,
                                                           "head": 9}))
    out.append(("images", "pages/images.py", {}))
    for step in range(1, 11):
        out.append((f"lesson_{step}", "pages/lesson.py", {"lesson_step": step}))
    return out


def figures_of(at) -> dict[str, dict]:
    """Every chart's figure by its key: Streamlit's charts and those drawn in place
    (ui.live_chart, a component whose payload's first line holds the figure; key "live_" +
    the figure's key)."""
    out = {c.proto.id.rsplit("-", 1)[-1]: json.loads(c.proto.spec)
           for c in at.get("plotly_chart")}
    for c in at.get("bidi_component"):
        head = json.loads(c.proto.bytes.split(b"\n", 1)[0])
        if "figure" in head:
            out[c.proto.id.rsplit("-", 1)[-1].removeprefix("live_")] = head["figure"]
    return out


def texts_of(at) -> list[str]:
    return [m.value for m in at.markdown] + [c.value for c in at.caption]


def run_case(page: str, state: dict) -> tuple[dict, list[str]]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
    for k, v in state.items():
        if k in ("text", "pair"):
            at.session_state[k] = v
    at.run()
    if page != "pages/layer_heads.py":
        at.switch_page(page).run()
    for k, v in state.items():
        if k not in ("text", "pair"):
            at.session_state[k] = v
    at.run()
    if "lesson_step" in state:  # reveal the step's answer (Answer/Next reveals first)
        from attnviz.analysis.lesson import STEPS

        if STEPS[state["lesson_step"] - 1].predict:
            at.button(key="lesson_next").click().run()
    figs, texts = {}, []
    if at.exception:
        raise RuntimeError(f"{page}: {[e.value for e in at.exception]}")
    if page in TABS:
        key, labels = TABS[page]
        for label in labels:
            at.session_state[key] = label
            at.run()
            if at.exception:
                raise RuntimeError(f"{page} {label}: {[e.value for e in at.exception]}")
            figs.update(figures_of(at))
            texts += texts_of(at)
    else:
        figs = figures_of(at)
        texts = texts_of(at)
    return figs, texts


def save(folder: Path, only: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, page, state in cases():
        if only and only not in name:
            continue
        figs, texts = run_case(page, state)
        (folder / f"{name}.json").write_text(json.dumps({"figures": figs, "texts": texts},
                                                        sort_keys=True))
        print(name, len(figs), "figures", flush=True)


def _diff(a, b, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}.{k}: only in {'after' if k in b else 'before'}")
            else:
                _diff(a[k], b[k], f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _diff(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {str(a)[:80]!r} != {str(b)[:80]!r}")


def compare(before: Path, after: Path) -> int:
    bad = 0
    for f in sorted(before.glob("*.json")):
        g = after / f.name
        if not g.exists():
            print(f"{f.name}: missing after")
            bad += 1
            continue
        out: list[str] = []
        _diff(json.loads(f.read_text()), json.loads(g.read_text()), f.stem, out)
        if out:
            bad += 1
            print(f"{f.name}: {len(out)} differences", *out[:8], sep="\n  ")
    print("identical" if not bad else f"{bad} cases differ")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "save":
        save(Path(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
