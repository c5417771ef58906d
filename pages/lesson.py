"""The lesson: "I saw a saw" (the lecture's own example), from a per-word classifier to attention
with positions.

Numbers: analysis.taggers (four taggers trained once per settings, ui.lesson), analysis.lesson
(the steps, receptive fields, twins) and cached Traces of the sentence with and without
positions; figures: plotting.lesson and plotting.heatmaps."""

from pathlib import Path

import numpy as np
import streamlit as st

from attnviz import plotting, ui
from attnviz.analysis import lesson, taggers
from attnviz.analysis.corpus import EXAMPLES, words
from attnviz.engine import TraceRequest
from attnviz.plotting import lesson as lesson_plots
from attnviz.ui.lesson import held_out_scores, trained_taggers

SIDEBAR = "(the sidebar's sentence)"
N = len(lesson.STEPS)


def go_to(step: int) -> None:
    st.session_state["lesson_step"] = max(0, min(N - 1, step)) + 1


def main() -> None:
    ctx = ui.context()
    if ctx.model is None:
        st.error(ctx.error or "No model is loaded.")
        return
    st.title("I saw a saw: why self-attention needs positions")
    if st.session_state.get("lesson_seen_text", ctx.text) != ctx.text:
        st.session_state["lesson_sentence"] = SIDEBAR  # typing in the sidebar brings it here
    st.session_state["lesson_seen_text"] = ctx.text
    choice = st.radio("Lesson sentence", [SIDEBAR, *EXAMPLES], key="lesson_sentence",
                      bind="query-params", horizontal=True)
    top = st.columns([3, 1])
    big = top[1].toggle("Presentation mode", key="lesson_present", bind="query-params",
                        help="Large type for a projector.")
    with top[0].expander("Training settings"):
        seed = st.number_input("Seed", 0, 9999, 0, key="lesson_seed", bind="query-params")
        epochs = st.number_input("Epochs", 1, 40, taggers.Settings.epochs, key="lesson_epochs",
                                 bind="query-params")
    text = ctx.text if choice == SIDEBAR else choice
    ws = words(text)[: taggers.MAX_WORDS]
    if not ws:
        st.info("Type a sentence in the sidebar (or pick an example), e.g. *I saw a saw*.")
        return
    if len(words(text)) > taggers.MAX_WORDS:
        st.warning(f"The lesson uses the first {taggers.MAX_WORDS} words of this sentence.")

    step = st.slider("Step", 1, N, 1, key="lesson_step", bind="query-params") - 1  # URL: 1..N
    nav = st.columns([1, 1, 6])
    nav[0].button("◀ Back", on_click=go_to, args=(step - 1,), disabled=step == 0,
                  key="lesson_back")
    nav[1].button("Next ▶", on_click=go_to, args=(step + 1,), disabled=step == N - 1,
                  key="lesson_next")
    nav[2].progress((step + 1) / N, text=f"Step {step + 1} of {N}: {lesson.STEPS[step].title}")

    settings = taggers.Settings(seed=int(seed), epochs=int(epochs))
    tr = trained_taggers(settings)
    show_step(ctx, lesson.STEPS[step], tr, settings, text, ws, big)


