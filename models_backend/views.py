"""The models pages: start any model job (its form built from its declaration in models_backend.runs), the
list of model jobs, and the registry of local checkpoints with a one-click evaluation against a study's gold.
A job's own page is the job page (jobs.views), as for every background job."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from annotation.services import access
from core import roles
from jobs.kinds import kinds_of
from jobs.models import Job
from jobs.services import JobError
from jobs.workers import live_workers
from models_backend import catalog
from models_backend.forms import ModelJobForm, studies_exporting
from models_backend.launch import start_model_job
from models_backend.runs import FORMS

# Which gold export a one-click evaluation reads, by model kind.
EVALUATE_FORMATS = {"unli": ("usnli",), "nli": ("snli",)}


def _require_author(user) -> None:
    roles.ensure_role(user, roles.AUTHOR, "run models")


@login_required
def run_list(request):
    _require_author(request.user)
    chosen = request.POST.get("job") or request.GET.get("job") or "predict"
    if chosen not in FORMS:
        raise Http404("no such model job")
    spec = FORMS[chosen]
    form = ModelJobForm(spec, request.user, request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            job = start_model_job(
                chosen,
                request.user,
                form.checkpoints(),
                form.sources(),
                data["settings"],
                into_study=data.get("into_study"),
                queue=data["queue"],
            )
        except JobError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Job {job.pk} started.")
            return redirect("jobs:detail", job_id=job.pk)
    jobs = roles.visible_runs(
        request.user, Job.objects.filter(kind__in=kinds_of("models")).select_related("created_by", "project")
    )
    return render(
        request,
        "models_backend/run_list.html",
        {
            "runs": Paginator(jobs, 25).get_page(request.GET.get("page")),
            "form": form,
            "spec": spec,
            "forms": FORMS.values(),
            "workers": live_workers(),
        },
        status=400 if form.errors else 200,
    )


@login_required
def checkpoint_list(request):
    _require_author(request.user)
    listed = catalog.checkpoints(request.user)
    used = catalog.runs_using(request.user, listed)
    rows = [
        {
            "checkpoint": c,
            "runs": used[c.key],
            "studies": studies_exporting(request.user, EVALUATE_FORMATS[c.kind])
            if c.kind in EVALUATE_FORMATS
            else None,
        }
        for c in listed
    ]
    return render(request, "models_backend/checkpoint_list.html", {"rows": rows, "workers": live_workers()})


@login_required
@require_POST
def checkpoint_evaluate(request):
    """One click: score a checkpoint against a study's gold (an evaluation job), then follow it."""
    _require_author(request.user)
    study = access.managed_projects(request.user).filter(slug=request.POST.get("study", "")).first()
    try:
        if study is None:
            raise JobError("pick one of your studies")
        job = start_model_job(
            "evaluate", request.user, {"model_dir": request.POST.get("checkpoint", "")}, {"gold": study}, {}
        )
    except JobError as error:
        messages.error(request, str(error))
        return redirect("models_backend:checkpoint_list")
    messages.success(request, f"Job {job.pk} started: {job.title} on study {study.slug}.")
    return redirect("jobs:detail", job_id=job.pk)
