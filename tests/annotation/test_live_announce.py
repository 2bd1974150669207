"""Live-progress announcements inside a server: a burst of submits becomes a few announcements, the
request never waits for the channel layer, and the last change is always announced."""

import asyncio
import contextlib
import time
from types import SimpleNamespace

from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer

from annotation.live import ANNOUNCE_INTERVAL, announce_progress, progress_group


def test_a_burst_of_announcements_is_coalesced_and_the_last_one_arrives():
    project = SimpleNamespace(id=987654)

    async def scenario():
        layer = get_channel_layer()
        channel = await layer.new_channel()
        await layer.group_add(progress_group(project.id), channel)

        def burst():  # as a sync view under the ASGI server would call it
            started = time.perf_counter()
            for _ in range(200):
                announce_progress(project)
            return time.perf_counter() - started

        spent = await sync_to_async(burst)()
        await asyncio.sleep(0.05)
        later = time.monotonic()
        await sync_to_async(announce_progress)(project)  # one change after the burst
        received = []
        deadline = time.monotonic() + 4 * ANNOUNCE_INTERVAL
        while time.monotonic() < deadline:
            with contextlib.suppress(TimeoutError):
                received.append((time.monotonic(), await asyncio.wait_for(layer.receive(channel), 0.1)))
        await layer.group_discard(progress_group(project.id), channel)
        return spent, later, received

    spent, later, received = async_to_sync(scenario)()
    assert spent < 0.5  # 200 calls queued, none waited for a send
    assert 1 <= len(received) <= 3, received  # 201 announcements became at most three
    assert all(message["type"] == "progress.changed" for _, message in received)
    assert received[-1][0] >= later  # the change after the burst was announced too
