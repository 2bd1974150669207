"""Live progress: a submit tells the project's open dashboards that something changed; each dashboard
recomputes the counts at most every PROGRESS_INTERVAL seconds, so a submit never pays for counting.

Announcements are coalesced and never block a request: inside the server, announce_progress hands the
project id to the process's event loop and returns; the loop sends at most one announcement per project
every ANNOUNCE_INTERVAL seconds (the last change always follows), as a task of its own, so a slow or
absent channel layer (Redis down) costs the submit nothing. Outside a server (commands, plain tests) the
announcement is sent at once. Announcing is best effort: a failure is logged, the submit stands."""

from __future__ import annotations

import asyncio
import logging
import os
import time
import weakref

from asgiref.sync import SyncToAsync, async_to_sync
from channels.layers import get_channel_layer

logger = logging.getLogger(__name__)
PROGRESS_INTERVAL = 0.5
ANNOUNCE_INTERVAL = 0.25  # at most four announcements a second per project and process

# Per event loop: when each project was last announced, and the projects with an announcement scheduled.
_loop_state: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_sending: set[asyncio.Task] = set()


def progress_group(project_id: int) -> str:
    return f"project-progress-{project_id}"


def announce_progress(project) -> None:
    loop = _server_loop()
    if loop is None:
        async_to_sync(_send)(project.id)
        return
    loop.call_soon_threadsafe(_schedule, project.id)


def _server_loop() -> asyncio.AbstractEventLoop | None:
    """The event loop this sync code was called from (a view run by the ASGI server), if any."""
    loop = getattr(SyncToAsync.threadlocal, "main_event_loop", None)
    if loop is None or loop.is_closed() or getattr(SyncToAsync.threadlocal, "main_event_loop_pid", None) != os.getpid():
        return None
    return loop


def _schedule(project_id: int) -> None:
    """Runs in the event loop: one announcement per project per interval; a burst ends with one."""
    loop = asyncio.get_running_loop()
    last_sent, pending = _loop_state.setdefault(loop, ({}, set()))
    if project_id in pending:
        return
    pending.add(project_id)
    delay = max(0.0, last_sent.get(project_id, 0.0) + ANNOUNCE_INTERVAL - time.monotonic())

    def fire():
        pending.discard(project_id)
        last_sent[project_id] = time.monotonic()
        sending = loop.create_task(_send(project_id))
        _sending.add(sending)  # the loop keeps only a weak reference to a task: hold it until it is done
        sending.add_done_callback(_sending.discard)

    loop.call_later(delay, fire)


async def _send(project_id: int) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        await layer.group_send(progress_group(project_id), {"type": "progress.changed"})
    except Exception as error:
        logger.warning("live progress for project %s not announced: %r", project_id, error)
