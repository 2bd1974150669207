"""Body limits as bin/serve serves them (uvicorn in front of common/asgi.py): 150 MB announced with credentials
that do not check out is refused before it is read, and a body that trickles is timed out."""

import socket
import time

import pytest

from benchmarks._common import AppServer

pytestmark = pytest.mark.slow
BOGUS = {"token": "Authorization: Token bogus", "session cookie": "Cookie: sessionid=bogus"}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = AppServer(
        tmp_path_factory.mktemp("var"),
        DEBUG="true",
        DEMO="0",
        TASK_WORKERS="0",
        EXPIRY_SECONDS="0",
        ANONYMOUS_BODY_SECONDS="2",
    )
    server.start(seconds=240)
    yield server
    server.stop()


def answer_to(port: int, head: str, body_chunks, seconds: float) -> tuple[str, int, float]:
    """Send `head`, then the chunks while the server lets us; (status line, bytes of body sent, seconds)."""
    started, sent = time.monotonic(), 0
    with socket.create_connection(("127.0.0.1", port), timeout=seconds) as connection:
        connection.sendall(head.encode())
        connection.settimeout(0.05)
        answer = b""
        for chunk in body_chunks:
            try:
                answer += connection.recv(4096)
                break  # the server answered (or closed) before the body was over
            except TimeoutError:
                pass
            try:
                connection.sendall(chunk)
                sent += len(chunk)
            except OSError:
                break
            if time.monotonic() - started > seconds:
                break
        connection.settimeout(seconds)
        try:
            while b"\r\n" not in answer:
                part = connection.recv(4096)
                if not part:
                    break
                answer += part
        except (TimeoutError, ConnectionResetError):
            pass
    return answer.split(b"\r\n", 1)[0].decode(), sent, time.monotonic() - started


@pytest.mark.parametrize("path", ["/api/v1/token/", "/accounts/login/", "/webhooks/prolific/"])
@pytest.mark.parametrize("credential", BOGUS.values(), ids=BOGUS.keys())
def test_150_mb_with_bogus_credentials_is_refused_unread(served, path, credential):
    size = 150_000_000
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{credential}\r\nContent-Type: application/json\r\nContent-Length: {size}\r\n\r\n"
    status, sent, seconds = answer_to(served.port, head, (b"x" * 2**16 for _ in range(size // 2**16)), 20)
    assert status == "HTTP/1.1 413 Request Entity Too Large", status
    assert seconds < 10 and sent < 20 * 2**20  # the answer came while most of the body was still unsent
    # Without a length: cut off soon after the anonymous limit (1 MiB), the rest unsent.
    chunked = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{credential}\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"10000\r\n" + b"x" * 2**16 + b"\r\n"
    status, sent, seconds = answer_to(served.port, chunked, (chunk for _ in range(size // 2**16)), 20)
    assert status == "HTTP/1.1 413 Request Entity Too Large", status
    assert seconds < 10 and sent < 20 * 2**20


def test_a_trickling_body_is_timed_out(served):
    head = "POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"

    def trickle():
        for _ in range(1000):
            time.sleep(0.5)
            yield b"x"

    status, sent, seconds = answer_to(served.port, head, trickle(), 20)
    assert status == "HTTP/1.1 408 Request Timeout", status
    assert seconds < 6 and sent < 20  # ANONYMOUS_BODY_SECONDS=2 for the whole body
