"""The ASGI handler the server runs: Django's, with a cap on how many requests run Django's sync code at
once in one process."""
import asyncio
import weakref

from django.core.handlers.asgi import ASGIHandler


class BoundedASGIHandler(ASGIHandler):
    """Django's ASGI handler, letting at most `slots` requests run the middleware and the view at once in
    this process; the others wait their turn in the event loop. Django gives each request a thread of its
    own for its sync code, so with 64 clients on two processes 30-odd threads per process took turns on the
    interpreter lock, and a claim + submit cost more CPU than with a few at a time (docs/benchmarks.md).
    Reading the request body and sending the response (a streamed export, a slow client) hold no slot."""

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError("a web process must run at least one request at a time")
        super().__init__()
        self.slots = slots
        self._turns: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a semaphore per event loop

    async def get_response_async(self, request):
        loop = asyncio.get_running_loop()
        turns = self._turns.get(loop)
        if turns is None:
            turns = self._turns[loop] = asyncio.Semaphore(self.slots)
        async with turns:
            return await super().get_response_async(request)
