"""A job's pages, whatever its kind: its detail (settings, inputs, progress, result), the status fragment
the page polls, cancel, and the output download. Only its owner and admins see a job (404 for others)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from common.result_tables import show, split_result, table_cells
from core import roles
from jobs import files, services, workers
from jobs.kinds import get_kind
from jobs.models import Job
from jobs.running import without_host_paths


def _job(request, job_id) -> Job:
    return roles.run_for(request.user, Job.objects.select_related("created_by", "project"), job_id)


@login_required
def job_list(request):
    from django.core.paginator import Paginator

    roles.ensure_role(request.user, roles.AUTHOR, "run background jobs")
    jobs = roles.visible_runs(request.user, Job.objects.select_related("created_by", "project"))
    return render(request, "jobs/job_list.html", {"jobs": Paginator(jobs, 25).get_page(request.GET.get("page"))})


@login_required
def job_detail(request, job_id):
    job = _job(request, job_id)
    context = {
        "job": job,
        # As the result is stored: a path on the host that ran or started it cut to its file's name.
        "params": without_host_paths(job.params),
        "waiting_reason": workers.waiting_reason(job),
        "workers": workers.live_workers(),
    }
    kind = get_kind(job.kind)
    if job.status == Job.Status.DONE:
        # The result as tables, unless the kind's own presentation shows its figures (it may add a panel only).
        context.update(_result_tables(job.result or {}))
        if kind.present:
            context.update(kind.present(job))
    return render(request, "jobs/job_detail.html", context)


def _result_tables(result: dict) -> dict:
    """A result as the page's tables: one row per figure under its name as the result (and docs/metrics.md)
    spells it, nested names dotted, and a table per list of records."""
    scalars, tables = split_result(result)
    return {
        "scalars": [(name, show(value)) for name, value in scalars],
        "tables": [(name, *table_cells(rows)) for name, rows in tables],
    }


@login_required
def job_status(request, job_id):
    """The status fragment the detail page polls; once the job has finished, htmx reloads the whole page."""
    workers.reap_dead_when_looked_at()
    job = _job(request, job_id)
    response = render(request, "jobs/_status.html", {"job": job, "waiting_reason": workers.waiting_reason(job)})
    if job.finished and request.htmx:
        response["HX-Refresh"] = "true"
    return response


@login_required
@require_POST
def job_cancel(request, job_id):
    job = services.cancel(_job(request, job_id))
    messages.info(
        request, "Cancelling: the job stops at its next step." if not job.finished else "The job had already ended."
    )
    return redirect("jobs:detail", job_id=job.pk)


@login_required
def job_output(request, job_id):
    job = _job(request, job_id)
    if job.status != Job.Status.DONE or not job.output:
        raise Http404("this job has no output file")
    return files.download_response(job.output, download_name(job))


def download_name(job: Job) -> str:
    """A trained model's archive is named after its job, not its content hash."""
    return f"job-{job.pk}-model.zip" if job.output.startswith("checkpoints/") else job.output_name


def safe_svg(svg: str) -> str:
    """An SVG drawn by matplotlib from numbers (no user text inside), for a kind's results page."""
    return mark_safe(svg)
