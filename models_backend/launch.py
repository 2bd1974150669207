"""Start a model job as the browser describes it: checkpoints by registry key, input files from the user's
studies (exported) or uploads, settings from the form. Every input is read and checked before the job is
stored, so a bad row is refused with its line and field and nothing is stored."""

from __future__ import annotations

import tempfile
from pathlib import Path

from django.utils.text import get_valid_filename

from annotation.models import Project
from annotation.services import access
from common.readers import RowError
from common.schema import SettingError
from jobs.models import Job
from jobs.services import JobError, start_job
from models_backend import catalog
from models_backend.dataio import read_pairs, read_usnli
from models_backend.runs import FORMS
from models_backend.study_files import PROBABILITY_FORMAT, export_study


def _check(path: Path, formats: tuple[str, ...]) -> None:
    """Read the whole file as the job will: probabilities where the job needs them, else pairs."""
    try:
        read_usnli(path) if formats == (PROBABILITY_FORMAT,) else read_pairs(path)
    except RowError as error:
        raise JobError(str(error).replace(str(path.parent) + "/", "")) from None


def _save_upload(upload, folder: Path) -> Path:
    path = folder / (get_valid_filename(Path(upload.name).name) or "upload")
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


def start_model_job(
    form_name: str,
    user,
    checkpoints: dict,
    sources: dict,
    settings: dict,
    *,
    into_study: Project | None = None,
    queue: str = "default",
    background: bool = True,
) -> Job:
    """checkpoints: slot param -> registry key; sources: file role -> a Project or an uploaded file."""
    spec = FORMS[form_name]
    folders = {}
    for slot in spec.models:
        if checkpoints.get(slot.param):
            # The key, checked here; the worker that runs the job finds its folder on its own host.
            folders[slot.param] = catalog.resolve(user, checkpoints[slot.param], slot.kinds).key
        elif slot.required:
            raise JobError(f"{slot.label}: pick a checkpoint")
    try:
        params = spec.params(spec.settings.clean(settings), folders)
    except SettingError as error:
        raise JobError(str(error)) from None
    params["checkpoints"] = {param: checkpoints[param] for param in folders}  # the registry names, for the job page
    studies = {role: source for role, source in sources.items() if isinstance(source, Project)}
    for project in [*studies.values(), *([into_study] if into_study else [])]:
        if not access.can_manage(user, project):
            raise JobError(f"study {project.slug} is not one of yours")
    if studies:
        params["studies"] = {role: project.slug for role, project in studies.items()}
    if into_study is not None:
        params["into_study"] = into_study.slug
    with tempfile.TemporaryDirectory() as scratch:
        inputs = {}
        for slot in spec.files:
            if slot.role not in sources:
                raise JobError(f"{slot.label}: pick a study or upload a file")
            folder = Path(scratch) / slot.role
            folder.mkdir()
            source = sources[slot.role]
            path = (
                export_study(source, slot.formats, folder, gold=slot.gold)
                if isinstance(source, Project)
                else _save_upload(source, folder)
            )
            _check(path, slot.formats)
            inputs[slot.role] = path
        project = into_study or next(iter(studies.values()), None)
        return start_job(spec.kind, params, user, project=project, inputs=inputs, queue=queue, background=background)
