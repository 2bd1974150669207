"""The pages links lead to (up to three of each route), followed from the home page as the demo's admin, as a
worker and signed out, in Chromium at a 360 px phone width: none answers an error, none scrolls sideways (wide
tables scroll inside their own box), none logs a console error (a script error or a Content-Security-Policy
refusal), and one page of each route (each study's) passes an axe-core scan with no violation above minor. The
journeys check the pages they pass through; this walks the ones no journey visits. A server of its own:
following every link claims pages and starts report computations, which the shared demo server's journeys must
not see."""

import re
from urllib.parse import urlparse

import pytest

from benchmarks._common import AppServer
from tests.browser.conftest import DEMO_PASSWORDS, axe_violations, login, no_sideways_scroll, too_wide

pytestmark = pytest.mark.browser

# Files and the API are not pages; logging out would end the walk; Django's admin is its own site.
NOT_PAGES = re.compile(r"^/(static|media|api|admin)/|/logout/|/(export|download)/|\.(zip|csv|jsonl|parquet|json)$")
MAX_PAGES = 400
# Of one route (ids and query strings aside: an item's adjudication page, a list's pages and filters), the
# first few pages reached: every study's pages are walked, not every item's and worker's of each.
MAX_PER_ROUTE = 3
AXE_IMPACTS = ("moderate", "serious", "critical")


@pytest.fixture(scope="module")
def own_server(tmp_path_factory):
    server = AppServer(tmp_path_factory.mktemp("var"), DEBUG="true", OMP_NUM_THREADS="1")
    server.start(seconds=240)
    yield f"http://127.0.0.1:{server.port}"
    server.stop()


def route_of(path: str) -> str:
    return re.sub(r"/[0-9]+/", "/N/", path.split("?")[0])


def links_on(page, origin: str) -> list[str]:
    """The same-site pages the page links to, as paths with their query strings."""
    links = [urlparse(href) for href in page.eval_on_selector_all("a[href]", "links => links.map(link => link.href)")]
    return [
        link.path + (f"?{link.query}" if link.query else "")
        for link in links
        if link.netloc == origin and not NOT_PAGES.search(link.path)
    ]


def problems_on(page, base_url: str, path: str, scan: bool) -> list[str]:
    """Open the page; what is wrong with it, axe-core's findings included when `scan`."""
    response = page.goto(base_url + path)
    if response is None or response.status >= 400:
        return [f"{path}: answered {response.status if response else 'nothing'}"]
    problems = [] if no_sideways_scroll(page) else [f"{path}: scrolls sideways at 360 px: {too_wide(page)}"]
    return problems + [f"{path}: axe {finding}" for finding in (axe_violations(page, AXE_IMPACTS) if scan else [])]


def walk(page, base_url: str) -> tuple[list[str], list[str]]:
    """Follow the same-site links breadth-first from the home page, then again from the jobs list where a link
    led to it, as it fills while the walk goes (a report page starts its computation); (pages visited, what is
    wrong)."""
    origin = urlparse(base_url).netloc
    seen: list[str] = []
    per_route: dict[str, set[str]] = {}
    problems: list[str] = []
    console: list[str] = []
    scanned: set[str] = set()  # routes axe-core has scanned a page of
    page.on("console", lambda message: console.append(message.text) if message.type == "error" else None)
    for start in ("/", "/jobs/"):
        if start != "/" and start not in seen:
            continue  # no link led there: not this user's page
        queue = [start]
        while queue and len(seen) < MAX_PAGES:
            path = queue.pop(0)
            if path in seen and path != start:
                continue
            seen.append(path)
            problems += problems_on(page, base_url, path, scan=route_of(path) not in scanned)
            scanned.add(route_of(path))
            problems += [f"{path}: console error {text}" for text in console]
            console.clear()
            for target in links_on(page, origin):
                reached = per_route.setdefault(route_of(target), set())
                if target in reached or len(reached) < MAX_PER_ROUTE:
                    reached.add(target)
                    if target not in seen:
                        queue.append(target)
    return seen, problems


@pytest.mark.parametrize("username,at_least", [("admin", 100), ("worker1", 5), (None, 1)])
def test_every_linked_page_fits_a_phone_without_errors(open_window, own_server, username, at_least):
    """None: a visitor not signed in, who is sent to the login page."""
    page = open_window(360, 740)
    if username:
        login(page, own_server, username, DEMO_PASSWORDS[username])
    visited, problems = walk(page, own_server)
    assert len(visited) >= at_least, visited  # the walk reached the demo's pages, not just the home page
    assert problems == []
