"""A shared link naming the bundled decoder (`?model=smollm2`), opened first on a freshly
started server, opens SmolLM2, not BERT.

A bound select box reads its link as the shown label, so Streamlit dropped the engine name;
ui.urlstate rewrites it to the label before the sidebar's box reads it. The server is this
module's own, so the link really is its first request (the router's handover included).
"""

import pytest

from tests import serve

from .conftest import SHOTS, page_errors, screenshot, wait_for_app

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def fresh_server():
    """A server that has served nothing yet. SmolLM2's one-time conversion (engine.bundled,
    into the run's cache folder the server shares) is done here first: what the tests wait
    for in the browser is the link opening the model, not the conversion (its progress is
    tested in test_engine_bundled), which on a loaded machine took most of 300 s."""
    from attnviz.engine import bundled

    bundled.smollm2_dir()
    SHOTS.mkdir(parents=True, exist_ok=True)
    port = serve.free_port()
    try:
        proc = serve.start_server(port, SHOTS.parent / "streamlit_model_link.log")
    except RuntimeError as e:
        pytest.fail(str(e))
    yield port
    serve.stop_server(proc)


def test_a_first_request_naming_smollm2_opens_smollm2(browser, fresh_server):
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = ctx.new_page()
        page.goto(f"http://127.0.0.1:{fresh_server}/windows?model=smollm2&text=I+saw+a+saw")
        wait_for_app(page, timeout_ms=300_000, plots=False)
        page.wait_for_selector("[data-testid='stSidebar'] :text('30 layers x 9 heads')",
                               timeout=300_000)
        sidebar = page.locator("[data-testid='stSidebar']").inner_text()
        assert "SmolLM2-135M-Instruct (bundled): 30 layers x 9 heads" in sidebar
        assert "all-MiniLM-L6-v2 (bundled)" not in sidebar
        assert "model=SmolLM2-135M-Instruct" in page.url  # kept in the link as the box writes it
        assert not page_errors(page)
        screenshot(page, "model_link_smollm2")
    finally:
        ctx.close()


def test_step_by_steps_real_mode_on_smollm2_draws_rope(browser, fresh_server):
    """Real mode on the decoder in a browser: step 2 draws q and k before and after RoPE and
    names the shared key/value head; no error box."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 720})
    try:
        page = ctx.new_page()
        page.goto(f"http://127.0.0.1:{fresh_server}/step_by_step?model=smollm2&sbs_mode=real"
                  "&sbs_step=2&sbs_layer=3&sbs_head=4&text=I+saw+a+saw")
        wait_for_app(page, timeout_ms=300_000)
        page.wait_for_selector(".js-plotly-plot :text('RoPE turns Q')", timeout=120_000)
        main = page.locator("[data-testid='stMain']").inner_text()
        assert "key/value head 1, which query heads 3, 4, 5 share" in main
        assert "engine trace| = 0.0e+00" in main
        assert not page_errors(page)
        screenshot(page, "step_by_step_smollm2_rope")
    finally:
        ctx.close()
