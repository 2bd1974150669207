"""WebSocket consumer for the live project dashboard."""
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from annotation.live import progress_group
from annotation.models import Project
from annotation.services.access import can_manage
from annotation.services.progress import project_progress


class ProgressConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self):
        user = self.scope["user"]
        project = await database_sync_to_async(Project.objects.filter(slug=self.scope["url_route"]["kwargs"]["slug"]).first)()
        if project is None or not await database_sync_to_async(can_manage)(user, project):
            await self.close(code=4403)
            return
        self.group = progress_group(project.id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        await self.send_json({"progress": await database_sync_to_async(project_progress)(project)})

    async def disconnect(self, code):
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def progress_update(self, event):
        await self.send_json({"progress": event["progress"]})
