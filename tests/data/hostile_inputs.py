"""A corpus of hostile and odd sentences a student might type (issue 8).

Each entry is (name, text, expect):
- expect "message": nothing to encode; the page must say so (st.info/warning/error), no figure.
- expect "result": the page must draw its figures (a correct result), no error.
- expect "either": a message, or figures of the special tokens alone.
- expect "long": more than the model's 512 positions; a warning that tokens were dropped,
  and figures for the first 512 tokens. These are the slow ones: tests run them on a subset.

Also: HTML_PROBE (tags that must show literally, never render), MODEL_DIRS_BAD (model folder
strings that must be refused). Folders that need files on disk are built in tests/test_hostile.py.
"""

from __future__ import annotations

# Tags that must come back as text. Each marker is unique so a test can look for it verbatim.
HTML_PROBE = (
    '<b>zebra</b> <script>alert("xss")</script> <img src=x onerror=alert(1)> '
    '<a href="javascript:alert(2)">click</a> <br> <i>saw</i>'
)
# Substrings that must never appear raw (unescaped) in any figure's JSON.
HTML_MARKERS = ("<script", "<img", "<b>zebra", "<a href", "<i>saw")

HOSTILE: list[tuple[str, str, str]] = [
    # --- nothing to encode
    ("empty", "", "message"),
    ("spaces", "     ", "message"),
    ("whitespace_mix", " \t\n\r\n\u00a0\u3000 ", "message"),
    ("only_nul", "\x00\x00\x00", "message"),
    ("zero_width_only", "\u200b\u200c\u200d\ufeff", "either"),  # [CLS] [SEP] only
    # --- tiny
    ("one_char", "a", "result"),
    ("one_punct", ".", "result"),
    ("one_digit", "7", "result"),
    # --- characters
    ("only_punctuation", "!?.,;:()[]{}<>\"'`~@#$%^&*-_=+|\\/…«»—", "result"),
    ("control_chars", "I\x01 saw\x07 a\x08 saw\x1b[31m red\x1b[0m \x7f", "result"),
    ("nul_inside", "I\x00 saw\x00 a\x00 saw", "result"),
    ("rtl_arabic", "رأيت منشارا", "result"),
    ("rtl_hebrew_mixed", "I saw a saw ראיתי מסור", "result"),
    ("bidi_override", "\u202eI saw a saw\u202c \u2067evil\u2069", "result"),
    ("emoji_sequences", "👩‍👩‍👧‍👦 🏳️‍🌈 👍🏽 🇫🇷 ❤️‍🔥 saw 🪚", "result"),
    ("chinese", "我看见了一把锯子", "result"),
    ("chinese_seed", "对I saw a saw 进行词性标注", "result"),
    ("japanese_korean", "私はのこぎりを見た 나는 톱을 보았다", "result"),
    ("combining_marks", "Z̷̛͓̈a̸̡͝l̵̢̛g̶̨̛o̴̧͠ e\u0301 n\u0303 \u0301\u0301\u0301", "result"),
    ("math_alphanumerics", "𝐈 𝐬𝐚𝐰 𝐚 𝐬𝐚𝐰 ∑∫√∞ ≤ ≥", "result"),
    ("zero_width_inside", "I\u200b saw\u200d a\ufeff saw", "result"),
    # --- markup and code
    ("html_tags", HTML_PROBE, "result"),
    ("script_only", "<script>alert(document.cookie)</script>", "result"),
    ("html_entities", "&lt;b&gt; &amp; &#x3C;script&#x3E; &nbsp;", "result"),
    ("markdown", "# Title\n**bold** _it_ [link](javascript:alert(1)) `code` ![x](y)\n---",
     "result"),
    ("latex", r"$\frac{q \cdot k}{\sqrt{d_k}}$ \begin{align} x \end{align} $$ \int $$", "result"),
    ("format_strings", "{0} {text} %s %d %(x)s ${HOME} {{}} \\n \\x00", "result"),
    ("sql_injection", "'; DROP TABLE students; -- \" OR 1=1", "result"),
    ("bert_special_tokens", "[CLS] [SEP] [MASK] [PAD] [UNK] ##saw", "result"),
    ("url", "https://example.com/?q=<x>&y=\"z\"#frag", "result"),
    ("repeated_token", "saw " * 40, "result"),
    ("many_newlines", "\n" * 500 + "I saw a saw" + "\r\n" * 500, "result"),
    ("long_word_1000", "pneumonoultramicroscopicsilicovolcanoconiosis" * 22, "result"),
    # --- longer than the model
    ("chars_100k", ("I saw a saw. " * 7700)[:100_000], "long"),
    ("tokens_600", "word " * 598, "long"),  # 598 words + [CLS] + [SEP] = 600 tokens
    ("long_single_word_50k", "a" * 50_000 + " saw", "result"),  # one [UNK]: WordPiece caps words
    ("emoji_1000", "😀 " * 1000, "long"),
]

# Second-sentence (pair) inputs, run with a normal first sentence.
HOSTILE_PAIRS: list[tuple[str, str]] = [
    ("pair_html", HTML_PROBE),
    ("pair_nul_only", "\x00"),
    ("pair_long", "word " * 700),
]

# Model folder strings refused without any file set-up. "/etc" and "/proc/self" exist but are
# not checkpoints; the hub id and the address must never be fetched.
MODEL_DIRS_BAD: list[tuple[str, str]] = [
    ("missing", "/nonexistent/attnviz/model"),
    ("etc", "/etc"),
    ("proc_self", "/proc/self"),
    ("hub_id", "bert-base-uncased"),
    ("url", "https://huggingface.co/bert-base-uncased"),
    ("nul_in_path", "/tmp/\x00model"),
    ("traversal", "../../../../../../etc"),
]

NAMES = [name for name, _, _ in HOSTILE]
assert len(HOSTILE) >= 30 and len(set(NAMES)) == len(NAMES)
