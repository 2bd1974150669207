"""WebSocket consumer for the live project dashboard."""

import asyncio
import time

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from annotation.live import PROGRESS_INTERVAL, progress_group
from annotation.services.access import can_manage, can_view, installed_projects
from annotation.services.progress import project_progress


class ProgressConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope["user"]
        slug = self.scope["url_route"]["kwargs"]["slug"]
        self.project = await database_sync_to_async(installed_projects().filter(slug=slug).first)()
        # The one status policy, in WebSocket close codes: 4404 not visible, 4403 visible but not yours.
        if self.project is None or not await database_sync_to_async(can_view)(user, self.project):
            await self.refuse(4404)
            return
        if not await database_sync_to_async(can_manage)(user, self.project):
            await self.refuse(4403)
            return
        self.group = progress_group(self.project.id)
        self.last_sent = 0.0
        self.scheduled = None
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_progress()

    async def refuse(self, code: int):
        """Open, then close with `code` at once, nothing sent: a socket closed before it is accepted is refused
        at the handshake, which a browser only sees as a failed connection (1006), never as the code."""
        await self.accept()
        await self.close(code=code)

    async def disconnect(self, code):
        if getattr(self, "scheduled", None):
            self.scheduled.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def progress_changed(self, event):
        # Bursts of submits collapse into one recount per interval; the last change is always shown.
        if self.scheduled is None:
            delay = max(0.0, self.last_sent + PROGRESS_INTERVAL - time.monotonic())
            self.scheduled = asyncio.ensure_future(self._send_later(delay))

    async def _send_later(self, delay: float):
        await asyncio.sleep(delay)
        self.scheduled = None
        await self.send_progress()

    async def send_progress(self):
        self.last_sent = time.monotonic()
        await self.send_json({"progress": await database_sync_to_async(project_progress)(self.project)})
