"""Long imports and exports run as jobs (the one jobs module): an import of many rows, or an export prepared
as a file to download later. Each shows its progress on its job page and can be cancelled."""
from __future__ import annotations

from annotation.models import Project
from annotation.services import exporters, importers
from jobs.kinds import JobKind, register
from jobs.models import Job
from jobs.services import JobError, output_file, start_job

IMPORT, EXPORT = "import", "export"
# Files with more lines than this import in the background; smaller ones inside the request.
IMPORT_JOB_LINES = 10_000


def start_import(project: Project, path, fmt: str, mapping: dict | None, purpose: str, user) -> Job:
    """Queue the import of a file (copied into the job with its checksum)."""
    importers.check_format(project, fmt)
    importers.check_text(path)
    return start_job(IMPORT, {"format": fmt, "mapping": mapping or {}, "purpose": purpose}, user,
                     project=project, inputs={"file": path})


def start_export(project: Project, fmt: str, user) -> Job:
    """Queue an export written to a file in the job's folder (the format is checked here, before queueing)."""
    try:
        exporters.check_format(project, fmt)
    except exporters.ExportError as error:
        raise JobError(str(error)) from None
    job = start_job(EXPORT, {"format": fmt}, user, project=project)
    exporters.record_export(project, fmt, user, via=f"job {job.pk}")
    return job


def _import(job: Job, progress) -> dict:
    report = importers.import_file(job.project, job.input_path("file"), job.params["format"],
                                   job.params["mapping"] or None, purpose=job.params["purpose"], progress=progress)
    return report.as_dict()


def _export(job: Job, progress) -> dict:
    fmt = job.params["format"]
    path = output_file(job, exporters.file_name(job.project, fmt))
    records = exporters.write_export(job.project, fmt, path, progress=progress)
    return {"records": records, "file": path.name}


register(JobKind(IMPORT, "Import", _import, group="data",
                 describe_job=lambda job: f"Import ({job.params.get('format')}) into {job.project}"))
register(JobKind(EXPORT, "Export", _export, group="data",
                 describe_job=lambda job: f"Export ({job.params.get('format')}) of {job.project}"))
