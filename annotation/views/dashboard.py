"""Following a study: the dashboard (progress, items, workers; its import and export sections are the dataset
app's panel), one worker's page with block and unblock, gold checks and the linked validation round."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from annotation.forms import BudgetPlanForm
from annotation.models import Assignment
from annotation.services import access, atom_chain, items, linking, quality, simulation
from annotation.services.analysis import adjudication
from annotation.services.crowd import budget, crowd, pay
from annotation.services.progress import project_progress
from annotation.services.projects import TRANSITIONS
from common.schema import SettingError

PAGE_SIZE = 25


@login_required
@require_safe
def project_detail(request, slug):
    project = access.project_for(request.user, slug, "manage")
    return render(
        request,
        "annotation/project_detail.html",
        {
            "project": project,
            "progress": project_progress(project),
            "validation": linking.validation_status(project),
            "atom_chain": atom_chain.page_state(project, request.user),
            "queue_size": adjudication.queue(project).count(),
            "simulated": simulation.has_simulated_answers(project),
            "next_statuses": sorted(TRANSITIONS[project.status]),
            **_item_table(request, project),
            **_budget_planner(request, project),
            **_crowd_entry(request, project),
        },
    )


def _crowd_entry(request, project) -> dict:
    """The entry links to give the platforms, and the reward fair pay suggests (GET hourly_rate, currency)."""
    currency = request.GET.get("currency", "GBP")
    rate = request.GET.get("hourly_rate") or pay.PROLIFIC_RECOMMENDED_HOURLY.get(currency, "")
    context = {
        "entry_links": crowd.entry_links(project, request.build_absolute_uri("/")),
        "pay_currencies": list(pay.PROLIFIC_MINIMUM_HOURLY),
        "pay_asked": {"hourly_rate": rate, "currency": currency},
    }
    try:
        context["pay"] = pay.suggest_reward(project, rate, currency)
    except ValueError as error:
        context["pay_error"] = str(error)
    return context


def _budget_planner(request, project) -> dict:
    """The planner's form, and its plan once asked (a GET with its fields: bookmarkable, no side effect)."""
    if not budget.applies(project):
        return {}
    if not any(name in request.GET for name in BudgetPlanForm.base_fields):
        return {"plan_form": BudgetPlanForm()}
    form = BudgetPlanForm(request.GET)
    try:
        values = budget.PLAN_SETTINGS.clean({name: request.GET.get(name) for name in BudgetPlanForm.base_fields})
    except SettingError as error:
        form.is_valid()
        for name, message in error.errors.items():
            form.add_error(name, message)
        return {"plan_form": form}
    return {"plan_form": form, "plan_asked": True, "plan": budget.plan(project, **values)}


def _item_table(request, project) -> dict:
    query = {"q": request.GET.get("q", ""), "show": request.GET.get("show", ""), "sort": request.GET.get("sort", "id")}
    found = items.search_items(project, query["q"], query["show"], query["sort"])
    return {
        "items": Paginator(found, PAGE_SIZE).get_page(request.GET.get("page")),
        "query": query,
        "query_string": urlencode(query) + "&",  # kept by the page links
        "filters": items.FILTER_NAMES.items(),
        "sorts": [
            ("id", "oldest first"),
            ("-id", "newest first"),
            ("-annotations", "most annotations"),
            ("annotations", "fewest annotations"),
            ("status", "status"),
        ],
    }


def _worker_table(request, project) -> dict:
    # Workers with a submitted page, in name order: one index probe per user (assignment_worker_idx), not a
    # DISTINCT over every page of the study (1.5 s at 1,000,000 one-item pages, benchmarks/pages.py).
    submitted = Assignment.objects.filter(project=project, worker=OuterRef("pk"), status=Assignment.Status.SUBMITTED)
    workers = get_user_model().objects.filter(Exists(submitted)).order_by("username").values_list("pk", flat=True)
    page = Paginator(workers, PAGE_SIZE).get_page(request.GET.get("workers_page"))
    return {"worker_page": page, "figures": quality.worker_figures(project, list(page))}


