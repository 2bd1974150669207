"""Under the development server (runserver: daphne on Twisted) a malformed multipart body reaches Django and
is refused in the API's error shape, not with Twisted's bare 400."""

import json
import os
import socket
import subprocess
import sys
import time

import pytest

from benchmarks._common import REPO_ROOT, free_port

pytestmark = pytest.mark.slow


def raw_post(port: int, path: str, headers: str, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{headers}Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        connection.sendall(head.encode() + body)
        answer = b""
        while chunk := connection.recv(65536):
            answer += chunk
    return answer


def test_a_malformed_multipart_body_gets_the_error_shape_under_runserver(tmp_path):
    port = free_port()
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings", "NLI_STUDIO_VAR": str(tmp_path), "DEBUG": "true"}
    env.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO_ROOT, env=env, check=True)
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "runserver did not start"
                time.sleep(0.5)
        for body in (b"\r\n", b"--x--\r\n", b"not multipart at all"):
            answer = raw_post(port, "/api/v1/token/", "Content-Type: multipart/form-data; boundary=x\r\n", body)
            head, _, payload = answer.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 400") and b"content-type: application/json" in head.lower(), answer
            assert json.loads(payload)["code"] == "invalid"
    finally:
        server.terminate()
        server.wait(timeout=20)
