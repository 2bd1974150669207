"""An author's open dashboard updates when a worker submits in another window."""

import pytest

pytestmark = pytest.mark.browser


def test_dashboard_updates_when_a_worker_submits(sign_in, demo_server):
    base = demo_server["url"]
    dashboard = sign_in("author")
    dashboard.goto(f"{base}/projects/demo-nli/")
    counter = dashboard.locator('[data-key="annotations"]')
    before = int(counter.inner_text())
    dashboard.wait_for_function("() => document.getElementById('live-state').textContent === '(live)'")

    worker = sign_in("worker3")
    worker.goto(f"{base}/work/demo-nli/")
    answered = worker.locator("fieldset.item").count()
    for fieldset in worker.locator("fieldset.item").all():
        fieldset.locator("input[type=radio]").first.check()
    worker.keyboard.press("Control+Enter")
    worker.wait_for_selector(".message.success")

    dashboard.wait_for_function(
        f"() => Number(document.querySelector('[data-key=annotations]').textContent) === {before + answered}",
        timeout=3000,
    )
    dashboard.wait_for_selector("#worker-figures td:has-text('worker3')", timeout=5000)
    dashboard.screenshot(path="test-artifacts/live-dashboard.png", full_page=True)