@login_required
def item_table(request, slug):
    """The item table alone (search, filter, sort, page), as the dashboard reloads it live."""
    project = access.project_for(request.user, slug, "manage")
    return render(request, "annotation/_items_table.html", {"project": project, **_item_table(request, project)})


@login_required
def worker_figures(request, slug):
    """The per-worker table alone, as the dashboard reloads it live."""
    project = access.project_for(request.user, slug, "manage")
    return render(request, "annotation/_worker_figures.html", {"project": project, **_worker_table(request, project)})


@login_required
def worker_detail(request, slug, worker_id):
    """One worker in one study: figures, standing, answers and when they gave them; block or unblock."""
    project = access.project_for(request.user, slug, "manage")
    workers = get_user_model().objects.filter(annotations__item__project=project).distinct()
    worker = get_object_or_404(workers, pk=worker_id)
    if request.method == "POST":
        if request.POST.get("action") == "block":
            quality.block(
                project,
                worker,
                request.user,
                exclude_answers=bool(request.POST.get("exclude_answers")),
                reason=request.POST.get("reason", "")[: quality.MAX_REASON],
            )
            messages.success(request, f"{worker.username} is blocked from this study.")
        elif request.POST.get("action") == "unblock":
            quality.unblock(project, worker, request.user)
            messages.success(request, f"{worker.username} may work on this study again.")
        return redirect("worker_detail", slug=slug, worker_id=worker.pk)
    detail = quality.worker_detail(project, worker)
    detail["answers"] = Paginator(detail["answers"], PAGE_SIZE).get_page(request.GET.get("page"))
    task, options = project.task, project.options
    for answer in detail["answers"]:  # as people read them: a slider's 0.6078 rather than 0.6078378219382
        item = answer.item
        answer.shown = task.display(answer.value, options)
        answer.final_shown = task.display(item.gold if item.is_gold else item.final_value, options)
    most = max((hour["answers"] for hour in detail["timeline"]), default=0)
    for hour in detail["timeline"]:
        hour["percent"] = round(100 * hour["answers"] / most)
    return render(request, "annotation/worker_detail.html", {"project": project, "worker": worker, **detail})


@login_required
@require_POST
def make_gold(request, slug, item_id):
    project = access.project_for(request.user, slug, "manage")
    try:
        items.make_gold(project, item_id, request.POST.get("reference", ""))
    except items.SubmissionError as exc:
        messages.error(request, f"Item {item_id}: {exc.message}")
    else:
        messages.success(request, f"Item {item_id} is now a hidden gold check.")
    return redirect("adjudication_item", slug=slug, item_id=item_id)


@login_required
@require_POST
def send_to_validation(request, slug):
    """The dashboard's one-click send of the written pairs to the linked validation project."""
    project = access.project_for(request.user, slug, "manage")
    try:
        report = linking.send_to_validation(project)
    except linking.LinkError as exc:
        messages.error(request, f"Nothing was sent: {exc.message}")
    else:
        messages.success(
            request,
            f"Sent {report.created} new pair{pluralize(report.created)} to "
            f"{report.validation_project} ({report.already_sent} sent before).",
        )
    return redirect("project_detail", slug=slug)


@login_required
@require_POST
def send_valid_atoms(request, slug):
    """A validity study's valid atoms to a defeasible study of the author's (chosen, or a new one titled)."""
    project = access.project_for(request.user, slug, "manage")
    to = request.POST.get("to", "")
    try:
        report = atom_chain.send_valid_atoms(
            project, to=to, new_title="" if to else request.POST.get("new_title", ""), user=request.user
        )
    except atom_chain.ChainError as exc:
        messages.error(request, f"Nothing was sent: {exc.message}")
    else:
        messages.success(request, f"{report.summary()}.")
    return redirect(f"{reverse('project_detail', args=[slug])}#atom-chain")
