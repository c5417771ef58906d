"""The notebook views' saved HTML opens in headless Chromium with the network blocked and
draws its figure: nothing is fetched from a CDN."""

from __future__ import annotations

import pytest

import attnviz

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("view", ["head_view", "model_view"])
def test_saved_view_draws_offline(browser, model, tmp_path, view):
    path = getattr(attnviz, view)(model.trace("I saw a saw")).save(tmp_path / f"{view}.html")
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    outside: list[str] = []

    def block(route):
        outside.append(route.request.url)
        route.abort()

    ctx.route("http*://**/*", block)  # anything not from the file itself fails
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=60_000)
    if view == "model_view":
        assert page.locator(".heatmaplayer image").count() == 1
    else:
        assert page.locator(".scatterlayer .js-line").count() > 10
        note = "Line opacity = attention weight, rounded to the nearest 0.05"
        assert page.get_by_text(note, exact=False).count() == 1  # drawn under the lines
        opacities = page.evaluate("""() => [...document.querySelectorAll(
            '.scatterlayer .trace')].filter(g => g.querySelector('.js-line'))
            .map(g => parseFloat(getComputedStyle(g).opacity))""")
        assert opacities and all(abs(o * 20 - round(o * 20)) < 1e-3 for o in opacities)
        assert min(opacities) < 0.2  # faint lines stay faint (no floor)
        page.locator(".updatemenu-header-group").first.click()  # the layer menu opens
        assert page.locator(".updatemenu-dropdown-button").count() == 6
    assert not errors and not outside, (errors, outside)
    page.screenshot(path=str(tmp_path / f"{view}.png"))
    ctx.close()
