"""The lesson's tag table on a projector and a phone: which way it turns, its tagger names
broken into lines here (Latin between words, Chinese between characters), and a height that
holds every line, so no row is cut off at the bottom."""

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
    assert big.layout.height <= 200
    small = P.tag_table(WORDS, rows, GOLD)
    assert small.layout.meta["words_as_rows"] is True
    long = ["w"] * (P.WORDS_ACROSS_BIG + 1)
    assert P.tag_table(long, {"x": ["NOUN"] * len(long)}, ["NOUN"] * len(long),
                       big=True).layout.meta["words_as_rows"] is True


def test_height_holds_every_wrapped_name():
    """Eight rows, the last tagger's name on two lines: the table is one wrapped line taller
    than with one-line names (the last row was cut off on a phone and on the projector)."""
    names = {f"(b) window {k}": list(GOLD) for k in range(6)}
    one = P.tag_table(WORDS, {**names, "(c) attention": list(GOLD)}, GOLD)
    two = P.tag_table(WORDS, {**names, "(d) attention + positions": list(GOLD)}, GOLD)
    assert two.layout.height - one.layout.height == int(P.SMALL * 1.25)
