"""Start, run, follow and cancel background model jobs (prediction, UNLI training, atom and antonym
pipelines). The command line calls the same job functions directly, with a progress bar instead."""
from __future__ import annotations

import time
from typing import Callable

from django.utils import timezone

from models_backend.models import ModelRun
from models_backend.pipelines.antonyms import make_antonym_pairs_file
from models_backend.pipelines.atoms import generate_atoms_file
from models_backend.prediction import predict_file
from models_backend.training.unli import UnliSettings, train_unli

PROGRESS_WRITE_INTERVAL = 0.5  # seconds between progress writes to the database


class RunCancelled(Exception):
    """Raised inside a job's progress callback when someone asked the run to stop."""


def _predict(params, progress):
    return predict_file(
        params["model_dir"], params["input_path"], params["output_path"],
        output_format=params.get("output_format", "jsonl"), batch_size=int(params.get("batch_size", 64)),
        device=params.get("device"), progress=progress,
    )


def _train_unli(params, progress):
    return train_unli(
        params["output_dir"], params["train_path"], params["eval_path"], UnliSettings(**params.get("settings", {})),
        base=params.get("base"), device=params.get("device"), progress=progress,
    )


def _generate_atoms(params, progress):
    return generate_atoms_file(
        params["lm_dir"], params["nli_dir"], params["input_path"], params["output_path"],
        defeasible=bool(params.get("defeasible")), device=params.get("device"), progress=progress,
    )


def _make_antonym_pairs(params, progress):
    return make_antonym_pairs_file(
        params["input_path"], params["nli_dir"], params["output_path"], params["wordnet_dir"],
        embedder_dir=params.get("embedder_dir"), scorer_dir=params.get("scorer_dir"), device=params.get("device"),
        progress=progress,
    )


JOBS: dict[str, Callable] = {
    ModelRun.Job.PREDICT: _predict,
    ModelRun.Job.TRAIN_UNLI: _train_unli,
    ModelRun.Job.GENERATE_ATOMS: _generate_atoms,
    ModelRun.Job.MAKE_ANTONYM_PAIRS: _make_antonym_pairs,
}


def start_model_run(job: str, params: dict, user=None, queue: str = "default") -> ModelRun:
    """Store the run and queue it (queue "gpu" sends it to GPU workers)."""
    from models_backend.tasks import model_run_task

    if job not in JOBS:
        raise ValueError(f"unknown job {job!r}; choose one of {', '.join(JOBS)}")
    run = ModelRun.objects.create(job=job, params=params, created_by=user)
    model_run_task.using(queue_name=queue).enqueue(run.pk)
    run.refresh_from_db()
    return run


def database_progress(run: ModelRun) -> Callable[[int, int], None]:
    """A progress(done, total) callback that records progress and stops the job on cancel."""
    last_write = 0.0

    def progress(done: int, total: int) -> None:
        nonlocal last_write
        now = time.monotonic()
        if now - last_write < PROGRESS_WRITE_INTERVAL and done < total:
            return
        last_write = now
        ModelRun.objects.filter(pk=run.pk).update(done=done, total=total)
        if ModelRun.objects.filter(pk=run.pk, cancel_requested=True).exists():
            raise RunCancelled()

    return progress


def execute(run_id: int) -> ModelRun:
    run = ModelRun.objects.get(pk=run_id)
    if run.status != ModelRun.Status.QUEUED:
        return run  # delivered twice: the first delivery owns it
    if run.cancel_requested:
        return _finish(run, ModelRun.Status.CANCELLED)
    run.status, run.started_at = ModelRun.Status.RUNNING, timezone.now()
    run.save(update_fields=["status", "started_at"])
    try:
        result = JOBS[run.job](run.params, database_progress(run))
    except RunCancelled:
        return _finish(run, ModelRun.Status.CANCELLED)
    except Exception as exc:  # noqa: BLE001  (any failure of the job is the run's outcome, shown to its owner)
        return _finish(run, ModelRun.Status.FAILED, error=f"{type(exc).__name__}: {exc}")
    return _finish(run, ModelRun.Status.DONE, result=result)


def _finish(run: ModelRun, status: str, result=None, error: str = "") -> ModelRun:
    run.refresh_from_db()
    run.status, run.result, run.error, run.finished_at = status, result, error, timezone.now()
    run.save(update_fields=["status", "result", "error", "finished_at"])
    return run


def cancel(run: ModelRun) -> ModelRun:
    """Ask a run to stop: a queued run will not start, a running one stops at its next progress step."""
    if not run.finished:
        ModelRun.objects.filter(pk=run.pk).update(cancel_requested=True)
        run.refresh_from_db()
    return run
