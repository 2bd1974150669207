"""common/asgi.py: a web process runs at most its slots of requests through Django at once, each request's
sync code on one thread, threads reused from request to request."""

import asyncio
import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.http import HttpResponse, StreamingHttpResponse

from common.asgi import BoundedASGIHandler


def scope(path: str) -> dict:
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"host", b"testserver")],
        "client": ("127.0.0.1", 5000),
        "server": ("testserver", 80),
    }


async def call(handler: BoundedASGIHandler, path: str, leave: asyncio.Event | None = None) -> tuple[int, bytes]:
    """One request through the handler as the ASGI server makes it; (status, body). With `leave`, the
    client disconnects when it is set."""
    messages = [{"type": "http.request", "body": b"", "more_body": False}]
    status, body = None, b""

    async def receive():
        if messages:
            return messages.pop()
        await (leave or asyncio.Event()).wait()  # the client stays connected until it leaves
        return {"type": "http.disconnect"}

    async def send(message):
        nonlocal status, body
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            body += message.get("body", b"")

    await handler(scope(path), receive, send)
    return status, body


def in_own_loop(coroutine):
    # A loop of its own in a thread of its own: the browser tests leave one running in this thread.
    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


@pytest.fixture
def handler_with_view(monkeypatch):
    """A handler whose middleware chain and view are replaced by `view(request)`."""

    def make(slots: int, view):
        handler = BoundedASGIHandler(slots)
        monkeypatch.setattr(handler, "get_response", view)
        return handler

    return make


def test_no_more_requests_than_slots_run_at_once_and_each_gets_its_own_answer(handler_with_view):
    running = peak = 0
    lock = threading.Lock()

    def view(request):
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        time.sleep(0.01)
        with lock:
            running -= 1
        return HttpResponse(f"answer to {request.path}")

    handler = handler_with_view(3, view)

    async def ten_requests():
        return await asyncio.gather(*(call(handler, f"/{number}/") for number in range(10)))

    answers = in_own_loop(ten_requests())
    assert answers == [(200, f"answer to /{number}/".encode()) for number in range(10)]
    assert peak == 3


def test_threads_are_reused_and_a_request_keeps_one_thread_from_view_to_last_streamed_chunk(handler_with_view):
    seen = []  # (path, where, thread) in the order it happened

    def chunks(path):
        for number in range(3):
            seen.append((path, f"chunk {number}", threading.get_ident()))
            yield f"{number};"

    def view(request):
        seen.append((request.path, "view", threading.get_ident()))
        if request.path.startswith("/stream"):
            return StreamingHttpResponse(chunks(request.path))
        return HttpResponse("plain")

    handler = handler_with_view(2, view)

    async def requests():
        one_after_another = [await call(handler, f"/plain/{number}/") for number in range(5)]
        side_by_side = await asyncio.gather(*(call(handler, f"/stream/{number}/") for number in range(4)))
        return one_after_another, side_by_side

    with pytest.warns(Warning, match="synchronous iterators"):  # Django's note on sync iterators under ASGI
        one_after_another, side_by_side = in_own_loop(requests())
    assert one_after_another == [(200, b"plain")] * 5
    assert side_by_side == [(200, b"0;1;2;")] * 4
    plain_threads = {thread for path, _, thread in seen if path.startswith("/plain")}
    assert len(plain_threads) == 1, "requests one after another run on one reused thread"
    for number in range(4):
        threads = {thread for path, _, thread in seen if path == f"/stream/{number}/"}
        assert len(threads) == 1, "a request's view and its streamed chunks run on the same thread"
    stream_threads = {thread for path, _, thread in seen if path.startswith("/stream")}
    assert len(stream_threads) == 4, "requests in flight at once never share a thread"
    assert plain_threads <= stream_threads, "an idle thread is taken before a new one is made"


def test_a_process_must_serve_at_least_one_request():
    with pytest.raises(ValueError, match="at least one request"):
        BoundedASGIHandler(0)


def test_middleware_runs_as_the_sync_chain():
    """One hop per request, not one per middleware method: Django's async chain adapts every sync
    middleware on its own."""
    handler = BoundedASGIHandler(1)
    assert not asyncio.iscoroutinefunction(handler._middleware_chain)


def test_threads_beyond_the_idle_limit_are_ended_after_a_burst(handler_with_view, monkeypatch):
    monkeypatch.setattr("common.asgi.IDLE_THREADS_KEPT", 2)
    handler = handler_with_view(5, lambda request: (time.sleep(0.01), HttpResponse("ok"))[1])

    async def burst():
        return await asyncio.gather(*(call(handler, f"/{number}/") for number in range(5)))

    assert in_own_loop(burst()) == [(200, b"ok")] * 5
    assert len(handler._idle_threads) == 2


def test_the_thread_of_a_view_whose_client_left_is_not_lent_before_the_view_ends(handler_with_view):
    release = threading.Event()
    threads = {}

    def view(request):
        threads[request.path] = threading.get_ident()
        if request.path == "/slow/":
            release.wait(5)
        return HttpResponse("ok")

    handler = handler_with_view(2, view)

    async def requests():
        leave = asyncio.Event()
        slow = asyncio.create_task(call(handler, "/slow/", leave))
        while "/slow/" not in threads:
            await asyncio.sleep(0.001)
        leave.set()  # the client goes away; the view runs to its end, holding its thread till then
        answer = await asyncio.wait_for(call(handler, "/next/"), 2)  # not queued behind the slow view
        release.set()
        await slow
        return answer

    assert in_own_loop(requests()) == (200, b"ok")
    assert threads["/next/"] != threads["/slow/"]


