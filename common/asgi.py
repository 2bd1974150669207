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
  (a streamed export, a slow client) hold no slot, and nor does opening a stored file for download: a
  response with `open_off_turn()` (jobs.files.StoredFileResponse) is opened after the turn is given back,
  so downloads waiting on a hung bucket cannot keep claims and submits from their turn.

And one about bodies: a request may send at most ANONYMOUS_MAX_BODY_BYTES unless its credentials check
out (`credentials_check_out`, given by config/asgi.py: a token or session cookie of an active user, looked up
on a thread of its own, and only when a body is larger than the anonymous limit, so the hot path never pays for
it); then the import limit. A declared body (Content-Length) over the limit is answered 413 before a byte of
it is read: Django's handler would otherwise read it whole (to a temporary file) before authentication and the
import size limit are asked. A body sent without a length is cut off once it passes the limit, also with 413.
A body that stops coming is timed out with 408: BODY_IDLE_SECONDS without a byte, or, without credentials,
ANONYMOUS_BODY_SECONDS for the whole body (a client trickling a byte at a time holds no connection for long).

And one about connections: a response closes its keep-alive connection one time in
`requests_per_connection`, on average (as a proxy's keepalive_requests does), so clients reconnect now and
then. The server's processes share one listening socket and a new connection goes to whichever process
accepts it first; without reconnects, the connections stay where they landed, and after a process died
and was replaced all of them stayed on the survivor while the new process idled (docs/benchmarks.md).
"""

import asyncio
import json
import random
import time
import weakref
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler
from django.http.cookie import parse_cookie

from common.api_errors import CODE_BY_STATUS
from common.middleware import OFF_TURN_HERE

IDLE_THREADS_KEPT = 64  # after a burst, threads beyond these are ended, not kept for ever
MULTIPART_OVERHEAD = 2**20  # an upload's form fields and boundaries beside the file


class BoundedASGIHandler(ASGIHandler):
    def __init__(self, slots: int, requests_per_connection: int = 0, credentials_check_out=None):
        if slots < 1:
            raise ValueError("a web process must run at least one request at a time")
        if requests_per_connection < 0:
            raise ValueError("requests_per_connection must be 0 (never close) or more")
        BaseHandler.__init__(self)  # not ASGIHandler.__init__: it loads the middleware in async mode
        self.load_middleware(is_async=False)
        self.slots = slots
        # (authorization header, session cookie) -> whether they are an active user's: core.auth's, from config
        self.credentials_check_out = credentials_check_out or no_credentials_check_out
        self.requests_per_connection = requests_per_connection  # 0: connections are never closed here
        self._turns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a semaphore per event loop
        self._idle_threads: list[ThreadPoolExecutor] = []

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        body = _LimitedBody(scope, receive, self.credentials_check_out)
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > settings.ANONYMOUS_MAX_BODY_BYTES:
            limit = await body.limit_for_more_than_anonymous()
            if int(declared) > limit:
                await _refuse(scope, send, 413, _too_large(int(declared), limit))
                return
        if self.requests_per_connection and random.random() * self.requests_per_connection < 1:
            send = _closing_connection(send)
        send = body.noting_the_response(send)
        # Last in, first out: the threads in use stay few and warm.
        thread = self._idle_threads.pop() if self._idle_threads else ThreadPoolExecutor(1, "django-request")
        try:
            async with ThreadSensitiveContext(executor=thread):
                await self.handle(scope, body.receive, send)
        finally:
            if len(self._idle_threads) < IDLE_THREADS_KEPT:
                self._idle_threads.append(thread)
            else:
                thread.shutdown(wait=False)
        if body.refusal and not body.response_started:  # Django stopped reading the body and answered nothing
            await _refuse(scope, send, *body.refusal)

    async def get_response_async(self, request):
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self.slots)
        setattr(request, OFF_TURN_HERE, True)
        async with turns:
            response = await sync_to_async(self.get_response)(request)
        opener = getattr(response, "open_off_turn", None)
        if opener is not None:  # waits on the storage, not the database: after the turn is given back
            response = await sync_to_async(opener)(asynchronous=True)
        return response


def _header(scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", []):
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def no_credentials_check_out(authorization: str | None, session_key: str | None) -> bool:
    return False


class _LimitedBody:
    """The request's `receive`, held to the body limit its credentials earn and timed out when it stalls."""

    def __init__(self, scope, receive, credentials_check_out):
        self.scope, self._receive, self._credentials_check_out = scope, receive, credentials_check_out
        self.limit = settings.ANONYMOUS_MAX_BODY_BYTES
        self.checked = False
        self.received = 0
        self.complete = False
        self.started_at = time.monotonic()
        self.refusal: tuple[int, str] | None = None
        self.response_started = False

    async def limit_for_more_than_anonymous(self) -> int:
        """The limit once the body passes the anonymous one: the import limit if the credentials check out."""
        if not self.checked:
            self.checked = True
            session = parse_cookie(_header(self.scope, b"cookie") or "").get(settings.SESSION_COOKIE_NAME)
            signed_in = await sync_to_async(self._credentials_check_out, thread_sensitive=False)(
                _header(self.scope, b"authorization"), session
            )
            if signed_in:
                self.limit = settings.NLI_MAX_IMPORT_BYTES + MULTIPART_OVERHEAD
        return self.limit

    async def receive(self):
        if self.refusal:
            return {"type": "http.disconnect"}
        if self.complete:  # after the body Django listens for the client going away: no time limit then
            return await self._receive()
        try:
            message = await asyncio.wait_for(self._receive(), self._seconds_left())
        except TimeoutError:
            self.refusal = (408, "the request body stopped arriving; send it again")
            return {"type": "http.disconnect"}
        if message["type"] == "http.request":
            self.received += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
            if (
                self.received > settings.ANONYMOUS_MAX_BODY_BYTES
                and self.received > await self.limit_for_more_than_anonymous()
            ):
                self.refusal = (413, _too_large(self.received, self.limit))
                return {"type": "http.disconnect"}
        return message

    def _seconds_left(self) -> float:
        if self.limit > settings.ANONYMOUS_MAX_BODY_BYTES:
            return settings.BODY_IDLE_SECONDS
        whole_body_left = settings.ANONYMOUS_BODY_SECONDS - (time.monotonic() - self.started_at)
        return max(0.0, min(settings.BODY_IDLE_SECONDS, whole_body_left))

    def noting_the_response(self, send):
        async def send_and_note(message):
            if message["type"] == "http.response.start":
                self.response_started = True
            await send(message)

        return send_and_note


def _too_large(size: int, limit: int) -> str:
    return f"the request body is {size / 2**20:.1f} MiB, over the limit of {limit / 2**20:.1f} MiB for this request"


async def _refuse(scope, send, status: int, detail: str) -> None:
    """The refusal (JSON in the API's error shape on the API), the rest of the body left unread."""
    if scope.get("path", "").startswith("/api/"):
        body, kind = json.dumps({"detail": detail, "code": CODE_BY_STATUS[status]}).encode(), b"application/json"
    else:
        body, kind = detail.encode(), b"text/plain; charset=utf-8"
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", kind),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _closing_connection(send):
    """`send` with "Connection: close" added to the response: the server closes the connection after it."""

    async def send_and_close(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
        await send(message)

    return send_and_close
