"""Uploaded files kept between the upload and the confirmed import: the author sees a preview first.

A staged file is kept in the default storage under uploads/<project id>/<token>/ (so the preview and the
confirmation may be served by different web hosts) and is removed once imported or discarded; the token is a
random hex string, so one project's author cannot reach another's file. A host reads it from a local copy (the
file itself when the storage is this host's disk)."""

from __future__ import annotations

import re
import secrets
import shutil
import time
from datetime import UTC
from pathlib import Path

from django.core.files.storage import default_storage
from django.utils.text import get_valid_filename

from dataset_io.services.importers import check_size
from jobs import files

TOKEN = re.compile(r"[0-9a-f]{32}")  # matched whole: a trailing newline is no token


def _prefix(project, token: str = "") -> str:
    return f"uploads/{project.pk}/{token}".rstrip("/")


def stage(project, upload) -> str:
    """Keep an upload (streamed, chunk by chunk) for its preview; returns its token."""
    check_size(upload.size)
    token = secrets.token_hex(16)
    name = get_valid_filename(Path(upload.name).name) or "upload"
    upload.seek(0)
    files.save_chunks(f"{_prefix(project, token)}/{name}", upload.chunks())
    return token


def staged(project, token: str) -> Path | None:
    """A local copy of the staged file of this token, or None."""
    if not TOKEN.fullmatch(token or ""):
        return None
    try:
        _, names = default_storage.listdir(_prefix(project, token))
    except FileNotFoundError:
        return None
    if not names:
        return None
    return files.fetch(f"{_prefix(project, token)}/{names[0]}", _local_copies(project, token) / names[0])


def _local_copies(project, token: str) -> Path:
    return files.scratch("uploads", str(project.pk), token)


def remove_stale(max_age_hours: float, now: float | None = None) -> int:
    """Remove staged uploads older than `max_age_hours` (previewed, never confirmed or discarded); returns how
    many. The expiry loop runs it (manage.py remove_stale_files)."""
    cutoff = (now or time.time()) - max_age_hours * 3600
    removed = 0
    try:
        projects, _ = default_storage.listdir("uploads")
    except FileNotFoundError:
        return 0
    for project in projects:
        tokens, _ = default_storage.listdir(f"uploads/{project}")
        for token in tokens:
            if TOKEN.fullmatch(token) and _staged_at(f"uploads/{project}/{token}") < cutoff:
                files.delete_tree(f"uploads/{project}/{token}")
                shutil.rmtree(files.scratch("uploads", project, token), ignore_errors=True)
                removed += 1
    return removed


def _staged_at(prefix: str) -> float:
    _, names = default_storage.listdir(prefix)
    if not names:
        return 0.0
    modified = default_storage.get_modified_time(f"{prefix}/{names[0]}")
    return (modified if modified.tzinfo else modified.replace(tzinfo=UTC)).timestamp()


def discard(project, token: str) -> None:
    if TOKEN.fullmatch(token or ""):
        files.delete_tree(_prefix(project, token))
        shutil.rmtree(_local_copies(project, token), ignore_errors=True)