def show_step(ctx: ui.Context, s: lesson.Step, tr: taggers.Trained, settings: taggers.Settings,
              text: str, ws: list[str], big: bool) -> None:
    names = taggers.NAMES
    tags = {names[k]: taggers.tag_sentence(m, tr.corpus, text)[1] for k, m in tr.models.items()}
    gold = lesson.gold_tags(text)
    word = next(iter(lesson.repeated_ambiguous(" ".join(ws))), None)
    (st.title if big else st.header)(s.title)
    st.markdown(("### " if big else "") + s.text)
    if word is None:
        st.info("This sentence has no ambiguous word that occurs twice, so there are no twins "
                "to tell apart. Pick an example such as *They can can the can*, or type a "
                f"sentence that repeats one of: {', '.join(tr.corpus.ambiguous)}.")
    if s.predict:
        st.container(border=True).markdown(("### " if big else "") + ":material/help: "
                                           f"**Predict first:** {s.predict}")
    shown = s.predict is None or st.toggle("Reveal", key=f"lesson_reveal_{s.key}")
    one = {"per_word": "mlp", "window": "window", "no_positions": "attention",
           "positions": "attention_pos"}.get(s.key)
    scores, base = held_out_scores(settings)
    request = TraceRequest(" ".join(ws))
    t_pos = ui.cached_trace(ctx.model, request)
    t_none = ui.cached_trace(ctx.model, request.with_options(positions="none"))
    twins = lesson.token_positions(t_pos.tokens, word) if word else []
    curves = ({"learned positions": lesson.cosine_per_layer(t_pos.hidden_states, *twins[:2]),
               "no positions": lesson.cosine_per_layer(t_none.hidden_states, *twins[:2])}
              if len(twins) > 1 else {})

    hide = [lesson_plots.HIDDEN] * len(ws)
    rows = {names[one]: tags[names[one]] if shown else hide} if one else {}
    if s.key == "next":
        rows = tags
    elif gold is None and not rows:
        rows = {names["attention_pos"] + ": no gold tags for this sentence": tags[names[
            "attention_pos"]] if shown or s.key != "task" else hide}
    show_gold = gold if gold is None or shown or s.key != "task" else hide
    ui.show_figure(lesson_plots.tag_table(ws, rows, show_gold, big), key="lesson_fig_tags")
    if shown and one:
        sc = scores[names[one]]
        st.markdown(f"{'### ' if big else ''}Held-out: **{100 * sc.overall:.1f}%** of all "
                    f"words, **{100 * sc.ambiguous:.1f}%** of ambiguous words, "
                    f"**{100 * sc.double_role:.1f}%** of double-role words "
                    f"(ambiguous words, always the majority tag: "
                    f"{100 * base['train_majority']:.1f}%, best possible with one tag per word: "
                    f"{100 * base['best_possible']:.1f}%).")
    if shown and s.key in ("per_word", "window"):
        fields = lesson.receptive_fields(len(ws), tr.settings.width)
        fields.pop("per word" if s.key == "window" else "window")
        ui.show_figure(lesson_plots.receptive_field(ws, fields, big), key="lesson_fig_fields")
    if s.key == "attention":
        c1, c2 = st.columns(2)
        layer = c1.selectbox("BERT layer", range(t_pos.n_layers), key="lesson_layer",
                             bind="query-params")
        head = c2.selectbox("BERT head", range(t_pos.n_heads), key="lesson_head",
                            bind="query-params")
        if shown:
            a, b = st.columns(2)
            with a:
                ui.show_figure(lesson_plots.projector(plotting.attention_heatmap(
                    t_pos.scores[layer, head], t_pos.tokens, "scores",
                    f"layer {layer}, head {head}: scores q·k"), big), key="lesson_fig_scores")
            with b:
                ui.show_figure(lesson_plots.projector(plotting.attention_heatmap(
                    t_pos.weights[layer, head], t_pos.tokens, "weights",
                    f"layer {layer}, head {head}: weights"), big), key="lesson_fig_weights")
            if len(twins) > 1:
                j, tok, w = lesson.top_key(t_pos.weights[layer, head, twins[1]], t_pos.tokens)
                tok = tok.replace("`", "'")
                st.markdown(f"The second *{word}* (token {twins[1]}) puts its largest weight, "
                            f"**{w:.3f}**, on `{tok}` (token {j}).")
    if shown and s.key == "no_positions" and curves:
        diff = lesson.max_abs_difference(t_none.hidden_states, *twins[:2])
        st.markdown(f"BERT without positions: cosine of the two *{word}* vectors in every "
                    f"layer = **{curves['no positions'].min():.6f}**, max |difference| = "
                    f"**{diff:.2g}**: equal up to float rounding.")
    if shown and s.key == "positions":
        ui.show_figure(lesson_plots.accuracy_bars(scores, base["best_possible"], big),
                       key="lesson_fig_bars")
    if shown and s.key in ("no_positions", "positions"):
        grid = taggers.tagger_weights(tr.models[one], tr.corpus, ws)[0]  # layer 0: [heads, n, n]
        ui.show_figure(lesson_plots.projector(plotting.heads_grid(grid, ws, "weights", title=(
            f"tagger {names[one][:3]}, layer 0: softmax weights (rows = queries)")), big),
            key="lesson_fig_tagger_heads")
    if shown and s.key == "bert" and curves:
        ui.show_figure(lesson_plots.cosine_by_layer(curves, word, big, tuple(twins[:2])),
                       key="lesson_fig_cosine")
    if s.key == "next":
        ui.show_figure(lesson_plots.loss_curves({names[k]: v for k, v in tr.losses.items()}),
                       key="lesson_fig_loss")
        st.caption("Training time (s), this server: " + ", ".join(
            f"{names[k]} {v:.1f}" for k, v in tr.seconds.items())
            + f"; total {tr.total_seconds:.1f}")
        for path, label in (("pages/step_by_step.py", "Self-attention step by step"),
                            ("pages/positions.py", "Positional encoding"),
                            ("pages/windows.py", "Windows and receptive fields"),
                            ("pages/layer_heads.py", "Heads of one layer")):
            if (Path(__file__).resolve().parents[1] / path).exists():
                st.page_link(path, label=label)

    ui.download_arrays("Download the lesson's numbers (.npz)", {
        "words": np.array(ws), "taggers": np.array(list(tags)),
        "tags": np.array(list(tags.values())),
        "accuracy_overall_ambiguous_double_role": np.array(
            [[v.overall, v.ambiguous, v.double_role] for v in scores.values()]),
        "best_one_tag_per_word": base["best_possible"],
        "cosine_learned": curves.get("learned positions", np.array([])),
        "cosine_none": curves.get("no positions", np.array([])),
        "training_seconds": np.array(list(tr.seconds.values()))},
        file_name="attnviz_lesson.npz", key="lesson_download")


main()
