"""The budget planner on a study's page, by keyboard alone, at 1280 and 360 pixels."""

import pytest

from tests.browser.conftest import save_screenshot

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("width", [1280, 360])
def test_author_plans_a_budget_by_keyboard(sign_in, demo_server, width):
    url = demo_server["url"]
    page = sign_in("author", width)
    page.goto(f"{url}/projects/demo-nli/")
    page.focus("#id_target_error")
    page.keyboard.press("Control+A")
    page.keyboard.type("0.2")
    page.keyboard.press("Tab")  # to the price per label
    assert page.evaluate("() => document.activeElement.id") == "id_price_per_label"
    page.keyboard.type("0.15")
    page.keyboard.press("Enter")
    page.wait_for_url("**target_error=0.2**")
    plan = page.locator("#budget-plan")
    assert plan.is_visible()
    # The demo study's simulated answers are its pilot.
    assert float(page.locator("#plan-labels-per-item").inner_text()) >= 2
    assert float(page.locator("#plan-cost").inner_text()) > 0
    # Majority-decided stopping within 5 labels: fewer than 5 an item, never fewer than 1.
    decided = page.locator("#plan-majority-decided")
    assert decided.is_visible() and 1 <= float(decided.locator("b").inner_text()) <= 5
    assert page.locator("#id_target_error").input_value() == "0.2"  # the form keeps what was asked
    budget = page.locator("#budget").bounding_box()
    assert budget["x"] >= 0 and budget["x"] + budget["width"] <= width, budget
    overflow = page.evaluate(
        "() => { const s = document.getElementById('budget'); return s.scrollWidth - s.clientWidth; }"
    )
    assert overflow <= 1, f"the planner is {overflow}px wider than its box at {width}px"

    # Out of range: the browser holds the form back (min/max from the setting); the server refuses it too
    # (tests/annotation/test_stability_redundancy.py).
    asked = page.url
    page.focus("#id_target_error")
    page.keyboard.press("Control+A")
    page.keyboard.type("3")
    page.keyboard.press("Enter")
    assert page.evaluate("() => document.getElementById('budget-form').checkValidity()") is False
    assert page.url == asked
    save_screenshot(page, f"budget-planner-{width}")
