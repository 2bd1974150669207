"""The worker's pages: the list of studies, a page of items (with its draft and its deadline), qualification,
crowd entry and finish."""

import json
from functools import wraps

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_POST

from annotation.models import Assignment, CrowdSession, Item
from annotation.services import access, crowd, drafts, qualification
from annotation.services.assignments import (
    SubmissionError,
    abandon_minutes,
    claim_page,
    extend_page,
    note_seen,
    open_assignment,
    release_page,
    submit_page,
)
from core import roles


def home(request):
    user = request.user
    context = {"is_worker": False, "is_author": False}
    if user.is_authenticated:
        context["is_worker"] = roles.has_role(user, roles.WORKER)
        context["is_author"] = roles.has_role(user, roles.AUTHOR)
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


def crowd_frame(view):
    """MTurk shows an ExternalQuestion in a frame on its worker sites: an MTurk arrival's pages (and the
    preview) may be framed by those origins only, with a CSP frame-ancestors header instead of
    X-Frame-Options DENY. Every other response keeps DENY."""

    @wraps(view)
    def framed(request, slug, *args, **kwargs):
        response = view(request, slug, *args, **kwargs)
        if getattr(request, "mturk_frame", False) or _is_mturk_arrival(request, slug):
            response["Content-Security-Policy"] = "frame-ancestors " + " ".join(settings.MTURK_FRAME_ANCESTORS)
            response.xframe_options_exempt = True
        return response

    return framed


def _is_mturk_arrival(request, slug) -> bool:
    if not request.user.is_authenticated:
        return False
    return CrowdSession.objects.filter(
        project__slug=slug, worker=request.user, platform=CrowdSession.Platform.MTURK
    ).exists()


@crowd_frame
@login_required
def work(request, slug):
    """Show the worker's current page of this project, claiming a new one when needed."""
    project = access.project_for(request.user, slug)
    session = crowd.session_of(project, request.user)
    if session is not None and (session.completion_code or crowd.quota_reached(session)):
        if not session.completion_code:
            crowd.complete(session)
        return redirect("done", slug=slug)
    try:
        assignment = claim_page(project, request.user)
    except access.NotQualified:
        return redirect("qualify", slug=slug)
    if assignment is None:
        if session is not None and crowd.may_finish(session):
            crowd.complete(session)
            return redirect("done", slug=slug)
        return render(
            request, "annotation/no_work.html", {"project": project, "session": session, **_returned_context(session)}
        )
    return _render_page(request, project, assignment)


@crowd_frame
def enter(request, slug):
    """Public entry link for crowd platforms: /enter/<slug>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...
    (Prolific) or MTurk's ExternalQuestion URL with workerId, hitId, assignmentId and turkSubmitTo."""
    project = get_object_or_404(access.enterable_projects(), slug=slug)
    if crowd.is_mturk_preview(request.GET):
        request.mturk_frame = True
        return _mturk_preview(request, project)
    try:
        if _would_switch_account(request) and not request.POST.get("switch"):
            # Someone signed in with an account of their own (an author trying the link) is asked first.
            crowd.check_link(project, request.GET)
            return render(request, "annotation/entry_switch.html", {"project": project})
        session = crowd.enter(project, request.GET)
    except crowd.EntryError as exc:
        request.mturk_frame = "assignmentId" in request.GET
        return render(request, "annotation/entry_error.html", {"project": project, "error": str(exc)}, status=400)
    if request.user != session.worker:
        login(request, session.worker, backend="core.auth.RoleLoadingModelBackend")
    return redirect("work", slug=slug)


def _would_switch_account(request) -> bool:
    """Signed in with an account that is not a crowd account: entering would sign them out of it."""
    return request.user.is_authenticated and access.crowd_study(request.user) is None


def sample_items(project) -> list:
    """The study's first page of items, as the author's preview and MTurk's HIT preview show them."""
    sample = list(
        project.items.filter(is_gold=False).select_related("example", "atom").order_by("id")[: project.items_per_page]
    )
    return project.task.order_page(sample)


def _mturk_preview(request, project):
    """What an MTurk worker sees before accepting the HIT: the first items, read-only."""
    return render_items(request, project, sample_items(project), mturk_preview=True)


def _returned_context(session) -> dict:
    """What a crowd worker who stops without a code needs: the study's message, its returned code, the way back."""
    if session is None:
        return {}
    returned_code = crowd.study_setting(session.project, "returned_code")
    return {
        "returned_message": crowd.study_setting(session.project, "returned_message"),
        "returned_code": returned_code,
        "platform_url": crowd.prolific_url(returned_code)
        if returned_code and session.platform == CrowdSession.Platform.PROLIFIC
        else "",
        "resume_token": crowd.resume_token(session),
    }


