"""An accepted MTurk HIT inside MTurk's own cross-site frame (issue 27, item 8). The parent page is served as
MTurk's sandbox host name, https://workersandbox.mturk.com, by a local HTTPS server with a self-signed
certificate (Chromium maps the name to it), so the frame meets what it meets on MTurk: another site above it,
no cookie of ours sent, the Content-Security-Policy and the external submit to MTurk's host."""

import datetime
import ssl
import threading
from http.server import ThreadingHTTPServer
from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from benchmarks._common import free_port
from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, WAIT_MS, MTurkStandIn, manage, save_screenshot

pytestmark = pytest.mark.browser

MTURK_HOST = "workersandbox.mturk.com"
STUDY, CODE = "mturk-framed", "CC-FRAMED-7"


def self_signed_certificate(folder) -> tuple[str, str]:
    """A certificate for MTurk's sandbox host name, and its key, as PEM files (Chromium is told to accept it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, MTURK_HOST)])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(MTURK_HOST)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "mturk.pem", folder / "mturk.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return str(cert_path), str(key_path)


@pytest.fixture
def mturk_sandbox(tmp_path):
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*self_signed_certificate(tmp_path))
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), MTurkStandIn)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    MTurkStandIn.submitted, MTurkStandIn.frame_src = [], ""
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_an_accepted_hit_is_completed_inside_mturks_cross_site_frame(browser, demo_server, mturk_sandbox, tmp_path):
    rows = tmp_path / "items.jsonl"
    rows.write_text(
        '{"id": "f1", "premise": "A dog runs on a beach.", "hypothesis": "An animal is outside."}\n'
        '{"id": "f2", "premise": "A dog runs on a beach.", "hypothesis": "The dog is asleep."}\n'
    )
    manage(
        demo_server,
        ["create_project", STUDY, "--task-type", "nli_label", "--owner", "author", "--items-per-page", "2",
         "--completion-code", CODE, "--completion-pages", "1", "--audience", "mturk", "--title", "Framed HIT"],
    )  # fmt: skip
    manage(demo_server, ["import_items", STUDY, str(rows), "--format", "jsonl"])
    base = demo_server["url"]
    MTurkStandIn.frame_src = (
        f"{base}/enter/{STUDY}/?assignmentId=ASG-F1&hitId=HIT-F&workerId=WK-F1"
        f"&turkSubmitTo={quote(f'https://{MTURK_HOST}')}"
    )
    # A browser of its own: MTurk's host name resolves to the local sandbox, whose certificate is self-signed.
    framed_browser = browser.browser_type.launch(
        executable_path=CHROMIUM,
        headless=True,
        args=[
            *CHROMIUM_ARGS,
            f"--host-resolver-rules=MAP {MTURK_HOST} 127.0.0.1:{mturk_sandbox}",
            "--ignore-certificate-errors",
        ],
    )
    try:
        context = framed_browser.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(f"https://{MTURK_HOST}/mturk/preview?groupId=G1")
        frame = page.frame_locator("#hit")
        items = frame.locator("fieldset.item")
        expect(items).to_have_count(2)
        for index, key in enumerate(["e", "c"]):
            items.nth(index).locator(f'input[type=radio][data-key="{key}"]').check()
        frame.locator("#submit-page").click()
        expect(frame.locator("#completion-code")).to_have_text(CODE)
        save_screenshot(page, "mturk-cross-site-frame-end")
        frame.get_by_role("button", name="Submit the HIT to MTurk").click()
        expect(frame.locator("h1")).to_have_text("HIT submitted")
        # The frame worked without any cookie of ours: none was sent, and the cross-site frame could set none.
        assert not [cookie for cookie in context.cookies(base) if cookie["name"] == "sessionid"]
        context.close()
    finally:
        framed_browser.close()
    assert MTurkStandIn.submitted == [
        {
            "path": "/mturk/externalSubmit",
            "assignmentId": "ASG-F1",
            "pages": "1",
            "answers": "2",
            "completionCode": CODE,
        }
    ]
