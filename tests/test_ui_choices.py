"""ui.choices: a layer or head is a row of buttons up to BUTTONS_UP_TO options, else a select
box; either way its value is the number chosen and the URL holds it."""

import pytest
from streamlit.testing.v1 import AppTest

from attnviz.ui.choices import BUTTONS_UP_TO


def app(n: int) -> None:
    import streamlit as st

    from attnviz.ui.choices import choose_number

    value = choose_number(st, "Head", n, "head")
    st.write(f"chosen {value!r}")


def chosen(at) -> str:
    return at.markdown[-1].value


@pytest.mark.parametrize("n", [1, 12, BUTTONS_UP_TO, BUTTONS_UP_TO + 1, 24])
def test_a_row_of_buttons_or_a_select_box(n):
    at = AppTest.from_function(app, args=(n,)).run()
    assert not at.exception and chosen(at) == "chosen 0"
    buttons = n <= BUTTONS_UP_TO
    widget = at.button_group(key="head") if buttons else at.selectbox(key="head")
    assert [str(o) for o in widget.options] == [str(i) for i in range(n)]
    assert len(at.get("button_group")) == int(buttons)
    assert len(at.selectbox) == int(not buttons)
    widget.set_value(n - 1).run()
    assert chosen(at) == f"chosen {n - 1}"


@pytest.mark.parametrize("n", [12, 24])
def test_the_url_opens_the_number_it_names(n):
    at = AppTest.from_function(app, args=(n,))
    at.query_params["head"] = "7"
    at.run()
    assert not at.exception and chosen(at) == "chosen 7"
