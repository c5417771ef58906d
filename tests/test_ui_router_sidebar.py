"""The sidebar's starting state from a request's headers (ui.router.initial_sidebar_state):
collapsed on a phone, Streamlit's "auto" on a laptop or desktop."""

import pytest

from attnviz.ui.router import initial_sidebar_state, is_phone

IPHONE = ("Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 "
          "(KHTML, like Gecko) Version/17.0 Mobile/15E148 Safari/604.1")
ANDROID = ("Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/126.0.0.0 Mobile Safari/537.36")
DESKTOP = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
           "Chrome/126.0.0.0 Safari/537.36")
MAC = ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) "
       "Version/17.0 Safari/605.1.15")


@pytest.mark.parametrize("headers", [
    {"User-Agent": IPHONE},
    {"user-agent": ANDROID},
    {"USER-AGENT": "SomeBrowser Mobile"},
    {"User-Agent": DESKTOP, "Sec-CH-UA-Mobile": "?1"},  # the Client Hint alone says phone
    {"sec-ch-ua-mobile": " ?1 "},
])
def test_a_phone_starts_with_the_sidebar_collapsed(headers):
    assert is_phone(headers)
    assert initial_sidebar_state(headers) == "collapsed"


@pytest.mark.parametrize("headers", [
    {"User-Agent": DESKTOP},
    {"User-Agent": MAC, "Sec-CH-UA-Mobile": "?0"},
    {"User-Agent": DESKTOP, "Sec-CH-UA-Mobile": "?0"},
    {"Host": "127.0.0.1"},  # no agent at all (a script, Streamlit's AppTest)
    {},
    None,
])
def test_a_laptop_or_desktop_keeps_streamlits_auto(headers):
    assert not is_phone(headers)
    assert initial_sidebar_state(headers) == "auto"
