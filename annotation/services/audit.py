"""The audit log: one row per export, block, unblock, adjudication, settings change and erasure, with who
and when. Services call `record`; admins read the rows (Django admin, /audit/)."""

from __future__ import annotations

from annotation.models import AuditEntry, Project

COMMAND_LINE = "command line"


def record(actor, action: str, project: Project | None = None, **details) -> AuditEntry:
    """Write one entry. `actor` is the user who acted, or None for the command line and background jobs."""
    signed_in = actor is not None and getattr(actor, "is_authenticated", False)
    return AuditEntry.objects.create(
        actor=actor if signed_in else None,
        actor_name=actor.get_username() if signed_in else COMMAND_LINE,
        action=action,
        project=project,
        project_slug=project.slug if project else "",
        details=details,
    )


def recent(limit: int = 200, action: str | None = None):
    entries = AuditEntry.objects.order_by("-created_at", "-id")
    if action:
        entries = entries.filter(action=action)
    return entries[:limit]
