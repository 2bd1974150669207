"""The audit log page at 1280 and 360 pixels by keyboard alone, and pages whose scripts must keep working
under the Content-Security-Policy (scripts from the site only)."""

import pytest

from tests.browser.conftest import manage, save_screenshot, tab_to_link

pytestmark = pytest.mark.browser

COUNT_VIOLATIONS = """() => { window.cspViolations = [];
  document.addEventListener('securitypolicyviolation', e => window.cspViolations.push(e.violatedDirective)); }"""


@pytest.mark.parametrize("width", [1280, 360])
def test_admin_reads_the_audit_log_by_keyboard(sign_in, demo_server, width):
    url = demo_server["url"]
    manage(demo_server, ["export_dataset", "demo-nli", "--format", "jsonl", "--output", "/dev/null"])
    page = sign_in("admin", width)
    if width >= 1000:  # the navigation shows the link; on a phone the page is reached by its address
        tab_to_link(page, "Audit log")
        page.keyboard.press("Enter")
    else:
        page.goto(f"{url}/audit/")
    page.wait_for_url(f"{url}/audit/")
    assert "command line" in page.locator("table").inner_text()
    page.focus("#audit-action")
    page.keyboard.press("ArrowDown")  # "every kind" -> the first kind, Export
    page.keyboard.press("Tab")
    page.keyboard.press("Enter")
    page.wait_for_url(f"{url}/audit/?action=export")
    assert "export" in page.locator("table").inner_text().lower()
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 1, f"the page is {overflow}px wider than the {width}px screen"
    save_screenshot(page, f"audit-{width}")


def test_scripts_run_under_the_csp(sign_in, demo_server):
    url = demo_server["url"]
    page = sign_in("author")
    page.add_init_script(COUNT_VIOLATIONS.removeprefix("() => {").removesuffix("}"))
    page.goto(f"{url}/projects/new/")
    page.select_option("#id_task_type", "unli_slider")  # reload_on_change.js shows that type's settings
    page.wait_for_url("**task_type=unli_slider")
    page.goto(f"{url}/projects/demo-nli/")
    page.wait_for_function("() => document.getElementById('live-state').textContent.includes('live')")
    assert page.evaluate("() => window.cspViolations") == []
    assert "script-src 'self'" in page.request.get(f"{url}/projects/demo-nli/").headers["content-security-policy"]
