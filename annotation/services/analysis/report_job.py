"""The report's heavy figures (agreement with bootstrap intervals, the plots, the annotator models) computed
in a background job and kept until the study's answers change, so the report page never computes them.

answers_version  what the figures were computed from: the study's answer count, its newest answer, how many
                 are left out and its newest adjudication; any submit, removal, exclusion, readmission or
                 adjudication changes it
latest           the newest result, the computation on its way and a failure, without reading the answers:
                 what the page shows at once
check            the same against the answers as they are now, starting a job when no result is current
                 (the page asks for it once loaded, so the answers' aggregate never delays the page)
refresh          start a job now (the page's Refresh: after a change the version does not see, such as an
                 item's gold reference or the study's settings)
api_figures      `check` for the agreement API: the figures it serves and whether they are current

A job's result: {"version", "figures", "plots", "models"} (models: project_annotator_models without its
per-item labels, None for task types without nominal labels). It is recorded on the job, so the jobs page
lists each computation with its time and log.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import Count, Max, Q

from annotation.models import AdjudicationRecord, Annotation, Project
from jobs.kinds import HOUR, JobKind, register
from jobs.models import Job
from jobs.services import cancel, start_job

KIND = "study_report"
# Resamples behind the report's intervals; `manage.py agreement SLUG --bootstrap N` gives more.
REPORT_BOOTSTRAP = 200
# MACE and GLAD (crowd-kit) take about 5 s per 1,000 answers on 2 cores: past this many the job fits the fast
# methods only and the report points to `manage.py annotator_models`, which fits them all.
JOB_MODEL_ANSWERS = 20_000
PENDING = (Job.Status.QUEUED, Job.Status.RUNNING)
# Finished computations kept per study (each holds its plots): a study viewed while answers come in would
# otherwise gather one a view.
KEPT_JOBS = 5


def answers_version(project: Project) -> str:
    """A text that changes whenever the answers the report counts change: one aggregate over the study's
    answers (0.2-0.3 s at 1,000,000) and one over its adjudications. Counting is what keeps it exact at no
    cost to the submit: a counter on the project would be a statement and a lock in every submit, and the
    newest answer alone misses a submit committed after a later one and every removal (docs/benchmarks.md,
    2026-12-02)."""
    answers = Annotation.objects.filter(item__project=project).aggregate(
        count=Count("id"), newest=Max("id"), left_out=Count("id", filter=Q(excluded=True))
    )
    adjudication = AdjudicationRecord.objects.filter(item__project=project).aggregate(newest=Max("id"))["newest"]
    return (
        f"{answers['count']} answers, newest #{answers['newest'] or 0}, {answers['left_out']} left out, "
        f"newest adjudication #{adjudication or 0}"
    )


@dataclass
class CachedReport:
    """Where a study's report stands: `done` the newest finished computation (its result; None before the
    first), `pending` a computation queued or running, `failed` the newest one when it failed (on the answers
    as they are now, once checked: then it is not started again by itself, the page offers Compute again),
    `current` whether `done` counts the answers as they are now (None: not checked, see `check`)."""

    done: Job | None
    pending: Job | None
    failed: Job | None
    current: bool | None = None

    @property
    def result(self) -> dict | None:
        return self.done.result if self.done else None


def latest(project: Project) -> CachedReport:
    """The report's computations as they stand, without reading the answers (the page shows this at once)."""
    jobs = Job.objects.filter(project=project, kind=KIND).order_by("-created_at", "-id")
    newest = jobs.first()
    return CachedReport(
        done=jobs.filter(status=Job.Status.DONE).first(),
        pending=jobs.filter(status__in=PENDING).first(),
        failed=newest if newest and newest.status == Job.Status.FAILED else None,
    )


def check(project: Project, user) -> CachedReport:
    """`latest`, checked against the answers as they are now (one aggregate over them: 0.2-0.3 s at 1,000,000):
    starts a computation (as `user`) when none is current, none is on its way and the last one did not fail
    on these same answers. With the immediate task backend (tests) the job has run when this returns."""
    version = answers_version(project)
    state = latest(project)
    if state.failed is not None and state.failed.params["version"] != version:
        state.failed = None  # it failed on other answers: these may go through
    state.current = state.done is not None and state.done.params["version"] == version
    if not state.current and state.pending is None and state.failed is None:
        started = _first_start(project, _start(project, user, version))
        if started.status == Job.Status.DONE:
            state.done, state.current = started, True
        elif started.status in PENDING:
            state.pending = started
        else:
            state.failed = started
    return state


