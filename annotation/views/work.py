"""The worker's pages: the list of studies, a page of items (with its draft and its deadline), qualification,
crowd entry and finish."""
import json

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Assignment, CrowdSession, Item
from annotation.services import access, crowd, drafts, qualification
from annotation.services.assignments import (
    SubmissionError, abandon_minutes, claim_page, extend_page, open_assignment, release_page, submit_page,
)


def home(request):
    user = request.user
    context = {"is_worker": False, "is_author": False}
    if user.is_authenticated:
        context["is_worker"] = access.has_role(user, access.WORKER)
        context["is_author"] = access.has_role(user, access.AUTHOR)
        if context["is_worker"]:
            has_work = Exists(Item.objects.filter(project=OuterRef("pk"), claimable=True))
            context["work_projects"] = [
                (project, project.has_work)
                for project in access.workable_projects(user).annotate(has_work=has_work).order_by("title")
            ]
        if context["is_author"]:
            managed = access.managed_projects(user).select_related("owner")
            context["managed_projects"] = Paginator(managed, 25).get_page(request.GET.get("page"))
    return render(request, "home.html", context)


@login_required
def work(request, slug):
    """Show the worker's current page of this project, claiming a new one when needed."""
    project = access.project_for(request.user, slug)
    try:
        assignment = claim_page(project, request.user)
    except access.NotQualified:
        return redirect("qualify", slug=slug)
    if assignment is None:
        return render(request, "annotation/no_work.html", {"project": project, "code": _completion(request, project)})
    return _render_page(request, project, assignment)


def _crowd_session(request, project):
    return CrowdSession.objects.filter(pk=request.session.get("crowd_session"), project=project, worker=request.user).first()


def _completion(request, project) -> str | None:
    session = _crowd_session(request, project)
    return crowd.complete(session) if session else None


def enter(request, slug):
    """Public entry link for crowd platforms: /enter/<slug>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=..."""
    project = get_object_or_404(access.enterable_projects(), slug=slug)
    try:
        session = crowd.enter(project, request.GET)
    except crowd.EntryError as exc:
        return render(request, "annotation/entry_error.html", {"project": project, "error": str(exc)}, status=400)
    login(request, session.worker, backend="django.contrib.auth.backends.ModelBackend")
    request.session["crowd_session"] = session.pk
    return redirect("work", slug=slug)


@login_required
def done(request, slug):
    """Finish a crowd session: give back the unanswered page and show the completion code. A code is
    given once the worker has submitted at least one page (or there is no work left for them)."""
    project = access.project_for(request.user, slug)
    session = _crowd_session(request, project)
    if session is None:
        raise Http404("no crowd session for this project")
    if request.method == "POST" and not session.completion_code:
        current = open_assignment(project, request.user)
        submitted = Assignment.objects.filter(project=project, worker=request.user, status=Assignment.Status.SUBMITTED)
        if not submitted.exists() and not _no_work_left(project, request.user):
            messages.error(request, "Submit at least one page before finishing.")
            return redirect("work", slug=slug)
        if current is not None:
            release_page(current.pk, request.user)
        crowd.complete(session)
    if not session.completion_code:
        return redirect("work", slug=slug)
    return render(request, "annotation/no_work.html", {"project": project, "code": session.completion_code, "finished": True})


def _no_work_left(project, worker) -> bool:
    return not project.items.filter(claimable=True).exclude(claims__worker=worker).exists()


@login_required
def qualify(request, slug):
    project = access.project_for(request.user, slug)
    test = project.qualification
    if test is None or qualification.has_passed(test, request.user):
        return redirect("work", slug=slug)
    items = list(test.items.all())
    context = {
        "project": project,
        "test": test,
        "items": items,
        "attempts_left": qualification.attempts_left(test, request.user),
        **task_context(project.task, test.options or project.options),
    }
    if request.method == "POST":
        answers = answers_from_form(request.POST, [item.id for item in items])
        try:
            attempt = qualification.take_test(test, request.user, answers)
        except SubmissionError as exc:
            context.update(error=exc, values={int(k): v["value"] for k, v in answers.items()})
            return render(request, "annotation/qualify.html", context, status=exc.status)
        if attempt.passed:
            messages.success(request, "You passed the qualification test. Welcome!")
            return redirect("work", slug=slug)
        context.update(attempt=attempt, attempts_left=qualification.attempts_left(test, request.user))
    return render(request, "annotation/qualify.html", context)


