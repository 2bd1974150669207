"""Uploaded files kept between the upload and the confirmed import: the author sees a preview first.

A staged file lives under MEDIA_ROOT/uploads/<project id>/<token>/ and is removed once imported or
discarded; the token is a random hex string, so one project's author cannot reach another's file."""

from __future__ import annotations

import re
import secrets
import shutil
import time
from pathlib import Path

from django.conf import settings
from django.utils.text import get_valid_filename

from annotation.services.importers import check_size

TOKEN = re.compile(r"[0-9a-f]{32}")  # matched whole: a trailing newline is no token


def _folder(project) -> Path:
    return Path(settings.MEDIA_ROOT) / "uploads" / str(project.pk)


def stage(project, upload) -> str:
    """Copy an upload (streamed, chunk by chunk) aside for its preview; returns its token."""
    check_size(upload.size)
    token = secrets.token_hex(16)
    target = _folder(project) / token / (get_valid_filename(Path(upload.name).name) or "upload")
    target.parent.mkdir(parents=True)
    with open(target, "wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return token


def staged(project, token: str) -> Path | None:
    """The staged file of this token, or None."""
    if not TOKEN.fullmatch(token or ""):
        return None
    folder = _folder(project) / token
    files = list(folder.iterdir()) if folder.is_dir() else []
    return files[0] if files else None


def remove_stale(max_age_hours: float, now: float | None = None) -> int:
    """Remove staged uploads older than `max_age_hours` (previewed, never confirmed or discarded); returns how
    many. The expiry loop runs it (manage.py remove_stale_files)."""
    root = Path(settings.MEDIA_ROOT) / "uploads"
    cutoff = (now or time.time()) - max_age_hours * 3600
    removed = 0
    for folder in root.glob("*/*") if root.is_dir() else []:
        if folder.is_dir() and TOKEN.fullmatch(folder.name) and folder.stat().st_mtime < cutoff:
            shutil.rmtree(folder, ignore_errors=True)
            removed += 1
    return removed


def discard(project, token: str) -> None:
    if TOKEN.fullmatch(token or ""):
        shutil.rmtree(_folder(project) / token, ignore_errors=True)