def refresh(project: Project, user) -> Job:
    """Start a computation now, or return the one already on its way."""
    return latest(project).pending or _first_start(project, _start(project, user, answers_version(project)))


def api_figures(project: Project, user) -> tuple[str, Job | None, Job | None]:
    """What the agreement API answers, after `check`: (status, the job it names, the newest finished job whose
    figures it gives, None before the first). status: "current" (the figures count the answers as they are
    now; the job is that computation), "computing" (the job on its way) or "failed" (the job that failed on
    these answers: not started again by itself, as on the page)."""
    state = check(project, user)
    if state.current:
        return "current", state.done, state.done
    if state.pending is not None:
        return "computing", state.pending, state.done
    return "failed", state.failed, state.done


def _start(project: Project, user, version: str) -> Job:
    return start_job(KIND, {"version": version, "bootstrap": REPORT_BOOTSTRAP}, user, project=project)


def _first_start(project: Project, started: Job) -> Job:
    """Of two requests that both found nothing on its way and both started a computation of the same answers,
    the one that started first wins: the later job (higher id) is cancelled and the earlier one returned. No
    lock needed: whichever checks second sees the other's committed row."""
    if started.status not in PENDING:
        return started  # already finished (the immediate backend): nothing left to save
    earlier = (
        Job.objects.filter(project=project, kind=KIND, pk__lt=started.pk, params__version=started.params["version"])
        .filter(status__in=(*PENDING, Job.Status.DONE))
        .order_by("pk")
        .first()
    )
    if earlier is None:
        return started
    cancel(started)
    return earlier


def _run(job: Job, progress) -> dict:
    """The job: figures and plots, then the annotator models of a nominal study."""
    # here, not at the top: pandas, scipy, matplotlib and crowd-kit stay out of the web processes
    from annotation.services.analysis.agreement import INTERACTIVE_RESAMPLED_VALUES, report_figures
    from annotation.services.analysis.annotator_models import project_annotator_models

    project = job.project
    if project is None:
        raise ValueError("the study of this report was deleted")
    progress(0, 2)
    computed = report_figures(
        project, bootstrap=job.params["bootstrap"], max_resampled_values=INTERACTIVE_RESAMPLED_VALUES
    )
    progress(1, 2)
    models = None
    if project.task.agreement_level == "nominal":
        models = project_annotator_models(project, max_answers=JOB_MODEL_ANSWERS)
        del models["items"]  # one entry per item: the command and the API give them; the page shows none
    progress(2, 2)
    finished = Job.objects.filter(project=project, kind=KIND, status__in=Job.FINISHED).order_by("-created_at", "-id")
    Job.objects.filter(pk__in=list(finished.values_list("pk", flat=True)[KEPT_JOBS - 1 :])).delete()
    return _json_ready({"version": job.params["version"], **computed, "models": models})


def _json_ready(value):
    """`value` as JSON would hold it, a NaN or infinity as None (PostgreSQL's jsonb takes neither)."""
    plain = json.loads(json.dumps(value, cls=DjangoJSONEncoder))
    return _without_nan(plain)


def _without_nan(value):
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _without_nan(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_without_nan(item) for item in value]
    return value


def _present(job: Job) -> dict:
    """The job's page: the counts it computed from (the figures themselves are on the study's report)."""
    figures = job.result["figures"]
    return {
        "scalars": [
            ("Computed from", job.result["version"]),
            ("Items annotated", figures["n_items"]),
            ("Annotations", figures["n_annotations"]),
            ("Workers", figures["n_workers"]),
            ("Bootstrap resamples", figures["bootstrap"]["resamples"]),
        ]
    }


register(
    JobKind(
        KIND,
        "Study report",
        _run,
        group="reports",
        describe_job=lambda job: f"Report figures of {job.project.slug if job.project else 'a deleted study'}",
        present=_present,
        time_limit=2 * HOUR,
        repeatable=True,
    )
)
