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

And one about connections: a response closes its keep-alive connection one time in
`requests_per_connection`, on average (as a proxy's keepalive_requests does), so clients reconnect now and
then. The server's processes share one listening socket and a new connection goes to whichever process
accepts it first; without reconnects, the connections stay where they landed, and after a process died
and was replaced all of them stayed on the survivor while the new process idled (docs/benchmarks.md).
"""
import asyncio
import random
import weakref
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import ThreadSensitiveContext, sync_to_async
from django.core.handlers.asgi import ASGIHandler
from django.core.handlers.base import BaseHandler

IDLE_THREADS_KEPT = 64  # after a burst, threads beyond these are ended, not kept for ever


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


def _closing_connection(send):
    """`send` with "Connection: close" added to the response: the server closes the connection after it."""
    async def send_and_close(message):
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
        await send(message)
    return send_and_close
