"""The ASGI handler the server runs: Django's, reshaped so a request costs about what it costs under WSGI.

Django's own ASGI handler runs the middleware chain in async mode: every sync middleware method (13
middlewares here) is a separate hop from the event loop to a thread and back, and every request gets a
new thread. In-process on PostgreSQL that made `GET /api/me/` cost 2.7 ms of CPU against 0.9 ms through
the sync handler (docs/benchmarks.md). This handler keeps Django's request handling (`ASGIHandler.handle`:
body, signals, disconnects, streaming) and changes three things:

- the middleware and the view run as Django's sync chain (what WSGI runs), in one hop;
- a request's sync code runs on one thread from a pool of idle threads, given back when the request ends
  (`ThreadSensitiveContext(executor=...)`): the same one-thread-per-request guarantee as Django's, so
  database connections and streamed responses behave as they do there, without a new thread each time;
- at most `slots` requests run the chain at once in a process; the others wait their turn in the event
  loop. With 64 clients on two processes, 30-odd threads per process otherwise took turns on the
  interpreter lock and a claim + submit cost more CPU. Reading the request body and sending the response
  (a streamed export, a slow client) hold no slot.

And one about bodies: a request whose declared body (Content-Length) is over the import limit, or over
ANONYMOUS_MAX_BODY_BYTES when it carries no credentials (no session cookie, no Authorization header), is
answered 413 before a byte of it is read: Django's handler would otherwise read it whole (to a temporary
file) before authentication and the import size limit are asked. A body sent without a length is cut off
at the same limits.

And one about connections: a response closes its keep-alive connection one time in
`requests_per_connection`, on average (as a proxy's keepalive_requests does), so clients reconnect now and
then. The server's processes share one listening socket and a new connection goes to whichever process
accepts it first; without reconnects, the connections stay where they landed, and after a process died
and was replaced all of them stayed on the survivor while the new process idled (docs/benchmarks.md).
"""

import asyncio
import json
import random
import weakref
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler

IDLE_THREADS_KEPT = 64  # after a burst, threads beyond these are ended, not kept for ever
MULTIPART_OVERHEAD = 2**20  # an upload's form fields and boundaries beside the file


class BoundedASGIHandler(ASGIHandler):
    def __init__(self, slots: int, requests_per_connection: int = 0):
        if slots < 1:
            raise ValueError("a web process must run at least one request at a time")
        if requests_per_connection < 0:
            raise ValueError("requests_per_connection must be 0 (never close) or more")
        BaseHandler.__init__(self)  # not ASGIHandler.__init__: it loads the middleware in async mode
        self.load_middleware(is_async=False)
        self.slots = slots
        self.requests_per_connection = requests_per_connection  # 0: connections are never closed here
        self._turns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a semaphore per event loop
        self._idle_threads: list[ThreadPoolExecutor] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        limit = body_limit(scope)
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _refuse_too_large(scope, send, int(declared), limit)
            return
        receive = _cut_off_at(receive, limit)
        if self.requests_per_connection and random.random() * self.requests_per_connection < 1:
            send = _closing_connection(send)
        # Last in, first out: the threads in use stay few and warm.
        thread = self._idle_threads.pop() if self._idle_threads else ThreadPoolExecutor(1, "django-request")
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.handle(scope, receive, send)
        finally:
            if len(self._idle_threads) < IDLE_THREADS_KEPT:
                self._idle_threads.append(thread)
            else:
                thread.shutdown(wait=False)

    async def get_response_async(self, request):
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self.slots)
        async with turns:
            return await sync_to_async(self.get_response)(request)


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def body_limit(scope) -> int:
    """The largest body this request may send: an import's, or a small one without credentials."""
    cookies = _header(scope, b"cookie") or ""
    signed_in = _header(scope, b"authorization") is not None or f"{settings.SESSION_COOKIE_NAME}=" in cookies
    return settings.NLI_MAX_IMPORT_BYTES + MULTIPART_OVERHEAD if signed_in else settings.ANONYMOUS_MAX_BODY_BYTES


async def _refuse_too_large(scope, send, size: int, limit: int) -> None:
    """413 with the limit in MiB (JSON on the API), the body left unread."""
    detail = f"the request body is {size / 2**20:.1f} MiB, over the limit of {limit / 2**20:.1f} MiB for this request"
    if scope.get("path", "").startswith("/api/"):
        body, kind = json.dumps({"detail": detail, "code": "too_large"}).encode(), b"application/json"
    else:
        body, kind = detail.encode(), b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _cut_off_at(receive, limit: int):
    """`receive` that ends a body sent without a length once it passes `limit` (as a client gone away)."""
    received = 0

    async def receive_within_limit():
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                return {"type": "http.disconnect"}
        return message

    return receive_within_limit


def _closing_connection(send):
    """`send` with "Connection: close" added to the response: the server closes the connection after it."""

    async def send_and_close(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
        await send(message)

    return send_and_close
