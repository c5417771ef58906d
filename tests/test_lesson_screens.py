"""The lesson's figures on a projector and a phone: the tag table (which way it turns, its
tagger names broken into lines here, Latin between words and Chinese between characters, and a
height that holds every line, so no row is cut off at the bottom) and the cost figure (each
tagger named over its bars, so the bars keep the width of a phone)."""

from attnviz.plotting import lesson as P

WORDS = ["i", "saw", "a", "saw"]
GOLD = ("PRON", "VERB", "DET", "NOUN")


def test_wrap_breaks_latin_between_words_and_chinese_between_characters():
    assert P.wrap("(d) attention + positions") == ("(d) attention +<br>positions", 2)
    assert P.wrap("(c) self-attention, no positions") == (
        "(c) self-attention,<br>no positions", 2)
    assert P.wrap("gold") == ("gold", 1)
    text, lines = P.wrap("(c) 自注意力，无位置编码")  # 26 units: a CJK character counts two
    assert lines == 2 and text.replace("<br>", "") == "(c) 自注意力，无位置编码"
    assert all(P._width(x) <= P.LINE_UNITS for x in text.split("<br>"))
    assert not any(x.startswith("，") for x in P.wrap("自注意力，无位置编码", 8)[0].split("<br>"))
    assert P.wrap("<b> x") == ("&lt;b&gt; x", 1)  # escaped, line by line


def test_on_the_projector_a_short_sentence_runs_across():
    """Gold and one tagger on the projector: three rows high (the step's figure fits under it
    on a 720 px screen); off the projector one row per word (a phone's width holds it)."""
    rows = {"(c) self-attention, no positions": ["PRON", "NOUN", "DET", "NOUN"]}
    big = P.tag_table(WORDS, rows, GOLD, big=True)
    assert big.layout.meta["words_as_rows"] is False
    assert list(big.data[0].header.values) == ["", "i", "saw #2", "a", "saw #4"]
    assert list(big.data[0].cells.values[0]) == ["gold", "(c) self-attention,<br>no positions"]
    assert big.layout.height <= 200 + P.MODEBAR_ROOM  # the rows, and the toolbar's room
    assert big.layout.margin.t == P.MODEBAR_ROOM  # the toolbar shows over it, not the header
    small = P.tag_table(WORDS, rows, GOLD)
    assert small.layout.meta["words_as_rows"] is True
    assert list(small.data[0].header.values)[1:] == ["gold",
                                                     "(c)<br>self-attention,<br>no positions"]


def test_on_the_projector_a_long_sentence_runs_across_in_bands():
    """Nine words (the lesson's Chinese examples): two bands of at most BAND_WORDS, each a
    row of its words in bold, then gold and the tagger, each tag under its own word and
    coloured against its own gold; the last band's empty places blank."""
    words = list("我上山，山上有花。")
    gold = [f"G{k}" for k in range(9)]
    tags = [f"G{k}" if k % 2 else f"T{k}" for k in range(9)]
    fig = P.tag_table(words, {"(a) per word": tags}, gold, big=True)
    assert fig.layout.meta == {"words_as_rows": False, "bands": 2}
    cols = [list(c) for c in fig.data[0].cells.values]
    assert len(cols) == 1 + P.BAND_WORDS
    assert cols[0] == ["", "gold", "(a) per word"] * 2
    heads = P.word_labels(words)
    for k in range(9):
        band, col = divmod(k, P.BAND_WORDS)
        column, row = cols[col + 1], 3 * band
        assert column[row] == f"<b>{heads[k]}</b>".replace(" ", "\u00a0")  # '上 #2'
        assert column[row + 1:row + 3] == [gold[k], tags[k]]
        assert fig.data[0].cells.fill.color[col + 1][row + 2] == (P.RIGHT if k % 2 else P.WRONG)
    assert [c[3:] for c in cols[5:]] == [["", "", ""]]
    assert fig.data[0].cells.font.size == P.BAND_SIZE == 18
    seven = P.tag_table(words[:P.WORDS_ACROSS_BIG], {"x": tags[:7]}, gold[:7], big=True)
    assert seven.layout.meta == {"words_as_rows": False}  # one row of words, small type
    assert seven.data[0].cells.font.size == P.BAND_SIZE
    five = P.tag_table(words[:P.WORDS_LARGE_BIG], {"x": tags[:5]}, gold[:5], big=True)
    assert five.data[0].cells.font.size == P.LARGE