def _render_page(request, project, assignment, error=None, values=None, status=200):
    claims = assignment.claims.select_related("item__example", "item__atom").order_by("position")
    return render_items(request, project, project.task.order_page([claim.item for claim in claims]), assignment,
                        error=error, values=values, status=status)


def render_items(request, project, items, assignment=None, error=None, values=None, status=200):
    """A worker's page of items; without an assignment it is a read-only preview (nothing can be sent)."""
    context = {
        "project": project,
        "assignment": assignment,
        "items": items,
        "error": error,
        "values": values or {},
        "crowd": _crowd_session(request, project) is not None,
        "draft": drafts.draft_of(assignment) if assignment else {},
        "abandon_minutes": abandon_minutes(project),
        **task_context(project.task, project.options),
    }
    return render(request, "annotation/work.html", context, status=status)


def task_context(task, options) -> dict:
    return {"task_template": task.template, **task.widget_context(options)}


def answers_from_form(post, item_ids) -> dict:
    """Form fields value_<id>, reason_<id>, seconds_<id> -> the answers dict the service validates. An answer
    in several parts (one text per target) comes as value_<id>.<part> fields: its value is {part: text}."""
    answers = {}
    for item_id in item_ids:
        prefix = f"value_{item_id}."
        parts = {name.removeprefix(prefix): post[name] for name in post if name.startswith(prefix)}
        answer = {"value": parts or post.get(f"value_{item_id}", "")}
        if f"reason_{item_id}" in post:
            answer["reason"] = post[f"reason_{item_id}"]
        if post.get(f"seconds_{item_id}"):
            answer["seconds"] = post[f"seconds_{item_id}"]
        answers[str(item_id)] = answer
    return answers


@login_required
@require_POST
def submit(request, slug, assignment_id):
    project = access.project_for(request.user, slug)
    assignment = get_object_or_404(Assignment, pk=assignment_id, project=project, worker=request.user)
    item_ids = list(assignment.claims.values_list("item_id", flat=True))
    answers = answers_from_form(request.POST, item_ids)
    try:
        result = submit_page(assignment.pk, request.user, answers)
    except SubmissionError as exc:
        if exc.status == 403:
            raise PermissionDenied(exc.message) from None
        if exc.status == 400:
            values = {int(k): v["value"] for k, v in answers.items()}
            return _render_page(request, project, assignment, error=exc, values=values, status=400)
        messages.error(request, exc.message)
        return redirect("work", slug=slug)
    if result.late:
        messages.warning(request, "That page was submitted after its time ran out; your answers were kept.")
    else:
        count = len(result.items)
        messages.success(request, f"Saved {count} answer{'s' if count != 1 else ''}. Here is the next page.")
    return redirect("work", slug=slug)


@login_required
@require_POST
def release(request, slug, assignment_id):
    project = access.project_for(request.user, slug)
    try:
        release_page(assignment_id, request.user)
    except Assignment.DoesNotExist:
        raise Http404("no such page") from None
    messages.info(request, "The page was given back.")
    return redirect("home") if request.POST.get("stop") else redirect("work", slug=project.slug)


def _page_state(assignment) -> dict:
    return {"expires_at": assignment.expires_at.isoformat(), "extended": assignment.extended}


def _refusal(exc: SubmissionError) -> JsonResponse:
    return JsonResponse({"field": exc.field, "error": exc.message}, status=exc.status)


@login_required
@require_POST
def save_draft(request, slug, assignment_id):
    """The page's unsent answers as JSON ({"answers": {item id: {value, reason, seconds}}}); also its heartbeat."""
    project = access.project_for(request.user, slug)
    get_object_or_404(Assignment, pk=assignment_id, project=project, worker=request.user)
    try:
        data = json.loads(request.body or b"null")
    except (json.JSONDecodeError, UnicodeDecodeError):
        return JsonResponse({"field": "body", "error": "is not JSON"}, status=400)
    if not isinstance(data, dict) or "answers" not in data:
        return JsonResponse({"field": "answers", "error": "is missing"}, status=400)
    try:
        assignment = drafts.save_draft(assignment_id, request.user, data["answers"])
    except SubmissionError as exc:
        return _refusal(exc)
    return JsonResponse({"saved": True, **_page_state(assignment)})


@login_required
@require_POST
def extend(request, slug, assignment_id):
    """More time for the page, once."""
    project = access.project_for(request.user, slug)
    get_object_or_404(Assignment, pk=assignment_id, project=project, worker=request.user)
    try:
        assignment = extend_page(assignment_id, request.user)
    except SubmissionError as exc:
        return _refusal(exc)
    return JsonResponse(_page_state(assignment))
