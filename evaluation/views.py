"""Pages for stored evaluation runs: the list, the form to start one, and a run's results (authors and admins)."""
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils.safestring import mark_safe

from annotation.services import access
from evaluation.forms import RunForm
from evaluation.plots import entropy_bins_svg
from evaluation.runs import SUITES, RunError, start_run, visible_runs
from evaluation.tables import show, split_result, table_cells


def _require_author(user) -> None:
    access.ensure_role(user, access.AUTHOR, "run evaluations")


def _run(request, run_id):
    return access.run_for(request.user, visible_runs(request.user), run_id)


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
            run = start_run(data["suite"], data["parameters"], form.input_files(), request.user,
                            project=data.get("project"))
        except RunError as error:
            form.add_error(None, str(error))
        else:
            messages.success(request, f"Run {run.pk} ({run.suite}) started.")
            return redirect("evaluation:run_detail", run_id=run.pk)
    suites = [(suite.name, suite.files, [p.name for p in suite.parameters]) for suite in SUITES.values()]
    return render(request, "evaluation/run_form.html", {"form": form, "suites": suites},
                  status=400 if form.errors else 200)


@login_required
def run_detail(request, run_id):
    run = _run(request, run_id)
    context = {"run": run}
    if run.results:
        scalars, tables = split_result(run.results)
        context["scalars"] = [(name, show(value)) for name, value in scalars]
        context["tables"] = [(name, *table_cells(rows)) for name, rows in tables]
        if run.suite == "chaos" and run.results.get("bins"):
            svg = entropy_bins_svg(run.results["bins"], run.results.get("jsd_measure", "distance"))
            context["plot"] = mark_safe(svg)  # drawn by matplotlib from numbers; no user text inside
    return render(request, "evaluation/run_detail.html", context)


@login_required
def run_status(request, run_id):
    """The status fragment the detail page polls; once the run has finished, htmx reloads the whole page."""
    run = _run(request, run_id)
    response = render(request, "evaluation/run_status.html", {"run": run})
    if run.finished and request.htmx:
        response["HX-Refresh"] = "true"
    return response