async def response_headers(handler: BoundedASGIHandler, path: str) -> list[tuple[bytes, bytes]]:
    headers, messages = [], [{"type": "http.request", "body": b"", "more_body": False}]

    async def receive():
        if messages:
            return messages.pop()
        await asyncio.Event().wait()  # the client stays connected

    async def send(message):
        if message["type"] == "http.response.start":
            headers.extend(message.get("headers", []))

    await handler(scope(path), receive, send)
    return headers


@pytest.mark.parametrize(
    "requests_per_connection, closed_at_least, closed_at_most",
    [
        (0, 0, 0),  # never
        (1, 400, 400),  # every response
        (20, 5, 45),  # one in 20 on average: 20 expected of 400 (at 0.05, fewer than 5 or more than 45: < 1e-4)
    ],
)
def test_a_response_closes_its_connection_one_time_in_requests_per_connection(
    handler_with_view, requests_per_connection, closed_at_least, closed_at_most
):
    handler = handler_with_view(2, lambda request: HttpResponse("ok"))
    handler.requests_per_connection = requests_per_connection

    async def many():
        return [await response_headers(handler, "/") for _ in range(400)]

    answers = in_own_loop(many())
    closing = sum((b"connection", b"close") in headers for headers in answers)
    assert closed_at_least <= closing <= closed_at_most
    assert all((b"Content-Type", b"text/html; charset=utf-8") in headers for headers in answers)  # the rest kept


# ---------------------------------------------------------------- body limits by what authenticates


async def post(handler: BoundedASGIHandler, headers: list, chunks: list[bytes], pause: float = 0.0):
    """A POST whose body comes in `chunks` (`pause` seconds before each); (status, body, bytes the handler took)."""
    pending = list(chunks)
    taken, status, answer = 0, None, b""

    async def receive():
        nonlocal taken
        if not pending:
            await asyncio.Event().wait()  # the body is over: the client waits for the answer
        await asyncio.sleep(pause)
        chunk = pending.pop(0)
        taken += len(chunk)
        return {"type": "http.request", "body": chunk, "more_body": bool(pending)}

    async def send(message):
        nonlocal status, answer
        if message["type"] == "http.response.start":
            status = message["status"]
        else:
            answer += message.get("body", b"")

    request = {**scope("/api/v1/projects/"), "method": "POST", "headers": [(b"host", b"testserver"), *headers]}
    await handler(request, receive, send)
    return status, answer, taken


@pytest.fixture
def body_reading_handler(settings, monkeypatch):
    """The served handler (core.auth's credential check) in front of a view that reads the whole body."""
    from core.auth import credentials_check_out

    settings.ANONYMOUS_MAX_BODY_BYTES, settings.NLI_MAX_IMPORT_BYTES = 1000, 10_000
    handler = BoundedASGIHandler(1, credentials_check_out=credentials_check_out)
    monkeypatch.setattr(handler, "get_response", lambda request: HttpResponse(f"read {len(request.body)}"))
    return handler


@pytest.fixture
def signed_in_credentials(transactional_db, make_user):
    """A real token and a real session cookie of one user (committed: the check runs on a thread of its own)."""
    from django.test import Client
    from rest_framework.authtoken.models import Token

    user = make_user("body-sender")
    client = Client()
    client.force_login(user)
    return Token.objects.create(user=user).key, client.cookies["sessionid"].value


def test_credentials_that_do_not_check_out_get_the_anonymous_limit_unread(body_reading_handler, transactional_db):
    for credential in [(b"authorization", b"Token bogus"), (b"cookie", b"sessionid=bogus"), (b"authorization", b"x")]:
        declared = [credential, (b"content-length", b"150000000")]
        status, answer, taken = in_own_loop(post(body_reading_handler, declared, [b"x" * 150_000_000]))
        assert (status, taken) == (413, 0), credential
        assert json.loads(answer)["code"] == "too_large"
        # Without a length the body is cut off just past the anonymous limit.
        status, _, taken = in_own_loop(post(body_reading_handler, [credential], [b"x" * 600] * 20))
        assert status == 413 and taken == 1200, credential


def test_credentials_that_check_out_may_send_up_to_the_import_limit(body_reading_handler, signed_in_credentials):
    token, session = signed_in_credentials
    for credential in [(b"authorization", f"Token {token}".encode()), (b"cookie", f"sessionid={session}".encode())]:
        status, answer, _ = in_own_loop(
            post(body_reading_handler, [credential, (b"content-length", b"5000")], [b"x" * 5000])
        )
        assert (status, answer) == (200, b"read 5000"), credential
        status, answer, _ = in_own_loop(post(body_reading_handler, [credential], [b"x" * 1000] * 5))
        assert (status, answer) == (200, b"read 5000"), credential


def test_a_body_that_stops_coming_is_answered_408(body_reading_handler, settings, transactional_db):
    settings.BODY_IDLE_SECONDS, settings.ANONYMOUS_BODY_SECONDS = 0.5, 1
    started = time.monotonic()
    status, answer, taken = in_own_loop(post(body_reading_handler, [], [b"x"] * 100, pause=0.2))  # trickles
    assert status == 408 and json.loads(answer)["code"] == "timeout"
    assert time.monotonic() - started < 3 and taken < 10
    status, _, _ = in_own_loop(post(body_reading_handler, [], [b"x", b"y"], pause=0.8))  # stalls
    assert status == 408
