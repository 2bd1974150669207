"""A real server (bin/serve, as `make demo` runs it) on a free port with its own SQLite file, and Debian's
chromium driven by Playwright."""

import importlib.util
import os
import shutil
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from benchmarks._common import AppServer, free_port
from dataset_io.demo import DEMO_USERS
from tests.dataset_io.hub_standin import HubStandIn
from tests.recruitment.standin import StandIn

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
PROLIFIC_TOKEN = "journey-token-9QxR"  # the API token the Prolific stand-in takes
HUB_TOKEN = "hf_journey_write"  # the write token the Hub stand-in takes
DEMO_PASSWORDS = {username: password for username, _, password in DEMO_USERS}
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# How long a page action or an assertion waits: make test runs two passes side by side on a 2-core runner,
# where a heavy page (the report's agreement figures) took over 15 s to load beside the other pass.
WAIT_MS = 45_000


def tiny_models(folder: Path) -> Path:
    """The server's models folder: a tiny encoder to train from (built here, nothing fetched from a hub), so a
    training job started in the browser ends in seconds."""
    spec = importlib.util.spec_from_file_location("tiny_checkpoints", REPO / "tests" / "models_backend" / "conftest.py")
    builders = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builders)
    builders.build_bert_encoder(folder / "tiny-encoder")
    return folder


@pytest.fixture(scope="session")
def demo_server(tmp_path_factory):
    """Start the demo exactly as `make demo` does, but on a free PORT and a scratch database."""
    var = tmp_path_factory.mktemp("var")
    # A local stand-in for MTurk (the page that frames a HIT, the external-submit endpoint): the server lets it
    # frame crowd pages and receive finished HITs as it lets MTurk's own sites.
    mturk_port = free_port()
    prolific_port = free_port()  # a stand-in for Prolific's API (tests/recruitment/standin.py) listens here
    hub_port = free_port()  # and one for the Hub's upload API (tests/dataset_io/hub_standin.py), without Xet
    server = AppServer(
        var,
        DEBUG="true",
        MTURK_EXTRA_ORIGINS=f"http://127.0.0.1:{mturk_port}",
        PROLIFIC_API_URL=f"http://127.0.0.1:{prolific_port}",
        HF_ENDPOINT=f"http://127.0.0.1:{hub_port}",
        HF_HUB_DISABLE_XET="1",
        NLI_STUDIO_MODELS=str(tiny_models(var / "models")),
        # One torch thread: on a shared, loaded 2-core runner two threads spin-wait on each other
        # (a tiny training step measured 1.65 s with two threads, 0.02 s with one).
        OMP_NUM_THREADS="1",
    )
    # BROWSER_SERVER_START_S: more time on a machine that others load (migrate, demo and static files first).
    # Serving means the first request has loaded the whole app: paid here, not inside a test's timeouts.
    server.start(seconds=float(os.environ.get("BROWSER_SERVER_START_S", 240)))
    yield {
        "url": f"http://127.0.0.1:{server.port}",
        "database": var / "nli_studio.sqlite3",
        "log": server.log_path,
        "var": var,
        "env": server.env,
        "mturk_port": mturk_port,
        "prolific_port": prolific_port,
        "hub_port": hub_port,
    }
    server.stop()


@pytest.fixture
def prolific(demo_server):
    """The Prolific stand-in, serving on the port the demo server's PROLIFIC_API_URL names."""
    server = StandIn(PROLIFIC_TOKEN).start(demo_server["prolific_port"])
    yield server
    server.stop()


@pytest.fixture
def hub(demo_server):
    """The Hub stand-in, serving on the port the demo server's HF_ENDPOINT names."""
    server = HubStandIn(HUB_TOKEN).start(demo_server["hub_port"])
    yield server
    server.stop()


def manage(server: dict, *commands: list[str]) -> list[str]:
    """Run manage.py commands against the demo server's database, side by side; returns their stdouts."""
    env = {key: value for key, value in server["env"].items() if key != "PORT"}
    processes = [
        subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in commands
    ]
    outputs = []
    for args, process in zip(commands, processes):
        stdout, stderr = process.communicate(timeout=300)  # several at once on a busy machine
        if process.returncode:
            raise AssertionError(f"manage.py {' '.join(args)} failed: {stderr[-2000:]}")
        outputs.append(stdout)
    return outputs


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: `make test` installs it (apt-get install chromium)")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=WAIT_MS)  # assertions wait as long as page actions do
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    yield page
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


@pytest.fixture
def open_window(browser):
    """Opens a page in a fresh browser context (its own cookies, so its own login) of the viewport asked
    for; every context it opened is closed after the test."""
    contexts = []

    def open_(width: int = 1200, height: int = 900):
        context = browser.new_context(viewport={"width": width, "height": height}, accept_downloads=True)
        contexts.append(context)
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        return page

    yield open_
    for context in contexts:
        context.close()


@pytest.fixture
def sign_in(open_window, demo_server):
    """Opens a window (see open_window) signed in to the demo server; a demo account needs no password."""

    def sign_in_(username: str, width: int = 1200, height: int = 900, password: str | None = None):
        page = open_window(width, height)
        login(page, demo_server["url"], username, password or DEMO_PASSWORDS[username])
        return page

    return sign_in_


def login(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    # Type only once the autofocused username field really has focus (a loaded machine can lag).
    page.wait_for_function("() => document.activeElement && document.activeElement.name === 'username'")
    page.keyboard.type(username)
    page.keyboard.press("Tab")
    page.keyboard.type(password)
    filled = page.evaluate(
        "() => [document.querySelector('[name=username]').value, document.querySelector('[name=password]').value.length]"
    )
    assert filled == [username, len(password)], filled
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base_url}/")


