"""Long imports and exports run as jobs (the one jobs module): an import of many rows, or an export prepared
as a file to download later. Each shows its progress on its job page and can be cancelled."""

from __future__ import annotations

from dataclasses import asdict

from annotation.models import Project
from dataset_io.formats import ExportOptions
from dataset_io.services import exporters, importers
from dataset_io.services.dataset_card import CardDetails, card_details
from jobs.files import delete_tree
from jobs.kinds import HOUR, JobKind, register
from jobs.models import Job
from jobs.running import output_file
from jobs.services import JobError, cancel, start_job

IMPORT, EXPORT, BUNDLE = "import", "export", "bundle"
# Files with more lines than this import in the background; smaller ones inside the request.
IMPORT_JOB_LINES = 10_000


def start_import(project: Project, path, fmt: str, mapping: dict | None, purpose: str, user, label_map=None) -> Job:
    """Queue the import of a file (copied into the job with its checksum); a bad label mapping is refused
    here, before the job waits."""
    importers.check_format(project, fmt)
    importers.check_text(path)
    importers.read_context(project, mapping, label_map)
    return start_job(
        IMPORT,
        {"format": fmt, "mapping": mapping or {}, "purpose": purpose, "label_map": list(label_map or [])},
        user,
        project=project,
        inputs={"file": path},
    )


def start_export(project: Project, fmt: str, user, options: ExportOptions = ExportOptions()) -> Job:
    """Queue an export written to a file in the job's folder (the format is checked here, before queueing)."""
    try:
        exporters.check_format(project, fmt)
    except exporters.ExportError as error:
        raise JobError(str(error)) from None
    job = start_job(EXPORT, {"format": fmt, **asdict(options)}, user, project=project)
    exporters.record_export(project, fmt, user, via=f"job {job.pk}", options=options)
    return job


def start_bundle(
    project: Project, user, options: ExportOptions = ExportOptions(), card: CardDetails = CardDetails(), parquet=None
) -> Job:
    """Queue the dataset bundle (every fitting format, instrument versions, data statement, validation, the
    dataset card with the author's details, checked before queueing, Croissant metadata, Parquet copies)."""
    job = start_job(BUNDLE, {**asdict(options), "card": card.as_params(), "parquet": parquet}, user, project=project)
    exporters.record_export(project, "bundle", user, via=f"job {job.pk}", options=options)
    return job


def bundle_name(project: Project) -> str:
    return f"{project.slug}-dataset.zip"


def remove_stored_exports(projects: list[Project]) -> list[str]:
    """A participant's erasure (annotation.services.crowd.participants): the stored export and bundle files of
    these studies are removed (the jobs stay, their log says why), and exports or bundles still being written
    are cancelled, since they may have read the erased data; returns a line naming each, for the erasure."""
    removed = []
    jobs = Job.objects.filter(project__in=projects, kind__in=(EXPORT, BUNDLE)).select_related("project")
    for job in jobs.exclude(output="").order_by("pk"):
        delete_tree(job.storage_prefix)
        Job.objects.filter(pk=job.pk).update(output="")
        job.write_log("file removed: a participant's data was erased; make it again for a copy without it")
        removed.append(f"job {job.pk}: {job.output_name} ({job.kind} of {job.project.slug}), removed")
    for job in jobs.exclude(status__in=Job.FINISHED).order_by("pk"):
        cancel(job)
        job.write_log("cancelled: a participant's data was erased meanwhile; start it again")
        removed.append(f"job {job.pk}: {job.kind} of {job.project.slug}, cancelled before its file was written")
    return removed


def _import(job: Job, progress) -> dict:
    report = importers.import_file(
        job.project,
        job.input_path("file"),
        job.params["format"],
        job.params["mapping"] or None,
        purpose=job.params["purpose"],
        progress=progress,
        label_map=job.params.get("label_map"),
    )
    return report.as_dict()


def _options_of(job: Job) -> ExportOptions:
    flags = {name: job.params.get(name, False) for name in ("include_gold", "include_unanswered")}
    return ExportOptions(**flags, free_text=job.params.get("free_text", "keep"))


def _export(job: Job, progress) -> dict:
    fmt = job.params["format"]
    path = output_file(job, exporters.file_name(job.project, fmt))
    options = _options_of(job)
    records = exporters.write_export(job.project, fmt, path, progress=progress, options=options)
    return {"records": records, "file": path.name}


def _bundle(job: Job, progress) -> dict:
    from dataset_io.services.bundle import write_bundle  # the statement's figures need scipy: only in the job

    path = output_file(job, bundle_name(job.project))
    options = _options_of(job)
    card = card_details(**job.params.get("card", {}))
    statement = write_bundle(
        job.project, path, progress=progress, options=options, card=card, parquet=job.params.get("parquet")
    )
    files = statement["files"]
    return {
        "file": path.name,
        "files": len(files),
        "valid": all(file["valid"] for file in files),
        "records": sum(file["records"] for file in files),
    }


register(
    JobKind(
        IMPORT,
        "Import",
        _import,
        group="data",
        describe_job=lambda job: f"Import ({job.params.get('format')}) into {job.project}",
        time_limit=4 * HOUR,  # not repeatable: a run cut off after its commit would import twice
    )
)
register(
    JobKind(
        EXPORT,
        "Export",
        _export,
        group="data",
        describe_job=lambda job: f"Export ({job.params.get('format')}) of {job.project}",
        time_limit=4 * HOUR,
        repeatable=True,
    )
)


def _bundle_page(job: Job) -> dict:
    """A finished bundle's page offers to publish it on the Hub (dataset_io/_hub_push.html)."""
    return {"panel": "dataset_io/_hub_push.html"}


register(
    JobKind(
        BUNDLE,
        "Dataset bundle",
        _bundle,
        group="data",
        describe_job=lambda job: f"Dataset bundle of {job.project}",
        present=_bundle_page,
        time_limit=8 * HOUR,  # a million answers took minutes on a quiet host (docs/benchmarks.md)
        repeatable=True,
    )
)
