"""common/asgi.py: a web process runs at most its slots of requests through Django at once."""
import asyncio
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.core.handlers.asgi import ASGIHandler

from common.asgi import BoundedASGIHandler


def test_no_more_requests_than_slots_run_at_once_and_each_gets_its_own_answer(monkeypatch):
    running = peak = 0

    async def django_response(self, request):
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.01)
        running -= 1
        return f"response to {request}"

    monkeypatch.setattr(ASGIHandler, "get_response_async", django_response)
    handler = BoundedASGIHandler(3)

    async def ten_requests():
        return await asyncio.gather(*(handler.get_response_async(number) for number in range(10)))

    # A loop of its own in a thread of its own: the browser tests leave one running in this thread.
    with ThreadPoolExecutor(1) as thread:
        answers = thread.submit(asyncio.run, ten_requests()).result()
    assert answers == [f"response to {number}" for number in range(10)]
    assert peak == 3


def test_a_process_must_serve_at_least_one_request():
    with pytest.raises(ValueError, match="at least one request"):
        BoundedASGIHandler(0)