@crowd_frame
@login_required
def done(request, slug):
    """The end of a crowd session. POST finishes: the unanswered page goes back and the completion code is
    given once the exit condition is met. GET shows the code when earned (Prolific arrivals are sent on
    to Prolific with it, MTurk arrivals post the HIT), else the study's returned message."""
    project = access.project_for(request.user, slug)
    session = crowd.session_of(project, request.user)
    if session is None:
        raise Http404("no crowd session for this project")
    if request.method == "POST" and not session.completion_code:
        if not crowd.may_finish(session):
            messages.error(request, _quota_message(session))
            return redirect("work", slug=slug)
        current = open_assignment(project, request.user)
        if current is not None:
            release_page(current.pk, request.user)
        crowd.complete(session)
    if not session.completion_code:
        return render(
            request,
            "annotation/no_work.html",
            {"project": project, "session": session, "stopped": True, **_returned_context(session)},
        )
    context = {"project": project, "session": session, "code": session.completion_code, "finished": True}
    if session.platform == CrowdSession.Platform.PROLIFIC:
        context["platform_url"] = crowd.prolific_url(session.completion_code)
    else:
        context["mturk_submit_url"] = crowd.mturk_submit_url(session)
        context["summary"] = crowd.answers_summary(session)
    return render(request, "annotation/no_work.html", context)


def _quota_message(session) -> str:
    pages = max(1, crowd.quota(session.project))
    return f"Submit {pages} page{pluralize(pages)} before finishing."


@crowd_frame
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
        result = qualification.feedback(test, attempt)
        if attempt.passed and not result["items"]:
            messages.success(request, f"You passed the qualification test{_score_text(result)}. Welcome!")
            return redirect("work", slug=slug)
        context.update(attempt=attempt, feedback=result, attempts_left=result["attempts_left"])
    if not context["attempts_left"]:  # a crowd worker who failed is told how to leave the study, not stranded
        context.update(_returned_context(crowd.session_of(project, request.user)))
    return render(request, "annotation/qualify.html", context)


def _score_text(result: dict) -> str:
    if result["score"] is None:
        return ""
    return f" with a score of {result['score']:.2f} (pass mark {result['pass_mark']:.2f})"


def _render_page(request, project, assignment, error=None, values=None, status=200):
    note_seen(assignment)  # a page in a browser keeps its items only while the browser shows signs of life
    claims = assignment.claims.select_related("item__example", "item__atom").order_by("position")
    return render_items(
        request,
        project,
        project.task.order_page([claim.item for claim in claims]),
        assignment,
        error=error,
        values=values,
        status=status,
    )


def render_items(request, project, items, assignment=None, error=None, values=None, status=200, mturk_preview=False):
    """A worker's page of items; without an assignment it is a read-only preview (nothing can be sent)."""
    session = crowd.session_of(project, request.user)
    context = {
        "mturk_preview": mturk_preview,
        "project": project,
        "assignment": assignment,
        "items": items,
        "error": error,
        "values": values or {},
        "crowd": session is not None,
        # Finishing is offered only where it would give the code (never on a first page it would refuse).
        "may_finish": session is not None and assignment is not None and crowd.may_finish(session),
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


@crowd_frame
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
        # Not "here is the next page": the next view may be the end of the study.
        messages.success(request, f"Saved {count} answer{pluralize(count)}.")
    return redirect("work", slug=slug)


@crowd_frame
@login_required
@require_POST
def release(request, slug, assignment_id):
    project = access.project_for(request.user, slug)
    try:
        release_page(assignment_id, request.user)
    except Assignment.DoesNotExist:
        raise Http404("no such page") from None
    messages.info(request, "The page was given back.")
    if not request.POST.get("stop"):
        return redirect("work", slug=project.slug)
    # A crowd worker who stops lands on the study's end page (their code if earned, else the returned message).
    return redirect("done", slug=project.slug) if crowd.session_of(project, request.user) else redirect("home")


def _page_state(assignment) -> dict:
    return {"expires_at": assignment.expires_at.isoformat(), "extended": assignment.extended}


def _own_page(request, slug, assignment_id) -> Assignment:
    """The worker's own page of this project; another's, or one of a project they may not see, is a 404."""
    project = access.project_for(request.user, slug)
    return get_object_or_404(Assignment, pk=assignment_id, project=project, worker=request.user)


def _refusal(exc: SubmissionError) -> JsonResponse:
    return JsonResponse({"field": exc.field, "error": exc.message}, status=exc.status)


@login_required
@require_POST
def save_draft(request, slug, assignment_id):
    """The page's unsent answers as JSON ({"answers": {item id: {value, reason, seconds}}}); also its heartbeat."""
    _own_page(request, slug, assignment_id)
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
    _own_page(request, slug, assignment_id)
    try:
        assignment = extend_page(assignment_id, request.user)
    except SubmissionError as exc:
        return _refusal(exc)
    return JsonResponse(_page_state(assignment))
