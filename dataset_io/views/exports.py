"""Exporting a study in the browser: a format downloaded at once (streamed), a file or a dataset bundle prepared
in the background, and a finished bundle pushed to the Hugging Face Hub."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from annotation.services import access
from core import roles
from dataset_io.services import background, dataset_card, exporters, hub
from jobs.models import Job


@login_required
@require_POST
def export_job(request, slug):
    """Prepare an export as a file in the background (for large studies), to download from its job page."""
    project = access.project_for(request.user, slug, "export")
    try:
        options = exporters.options_from(request.POST)
        if request.POST.get("format") == "bundle":
            card, parquet = dataset_card.card_from(request.POST), dataset_card.parquet_from(request.POST)
            job = background.start_bundle(project, request.user, options, card, parquet)
        else:
            job = background.start_export(project, request.POST.get("format", ""), request.user, options)
    except (background.JobError, exporters.ExportError, dataset_card.CardError) as exc:
        messages.error(request, f"Not exported: {exc}")
        return redirect("project_detail", slug=slug)
    return redirect("jobs:detail", job_id=job.pk)


@login_required
@require_POST
def push_to_hub(request, slug, job_id):
    """Publish a finished dataset bundle on the Hugging Face Hub with the token typed in the form (used for this
    push only: it is not stored). The page waits for the upload; a large bundle is better pushed with
    `export_dataset --bundle --push-to-hub`."""
    project = access.project_for(request.user, slug, "export")
    job = roles.run_for(request.user, Job.objects.filter(project=project, kind=background.BUNDLE), job_id)
    repo = request.POST.get("repo", "")
    try:
        commit_url = hub.push_job_bundle(job, repo, request.POST.get("token", ""), not request.POST.get("public"))
    except hub.HubError as exc:
        messages.error(request, f"Not pushed: {exc}")
    else:
        messages.success(request, f"Pushed to {repo.strip()}: {commit_url}")
    return redirect("jobs:detail", job_id=job.pk)


@login_required
def project_export(request, slug, fmt):
    project = access.project_for(request.user, slug, "export")
    try:
        options = exporters.options_from(request.GET)
        chunks = exporters.export(project, fmt, options)
    except exporters.ExportError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    exporters.record_export(project, fmt, request.user, via="web", options=options)
    response = StreamingHttpResponse(chunks, content_type=exporters.content_type(fmt))
    response["Content-Disposition"] = f'attachment; filename="{exporters.file_name(project, fmt)}"'
    return response
