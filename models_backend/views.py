"""The models pages: start any model job (its form built from its declaration in models_backend.runs), the
list of model jobs, and the registry of local checkpoints, each with the studies it can be evaluated on (the
study evaluation's page, prefilled). A job's own page is the job page (jobs.views), as for every background
job."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from annotation.services import access
from core import roles
from jobs.kinds import kinds_of
from jobs.models import Job
from jobs.services import JobError
from jobs.workers import live_workers
from models_backend import catalog, study_evaluation_link
from models_backend.forms import ModelJobForm
from models_backend.launch import start_model_job
from models_backend.runs import FORMS


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
    studies = list(access.managed_projects(request.user).order_by("slug"))
    rows = [
        {
            "checkpoint": c,
            "runs": used[c.key],
            "studies": study_evaluation_link.studies_taking(studies, c.kind) if c.kind else None,
        }
        for c in listed
    ]
    return render(request, "models_backend/checkpoint_list.html", {"rows": rows, "workers": live_workers()})


@login_required
@require_GET
def checkpoint_evaluate(request):
    """ "Evaluate on a study": the study evaluation's form for that study, the checkpoint ticked."""
    _require_author(request.user)
    study = access.managed_projects(request.user).filter(slug=request.GET.get("study", "")).first()
    if study is None:
        messages.error(request, "Evaluate: pick one of your studies")
        return redirect("models_backend:checkpoint_list")
    query = urlencode({"model": request.GET.get("checkpoint", "")})
    return redirect(f"{reverse(study_evaluation_link.PAGE, args=[study.slug])}?{query}")
