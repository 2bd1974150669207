"""A study evaluation as a job: checked whole, then stored and queued (the page and the API), and run on a
worker with its checkpoints fetched there."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from common.schema import SettingError
from evaluation.study_evaluation.protocols import (
    EVALUATE_STUDY,
    SETTINGS,
    Settings,
    check_baseline,
    label_order,
    model_names,
    protocol_of,
    spec_of,
)
from evaluation.study_evaluation.reference import (
    human_baseline_figures,
    read_reference,
    scored_examples,
    stored_reference,
    unscored_reason,
    write_reference,
)
from jobs.kinds import HOUR, JobKind, register
from jobs.services import JobError
from models_backend.model_kinds import ModelKind
from models_backend.runs import model_job


def start_study_evaluation(
    project,
    user,
    checkpoints: Sequence[str],
    settings: Mapping | None = None,
    *,
    collected_only: bool = False,
    bucket_nli: str | None = None,
    bucket_embedder: str | None = None,
    baseline: str | None = None,
    queue: str | None = None,
    background: bool = True,
):
    """Check everything, then store and queue an `evaluate_study` job: the study's reference is written and
    copied into the job; each checkpoint (a registry key) is checked against the study's protocol (its kind
    and its labels); baseline: a UNLI checkpoint run on the hypotheses alone (slider studies). JobError with
    nothing stored when anything does not fit."""
    import tempfile

    from annotation.services import access
    from jobs.services import start_job
    from jobs.workers import listening
    from models_backend import catalog

    if not access.can_manage(user, project):
        raise JobError(f"study {project.slug} is not one of yours")
    protocol = protocol_of(project)
    if not checkpoints:
        raise JobError("Models: pick at least one checkpoint")
    picked = [catalog.resolve(user, key) for key in dict.fromkeys(checkpoints)]
    for checkpoint in picked:
        label_order(protocol, spec_of(checkpoint.kind, checkpoint.labels, checkpoint.name))
    names = model_names([c.name for c in picked])
    try:
        cleaned = SETTINGS.clean(dict(settings or {}))
    except SettingError as error:
        name, message = next(iter(error.errors.items()))
        raise JobError(f"{name}: {message}") from None
    params: dict = {
        "models": {name: f"model_{i}" for i, name in enumerate(names)},
        "checkpoints": {f"model_{i}": c.key for i, c in enumerate(picked)},
        "settings": cleaned,
        "collected_only": collected_only,
    }
    if bucket_nli:
        if protocol.suite != "defeasible":
            raise JobError("Bucket NLI model: buckets of equivalent atoms are for defeasible studies")
        params["checkpoints"]["bucket_nli"] = catalog.resolve(user, bucket_nli, (ModelKind.NLI.value,)).key
        if bucket_embedder:
            params["checkpoints"]["bucket_embedder"] = catalog.resolve(user, bucket_embedder, (catalog.ENCODER,)).key
    if baseline:
        check_baseline(protocol)
        picked_baseline = catalog.resolve(user, baseline, protocol.model_kinds)
        params["checkpoints"]["baseline"] = picked_baseline.key
        params["baseline_name"] = model_names([picked_baseline.name])[0]
    with tempfile.TemporaryDirectory() as scratch:
        reference = write_reference(project, Path(scratch), collected_only)
        rows = read_reference(reference)
        if not scored_examples(protocol, rows):
            raise JobError(f"study {project.slug}: no settled item can be scored ({unscored_reason(protocol)})")
        params["reference"] = reference.describe()
        params["human_baseline"] = human_baseline_figures(project, protocol, int(params["settings"].get("seed", 0)))
        inputs = {"reference": reference.path}
        if reference.annotations is not None:
            inputs["annotations"] = reference.annotations
        return start_job(
            EVALUATE_STUDY,
            params,
            user,
            project=project,
            inputs=inputs,
            queue=queue or ("gpu" if listening("gpu") else "default"),
            background=background,
        )


def run_job(job, progress) -> dict:
    """The job: its checkpoints already materialised into folders (runs._model_job)."""
    from evaluation.study_evaluation.as_annotator import study_as_annotator
    from evaluation.study_evaluation.scoring import evaluate_study
    from jobs.running import output_file

    params = job.params
    has_annotations = any(entry["role"] == "annotations" for entry in job.inputs)
    reference = stored_reference(
        params["reference"],
        job.input_path("reference"),
        job.input_path("annotations") if has_annotations else None,
    )
    settings = Settings(
        **params["settings"],
        bucket_nli=params.get("bucket_nli"),
        bucket_embedder=params.get("bucket_embedder"),
    )
    folder = output_file(job, "study-evaluation")
    folder.mkdir(parents=True, exist_ok=True)
    models = {name: params[param] for name, param in params["models"].items()}
    result = evaluate_study(
        reference,
        models,
        folder,
        settings,
        human_baseline=params.get("human_baseline"),
        baseline=(params["baseline_name"], params["baseline"]) if params.get("baseline") else None,
        progress=progress,
        log=job.write_log,
    )
    # Each model beside the study's annotators, read from its prediction files: never stored as answers.
    if job.project is not None:
        result["as_annotator"] = study_as_annotator(job.project, result, folder)
    return result


def _present(job) -> dict:
    from evaluation.study_evaluation.views import present

    return present(job)


register(
    JobKind(
        EVALUATE_STUDY,
        "Study evaluation",
        model_job(run_job),
        group="models",  # listed with the model jobs: it runs checkpoints
        describe_job=lambda job: f"Study evaluation: {', '.join(job.params.get('models', {}))}",
        present=_present,
        time_limit=12 * HOUR,
        repeatable=True,
    )
)
