"""Uploaded files kept between the upload and the confirmed import: the author sees a preview first.

A staged file lives under MEDIA_ROOT/uploads/<project id>/<token>/ and is removed once imported or
discarded; the token is a random hex string, so one project's author cannot reach another's file."""
from __future__ import annotations

import re
import secrets
import shutil
from pathlib import Path

from django.conf import settings
from django.utils.text import get_valid_filename

from annotation.services.importers import check_size

TOKEN = re.compile(r"^[0-9a-f]{32}$")


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
    if not TOKEN.match(token or ""):
        return None
    folder = _folder(project) / token
    files = list(folder.iterdir()) if folder.is_dir() else []
    return files[0] if files else None


def discard(project, token: str) -> None:
    if TOKEN.match(token or ""):
        shutil.rmtree(_folder(project) / token, ignore_errors=True)