def test_height_holds_every_wrapped_name():
    """Eight rows, the last tagger's name on two lines: the table is one wrapped line taller
    than with one-line names (the last row was cut off on a phone and on the projector)."""
    names = {f"(b) window {k}": list(GOLD) for k in range(6)}
    one = P.tag_table(WORDS, {**names, "(c) attention": list(GOLD)}, GOLD)
    two = P.tag_table(WORDS, {**names, "(d) attention + positions": list(GOLD)}, GOLD)
    assert two.layout.height - one.layout.height == int(P.SMALL * 1.25)


def test_on_a_phone_every_name_line_fits_the_name_column():
    """Off the projector, with the words across, a name's lines hold at most NAME_UNITS: the
    line Plotly would break itself on a 390 px phone ('(e) attention + RoPE' was cut there)."""
    names = {f"(b) window {k}": list(GOLD) for k in range(5)}
    fig = P.tag_table(WORDS, {**names, "(d) attention + positions": list(GOLD),
                              "(e) attention + RoPE": list(GOLD)}, GOLD)
    col = list(fig.data[0].cells.values[0])
    assert col[-2:] == ["(d) attention +<br>positions", "(e) attention +<br>RoPE"]
    assert all(P._width(x) <= P.NAME_UNITS for n in col for x in n.split("<br>"))
    big = P.tag_table(WORDS, {**names, "(e) attention + RoPE": list(GOLD)}, GOLD, big=True)
    assert big.data[0].cells.values[0][-1] == "(e) attention + RoPE"  # the projector's width


def test_cost_figure_names_each_tagger_over_its_bars():
    params = {"(b) window 39": 168393, "(d) attention + positions": 73545}
    gaps = {n: [[0.29, 0.12], [0.27, 0.11]] for n in params}
    fig = P.cost_figure(params, (50, 200), gaps)
    assert fig.layout.yaxis.showticklabels is False
    notes = fig.layout.annotations
    assert [a.text for a in notes] == ["(b) window 39 · 168,393 parameters",
                                       "(d) attention + positions · 73,545 parameters"]
    # over group k: its top edge (the y axis runs downwards), in the gap between two groups
    assert [a.y for a in notes] == [k - (1 - P.COST_GAP) / 2 for k in range(2)]
    assert all(a.yanchor == "bottom" and a.x == 0 and a.xref == "paper" for a in notes)
    assert fig.layout.bargap == P.COST_GAP


def test_table_header_text_takes_the_cells_colour_from_the_template():
    """Under the app's theme template (placeholder colours the browser makes the theme's),
    the header's text takes the cells' colour (the theme's strongest) instead of the
    template's pale grey on the grey header; the data sets no colour of its own."""
    import plotly.graph_objects as go
    import plotly.io as pio

    theme = go.layout.Template(data={"table": [dict(
        type="table", cells=dict(font=dict(color="#000037")),
        header=dict(font=dict(color="#000036")))]})
    before = pio.templates.default
    pio.templates["lesson_test_theme"] = theme
    try:
        pio.templates.default = "lesson_test_theme"
        for fig in (P.tag_table(WORDS, {"x": list(GOLD)}, GOLD),
                    P.far_table(["(1)"], ["NOUN"], {"3": ["VERB"]})):
            assert fig.layout.template.data.table[0].header.font.color == "#000037"
            assert fig.data[0].header.font.color is None
        kept = pio.templates["lesson_test_theme"].data.table[0].header.font.color
        assert kept == "#000036"  # the theme itself is left as it was
    finally:
        pio.templates.default = before
        del pio.templates["lesson_test_theme"]


def test_the_receptive_fields_read_on_a_dark_page():
    """Step 2's map ("what each word's tag can see"): no opaque pale colour a dark page would
    show as white slabs; the hidden cells are a translucent grey over the page's background
    (the mask scale the windows page uses), the seen ones the palette's blue."""
    import numpy as np
    from plotly.colors import unlabel_rgb

    from attnviz.plotting.common import MASK_OFF, OKABE_ITO

    fig = P.receptive_field(WORDS, {"per word": np.eye(4)})
    for trace in fig.data:
        colours = [c for _at, c in trace.colorscale]
        assert set(colours) == {MASK_OFF, OKABE_ITO[0]}, colours
        off = MASK_OFF.replace("rgba", "rgb").rsplit(",", 1)[0] + ")"
        assert float(MASK_OFF.rsplit(",", 1)[1].rstrip(")")) < 0.5  # translucent
        assert max(unlabel_rgb(off)) <= 160  # mid grey, never a pale slab
