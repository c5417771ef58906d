"""The all-heads page's token lines on a decoder: past ALL_LINES_MAX tokens one query token's
lines are drawn, and under a causal mask the first words see only themselves and the few keys
before them; the default query is then the last token, which sees every key. BERT keeps the
first word (tests/test_page_explore.py). The chosen query token lives in the URL."""

import numpy as np
import pytest

from attnviz.views.explore import ALL_LINES_MAX, line_choices
from tests.apptest import open_page
from tests.plotly_json import decode, figures

TOKEN_BOX = "Token lines for one query token"
TEXT = ("The old carpenter kept his saw in a wooden chest by the door. " * 6).strip()  # 84 tokens


def test_the_default_query_is_the_last_token_under_a_causal_mask():
    n = ALL_LINES_MAX + 10
    assert line_choices(n, hide=False, causal=True) == (list(range(n)), n - 1)
    assert line_choices(n, hide=True, causal=True)[1] == n - 1
    assert line_choices(n, hide=False)[1] == 2 and line_choices(n, hide=True)[1] == 1  # BERT
    # up to ALL_LINES_MAX every token's lines are offered and drawn first, decoder or not
    assert line_choices(ALL_LINES_MAX, hide=False, causal=True) == \
        ([None, *range(ALL_LINES_MAX)], 0)


@pytest.fixture(scope="module")
def smol():
    import attnviz
    from attnviz.engine.bundled import SMOLLM2

    model = attnviz.load_model(SMOLLM2, device="cpu")
    t = model.trace(TEXT)
    assert t.request.causal and t.n_tokens > ALL_LINES_MAX
    return t


def test_a_decoder_opens_on_the_last_tokens_lines(smol):
    """SmolLM2 on a long sentence: the token box shows the last token, the lines drawn are that
    query's, and they reach keys all along the sentence (the third token's could reach only
    keys 0, 1, 2)."""
    from attnviz.engine.bundled import SMOLLM2

    t = smol
    n = t.n_tokens
    at = open_page("pages/explore.py", timeout=600, model=SMOLLM2, text=TEXT)
    (box,) = [s for s in at.selectbox if s.label == TOKEN_BOX]
    assert box.key == f"ex_token_{n}" and box.value == n - 1
    assert box.options[box.index] == f". #{n}"  # the sentence's last token, counted from 1
    _, _, lines = figures(at)
    (chosen,) = [tr for tr in lines["data"] if tr.get("name") == "query"]
    assert list(decode(chosen["y"])) == [n - 1]
    # its lines (the open head's: query y = n - 1 to key y, then a gap) reach keys all along
    # the sentence, where the third token's could reach keys 0, 1 and 2 only
    ends = set()
    for tr in lines["data"]:
        if tr.get("name") == "head 0" and tr.get("mode") == "lines" and tr["y"] != [None]:
            y = np.asarray(decode(tr["y"]), dtype=float)
            assert (y[0::3] == n - 1).all()
            ends |= set(y[1::3].tolist())
    assert len(ends) > 3 and max(ends) > n / 2 and max(ends) <= n - 1
    # every key of that row may be looked at (causal: j <= n - 1), as the engine says
    row = t.weights[0, 0, n - 1]
    assert np.isclose(row.sum(), 1.0, atol=1e-5) and (row > 0).all()


def test_the_query_token_is_written_to_and_read_from_the_link(smol):
    """The token box is bound to the URL: a chosen query token goes into the link (its label,
    under the box's key for this many tokens), and a link naming a token opens its lines
    instead of the default last token's."""
    from streamlit.testing.v1 import AppTest

    from attnviz.engine.bundled import SMOLLM2
    from attnviz.views.explore import labels, token_key
    from tests.apptest import APP

    t = smol
    n = t.n_tokens
    names = labels(t.tokens, range(n))
    key = token_key(n)
    at = open_page("pages/explore.py", timeout=600, model=SMOLLM2, text=TEXT)
    # the browser writes a bound widget's choice into the address bar under this name (the
    # AppTest's query_params do not follow a widget; tests/e2e read the browser's URL)
    assert at.selectbox(key=key).proto.query_param_key == key
    fresh = AppTest.from_file(APP, default_timeout=600)
    fresh.query_params[key] = names[7]
    fresh.session_state["model"] = SMOLLM2
    fresh.session_state["text"] = TEXT
    fresh.run()
    fresh.switch_page("pages/explore.py").run()
    assert not fresh.exception and fresh.selectbox(key=key).value == 7
    _, _, lines = figures(fresh)
    (chosen,) = [tr for tr in lines["data"] if tr.get("name") == "query"]
    assert list(decode(chosen["y"])) == [7]


def test_no_hide_switch_where_there_is_nothing_to_hide():
    """SmolLM2 adds no [CLS] or [SEP] (nor <s>): the page offers no switch that would hide
    them, nor one to renormalise rows with no key left out (a decoder takes no sentence pair
    to filter either), where BERT's page does (tests/test_page_explore.py sets them)."""
    import attnviz
    from attnviz.analysis.common import special_mask
    from attnviz.engine.bundled import SMOLLM2

    t = attnviz.load_model(SMOLLM2, device="cpu").trace("I saw a saw")
    assert not special_mask(t.tokens).any()
    at = open_page("pages/explore.py", timeout=600, model=SMOLLM2, text="I saw a saw")
    labels = [w.label for w in at.toggle]
    # nor one that renormalises rows: no key is left out, every row sums to 1 already
    assert labels == ["Word level"]
    bert = open_page("pages/explore.py", timeout=600, text="I saw a saw")
    assert [w.label for w in bert.toggle] == ["Hide [CLS] and [SEP]", "Renormalise rows",
                                              "Word level"]
