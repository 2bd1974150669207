"""Instrument versions: what the workers of a study saw, so that every answer says what it answered.

The instrument is the study's task type, title, instructions, worked examples and every setting declared
`worker_visible` (labels, slider ticks, words asked for, items per page, ...). Its version is named by the
SHA-256 of that content as canonical JSON. Each page records the version current when it was claimed;
changing what workers see after pages were handed out makes a new version, and the old one stays listed
with its text. Before any page was handed out the current version is simply rewritten.
"""

from __future__ import annotations

import hashlib
import json

from django.db import transaction
from django.db.models import Count

from annotation.models import Assignment, InstrumentVersion, Project
from annotation.services.study_settings import current_setting, settings_schema


def content(project: Project) -> dict:
    """What workers of the project see now."""
    schema = settings_schema(project.task)
    return {
        "task_type": project.task_type,
        "settings": {
            setting.name: current_setting(project, schema, setting.name) for setting in schema if setting.worker_visible
        },
    }


def digest_of(value: dict) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def record(project: Project) -> InstrumentVersion:
    """Make the project's current version match what workers see now: the same version if nothing they see
    changed, the current one rewritten if no page used it yet, a new version otherwise."""
    now = content(project)
    digest = digest_of(now)
    with transaction.atomic():
        current = project.instrument
        if current is not None and current.digest == digest:
            return current
        if current is not None and not Assignment.objects.filter(instrument=current).exists():
            current.digest, current.content = digest, now
            current.save(update_fields=["digest", "content"])
            return current
        number = (project.instrument_versions.order_by("-number").values_list("number", flat=True).first() or 0) + 1
        version = InstrumentVersion.objects.create(project=project, number=number, digest=digest, content=now)
        Project.objects.filter(pk=project.pk).update(instrument=version)
        project.instrument = version
        return version


def current_id(project: Project) -> int:
    """The id a new page records; a project made before versions were kept gets its first one here, once."""
    if project.instrument_id is None:
        record(project)
    return project.instrument_id


def versions(project: Project) -> list[dict]:
    """Every version of the project, oldest first, with the pages shown with it."""
    rows = project.instrument_versions.annotate(page_count=Count("pages")).order_by("number")
    return [
        {
            "number": v.number,
            "digest": v.digest,
            "created_at": v.created_at.isoformat(),
            "pages": v.page_count,
            "current": v.pk == project.instrument_id,
            "content": v.content,
        }
        for v in rows
    ]