def focused_item(page) -> str:
    """The data-item of the fieldset holding keyboard focus ('' outside any item)."""
    return page.evaluate(
        "() => { const f = document.activeElement.closest('fieldset.item'); return f ? f.dataset.item : ''; }"
    )


def tab_to_item(page, current: str, backwards: bool = False) -> str:
    """Press Tab (Shift+Tab backwards) until focus lands on the answer control (radio or slider) of
    another item, passing over text fields such as the optional reason; returns the item's id."""
    for _ in range(12):
        page.keyboard.press("Shift+Tab" if backwards else "Tab")
        now = focused_item(page)
        on_answer = page.evaluate("() => document.activeElement.matches('input[type=radio], input[type=range]')")
        if now and now != current and on_answer:
            return now
    raise AssertionError(f"{'Shift+Tab' if backwards else 'Tab'} did not reach another item after {current}")


def next_item(page, current: str) -> str:
    """The item after `current`: where an answer key already moved focus, or by Tab (a slider's arrow
    keys set it without moving on)."""
    now = focused_item(page)
    return now if now and now != current else tab_to_item(page, current)


def tab_to_link(page, text: str, presses: int = 40) -> None:
    """Press Tab until the focused element is the link or button whose text contains `text`."""
    for _ in range(presses):
        page.keyboard.press("Tab")
        if text in page.evaluate("() => document.activeElement.textContent || ''"):
            return
    raise AssertionError(f"Tab never reached {text!r}")


def no_sideways_scroll(page) -> bool:
    """Whether the page fits its viewport's width. Measured once the page has loaded: a page can show its text
    before its stylesheet has arrived (a reload revalidates it), and laid out without the styles that wrap long
    words (a commit URL in a message, say) it is wider than it will be."""
    page.wait_for_load_state("load")
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth")


def too_wide(page) -> list[str]:
    """The elements that stick out of the viewport (outside scroll containers), to name in a failure."""
    return page.evaluate("""() => {
        const width = document.documentElement.clientWidth;
        return [...document.querySelectorAll("body *")]
            .filter(el => el.getBoundingClientRect().right > width + 0.5 && !el.closest(".scroll"))
            .slice(0, 8).map(el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + el.className : "")
                                   + " " + Math.round(el.getBoundingClientRect().right));
    }""")


def axe_violations(page, impacts: tuple[str, ...] = ("serious", "critical"), part: str | None = None) -> list[str]:
    """axe-core's violations of the given impacts on the page (in `part` only, when given), each with where."""
    from axe_playwright_python.sync_playwright import Axe

    results = Axe().run(page, context=part) if part else Axe().run(page)
    return [
        f"{v['id']} ({v['impact']}: {v['help']}) at {[node['target'] for node in v['nodes']][:3]}"
        for v in results.response["violations"]
        if v["impact"] in impacts
    ]


def assert_fits_and_is_accessible(page, width: int, part: str | None = None) -> None:
    """No sideways scrolling, and no serious or critical axe-core violation (in `part` only, when given)."""
    sizes = page.evaluate("() => [document.documentElement.scrollWidth, innerWidth]")
    assert sizes[0] <= sizes[1] == width, f"sideways scrolling: {sizes}"
    serious = axe_violations(page, part=part)
    assert not serious, serious


def save_screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


def create_study(page, base_url: str, task_type: str, fields: dict, selects: dict | None = None) -> None:
    """Create a study through the new-study form (the form shows the chosen task type's settings)."""
    page.goto(f"{base_url}/projects/new/?task_type={task_type}")
    for field, value in fields.items():
        page.fill(f"#id_{field}", value)
    for field, value in (selects or {}).items():
        page.select_option(f"#id_{field}", value)
    page.get_by_role("button", name="Create the study").click()
    page.wait_for_url(f"{base_url}/projects/{fields['slug']}/")


def import_through_preview(page, fmt: str, path, purpose: str = "data", mapping: dict | None = None) -> None:
    """From a study's dashboard: upload a file, look at its preview, choose what the rows become, import."""
    page.select_option("#id_format", fmt)
    page.set_input_files("#id_file", str(path))
    page.get_by_role("button", name="Upload and preview").click()
    page.wait_for_url("**/import/*/**")
    page.get_by_role("heading", name=f"Import {path.name}").wait_for()
    page.select_option("#id_purpose", purpose)
    for field, column in (mapping or {}).items():
        page.select_option(f"#id_map_{field}", column)
    page.get_by_role("button", name="Import", exact=True).click()


class MTurkStandIn(BaseHTTPRequestHandler):
    """MTurk's part of a HIT: the worker page that frames it (`frame_src`, else the `src` query parameter), and
    externalSubmit, which records the fields it gets in `submitted` (a fixture empties it)."""

    frame_src = ""
    submitted: list[dict] = []

    def do_GET(self):
        src = self.frame_src or parse_qs(urlparse(self.path).query)["src"][0]
        self._answer(
            "<!doctype html><title>HIT</title><h1>MTurk sandbox</h1>"
            f'<iframe id="hit" src="{src}" width="1100" height="820"></iframe>'
        )

    def do_POST(self):
        fields = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
        MTurkStandIn.submitted.append({"path": urlparse(self.path).path, **{k: v[0] for k, v in fields.items()}})
        self._answer("<!doctype html><h1>HIT submitted</h1>")

    def _answer(self, body: str):
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass
