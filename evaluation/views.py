"""Pages for evaluation runs: the list and the form to start one (authors and admins). A run's own page is
the job page (jobs.views), as for every background job."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render

from annotation.services import access
from core import roles
from evaluation.forms import RunForm
from evaluation.runs import SUITES, start_run, visible_runs
from jobs.kinds import JobError


def _require_author(user) -> None:
    roles.ensure_role(user, roles.AUTHOR, "run evaluations")


@login_required
def run_list(request):
    _require_author(request.user)
    runs = Paginator(visible_runs(request.user), 25).get_page(request.GET.get("page"))
    return render(request, "evaluation/run_list.html", {"runs": runs})


@login_required
def run_new(request):
    _require_author(request.user)
    projects = access.managed_projects(request.user)
    form = RunForm(request.POST or None, request.FILES or None, projects=projects)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = start_run(
                data["suite"], data["parameters"], form.input_files(), request.user, project=data.get("project")
            )
        except JobError as error:  # a RunError, or the job itself refused (its queue, its limit)
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Run {run.pk} ({data['suite']}) started.")
            return redirect("jobs:detail", job_id=run.pk)
    suites = [(suite.name, suite.files, [s.name for s in suite.settings]) for suite in SUITES.values()]
    return render(
        request, "evaluation/run_form.html", {"form": form, "suites": suites}, status=400 if form.errors else 200
    )
