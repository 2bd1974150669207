"""Live progress: a submit tells the project's open dashboards that something changed; each dashboard
recomputes the counts at most every PROGRESS_INTERVAL seconds, so a submit never pays for counting."""
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

PROGRESS_INTERVAL = 0.5


def progress_group(project_id: int) -> str:
    return f"project-progress-{project_id}"


def announce_progress(project) -> None:
    layer = get_channel_layer()
    if layer is not None:
        async_to_sync(layer.group_send)(progress_group(project.id), {"type": "progress.changed"})
