"""Live progress: every submit pushes the project's counts to the open dashboards over Channels."""
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer


def progress_group(project_id: int) -> str:
    return f"project-progress-{project_id}"


def announce_progress(project) -> None:
    from annotation.services.progress import project_progress

    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(
        progress_group(project.id), {"type": "progress.update", "progress": project_progress(project)}
    )
