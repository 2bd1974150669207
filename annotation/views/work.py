"""The worker's pages: the list of studies, a page of items (with its draft and its deadline), qualification,
crowd entry and finish."""

from functools import wraps
from urllib.parse import urlencode

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
from django.urls import reverse
from django.views.decorators.csrf import csrf_protect
from django.views.decorators.http import require_POST

from annotation.models import Assignment, CrowdSession, Item
from annotation.services import access, drafts, qualification
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
from annotation.services.crowd import crowd
from annotation.services.progress import WorkerProgress, worker_progress
from annotation.services.study_settings import task_guidance
from common import request_json
from common.middleware import allow_framing
from core import roles


def home(request):
    user = request.user
    context = {"is_worker": False, "is_author": False}
    if user.is_authenticated:
        context["is_worker"] = roles.has_role(user, roles.WORKER)
        context["is_author"] = roles.has_role(user, roles.AUTHOR)
        if context["is_worker"]:
            has_work = Exists(Item.objects.filter(project=OuterRef("pk"), claimable=True))
            workable = list(access.workable_projects(user).annotate(has_work=has_work).order_by("title"))
            context["work_projects"] = workable
        if context["is_author"]:
            managed = access.managed_projects(user).select_related("owner")
            context["managed_projects"] = Paginator(managed, 25).get_page(request.GET.get("page"))
    return render(request, "home.html", context)


FRAME_PARAMETER = "frame"


def crowd_frame(view):
    """MTurk shows an ExternalQuestion in a cross-site frame on its worker sites, where the browser sends no
    session cookie: an MTurk arrival's URLs carry a signed frame token (crowd.frame_token) that names their
    crowd session instead. A request with a valid token acts as that crowd account on this study's crowd
    pages only; being no ambient credential (a browser never adds it by itself), it needs no CSRF check,
    which every other request still gets. The pages of an MTurk arrival (and the HIT preview) keep the whole
    Content-Security-Policy, with MTurk's sites added as frame ancestors and as form targets; every other
    response keeps X-Frame-Options DENY."""
    protected = csrf_protect(view)

    @wraps(view)
    def framed(request, slug, *args, **kwargs):
        session = crowd.framed_session(slug, request.GET.get(FRAME_PARAMETER, ""))
        if session is not None:
            request.user = session.worker
            request.frame_token = crowd.frame_token(session)  # renewed: it lapses only when the pages stop
            response = view(request, slug, *args, **kwargs)
        else:
            response = protected(request, slug, *args, **kwargs)
        if _framed_in_mturk(request, response, slug, session):
            allow_framing(response, settings.MTURK_FRAME_ANCESTORS, settings.MTURK_FORM_ACTION)
        return response

    framed.csrf_exempt = True  # checked above, unless the frame token is what identifies the request
    return framed


def _framed_in_mturk(request, response, slug, session) -> bool:
    """Whether this response is shown in MTurk's frame: a page or redirect of an MTurk arrival (a JSON answer
    to the page's scripts, such as a draft save, is never framed). A view that read the crowd session says so
    in `request.mturk_frame`; otherwise the session is looked up here."""
    if session is not None:
        return True
    if response.get("Content-Type", "").startswith("application/json"):
        return False
    said = getattr(request, "mturk_frame", None)
    if said is not None:
        return bool(said)
    if not request.user.is_authenticated:
        return False
    return CrowdSession.objects.filter(
        project__slug=slug, worker=request.user, platform=CrowdSession.Platform.MTURK
    ).exists()


def _note_platform(request, session) -> None:
    """Tell crowd_frame whether this crowd session came from MTurk (it need not look the session up again)."""
    request.mturk_frame = session is not None and session.platform == CrowdSession.Platform.MTURK


def _frame_query(request) -> str:
    """The query an MTurk frame's links and forms carry ("" outside one)."""
    token = getattr(request, "frame_token", "")
    return f"?{urlencode({FRAME_PARAMETER: token})}" if token else ""


def _to(request, name: str, slug: str):
    """A redirect to one of the study's crowd pages that stays inside MTurk's frame."""
    return redirect(reverse(name, args=[slug]) + _frame_query(request))


@crowd_frame
@login_required
def work(request, slug):
    """Show the worker's current page of this project, claiming a new one when needed."""
    project = access.project_for(request.user, slug)
    session = crowd.session_of(project, request.user)
    _note_platform(request, session)
    if session is not None and (session.completion_code or crowd.quota_reached(session)):
        if not session.completion_code:
            crowd.complete(session)
        return _to(request, "done", slug)
    try:
        assignment = claim_page(project, request.user)
    except access.NotQualified:
        # A test takes unpaid time: it is worth taking only when there is work left after it.
        if not crowd.no_work_left(project, request.user):
            return _to(request, "qualify", slug)
        assignment = None
    except access.NotOpen:
        if session is None:
            raise
        return _turned_away(request, project, crowd.turnaway(project, session.platform, session))
    if assignment is None:
        if session is not None and crowd.may_finish(session):
            crowd.complete(session)
            return _to(request, "done", slug)
        return render(
            request,
            "annotation/no_work.html",
            {
                "project": project,
                "session": session,
                **_returned_context(request, session),
            },
        )
    return _render_page(request, project, assignment)


@crowd_frame
def enter(request, slug):
    """Public entry link for crowd platforms: /enter/<slug>/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...
    (Prolific) or MTurk's ExternalQuestion URL with workerId, hitId, assignmentId and turkSubmitTo. A study
    that takes no such arrival now answers with a page saying why and what to do on the platform."""
    project = access.entry_project(slug)
    turnaway = crowd.arrival_turnaway(project, request.GET)
    if turnaway is not None:
        return _turned_away(request, project, turnaway)
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
    if session.platform == CrowdSession.Platform.MTURK:
        request.frame_token = crowd.frame_token(session)
    follow_up = crowd.follow_up_due(session)
    return redirect(follow_up) if follow_up else _to(request, "work", slug)


def _turned_away(request, project, turnaway):
    request.mturk_frame = turnaway.platform == CrowdSession.Platform.MTURK
    return render(
        request, "annotation/turnaway.html", {"project": project, "turnaway": turnaway}, status=turnaway.status
    )


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


def _returned_context(request, session, screened_out: bool = False) -> dict:
    """What a crowd worker who stops without a code needs: the study's message, its code for leaving (the
    screen-out code for one who failed the qualification), the way back."""
    if session is None:
        return {}
    code = crowd.leaving_code(session.project, session.platform, screened_out)
    return {
        "returned_message": crowd.leaving_message(session.project, code),
        "returned_code": code,
        "platform_url": crowd.prolific_url(code) if code else "",
        "resume_token": crowd.resume_token(session),
        "frame_query": _frame_query(request),
    }


@crowd_frame
@login_required
def done(request, slug):
    """The end of a crowd session. POST finishes: the unanswered page goes back and the completion code is
    given once the exit condition is met. GET shows the code when earned (Prolific arrivals are sent on
    to Prolific with it, MTurk arrivals post the HIT), else the study's returned message."""
    project = access.project_for(request.user, slug)
    session = crowd.session_of(project, request.user)
    _note_platform(request, session)
    if session is None:
        raise Http404("no crowd session for this project")
    if request.method == "POST" and not session.completion_code:
        if not crowd.may_finish(session):
            messages.error(request, _quota_message(session))
            return _to(request, "work", slug)
        current = open_assignment(project, request.user)
        if current is not None:
            release_page(current.pk, request.user)
        crowd.complete(session)
    if not session.completion_code:
        return render(
            request,
            "annotation/no_work.html",
            {
                "project": project,
                "session": session,
                "stopped": True,
                **_returned_context(request, session),
            },
        )
    context = {
        "project": project,
        "session": session,
        "code": session.completion_code,
        "finished": True,
        "frame_query": _frame_query(request),
    }
    if session.platform == CrowdSession.Platform.PROLIFIC:
        context["platform_url"] = crowd.prolific_url(session.completion_code)
        context["follow_up"] = crowd.follow_up_due(session)  # no sending back to Prolific before it
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
        return _to(request, "work", slug)
    session = crowd.session_of(project, request.user)
    refusal = access.new_page_refusal(project)
    if refusal is not None:  # the test leads to new pages, which a paused study does not hand out
        turnaway = crowd.turnaway(project, session.platform, session) if session else None
        if turnaway is None:
            raise refusal
        return _turned_away(request, project, turnaway)
    items = list(test.items.all())
    context = {
        "project": project,
        "test": test,
        "items": items,
        "attempts_left": qualification.attempts_left(test, request.user),
        "frame_query": _frame_query(request),
        **task_context(project.task, test.options or project.options),
        "guidance": task_guidance(project),
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
            return _to(request, "work", slug)
        context.update(attempt=attempt, feedback=result, attempts_left=result["attempts_left"])
    if not context["attempts_left"]:  # a crowd worker who failed is told how to leave the study, not stranded
        context.update(_returned_context(request, session, screened_out=True))
    return render(request, "annotation/qualify.html", context)


def _score_text(result: dict) -> str:
    if result["score"] is None:
        return ""
    return f" with a score of {result['score']:.2f} (pass mark {result['pass_mark']:.2f})"


def _render_page(request, project, assignment, error=None, values=None, ticked=None, status=200):
    note_seen(assignment)  # a page in a browser keeps its items only while the browser shows signs of life
    claims = assignment.claims.select_related("item__example", "item__atom").order_by("position")
    return render_items(
        request,
        project,
        project.task.order_page([claim.item for claim in claims]),
        assignment,
        error=error,
        values=values,
        ticked=ticked,
        status=status,
    )


def render_items(
    request, project, items, assignment=None, error=None, values=None, ticked=None, status=200, mturk_preview=False
):
    """A worker's page of items; without an assignment it is a read-only preview (nothing can be sent)."""
    session = crowd.session_of(project, request.user)
    if assignment is not None:
        progress = worker_progress(project, request.user, crowd.quota(project) if session is not None else 0)
    else:  # the author's preview shows a crowd worker's first page; MTurk's HIT preview has no page yet
        progress = None if mturk_preview else WorkerProgress(1, 0, 0, crowd.quota(project))
    context = {
        "mturk_preview": mturk_preview,
        "project": project,
        "assignment": assignment,
        "items": items,
        "error": error,
        "values": values or {},
        # What a feature's panel under each item had ticked (the label-variation app's reasons), to show again.
        "ticked": ticked or {},
        "crowd": session is not None,
        # Finishing is offered only where it would give the code (never on a first page it would refuse).
        "may_finish": session is not None and assignment is not None and crowd.may_finish(session),
        "draft": drafts.draft_of(assignment) if assignment else {},
        "abandon_minutes": abandon_minutes(project),
        "frame_query": _frame_query(request),
        "progress": progress,
        **task_context(project.task, project.options),
        "guidance": task_guidance(project),
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
        if f"reasons_{item_id}" in post:  # the disagreement reasons ticked with the answer (checkboxes)
            answer["reasons"] = post.getlist(f"reasons_{item_id}")
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
            ticked = {int(k): v.get("reasons", []) for k, v in answers.items()}
            return _render_page(request, project, assignment, error=exc, values=values, ticked=ticked, status=400)
        messages.error(request, exc.message)
        return _to(request, "work", slug)
    if result.late:
        messages.warning(request, "That page was submitted after its time ran out; your answers were kept.")
    else:
        count = len(result.items)
        # Not "here is the next page": the next view may be the end of the study.
        messages.success(request, f"Saved {count} answer{pluralize(count)}.")
    return _to(request, "work", slug)


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
        return _to(request, "work", slug)
    # A crowd worker who stops lands on the study's end page (their code if earned, else the returned message).
    return _to(request, "done", slug) if crowd.session_of(project, request.user) else redirect("home")


def _page_state(assignment) -> dict:
    return {"expires_at": assignment.expires_at.isoformat(), "extended": assignment.extended}


def _own_page(request, slug, assignment_id) -> Assignment:
    """The worker's own page of this project; another's, or one of a project they may not see, is a 404."""
    project = access.project_for(request.user, slug)
    return get_object_or_404(Assignment, pk=assignment_id, project=project, worker=request.user)


def _refusal(exc: SubmissionError) -> JsonResponse:
    return JsonResponse({"field": exc.field, "error": exc.message}, status=exc.status)


@crowd_frame
@login_required
@require_POST
def save_draft(request, slug, assignment_id):
    """The page's unsent answers as JSON ({"answers": {item id: {value, reason, seconds, reasons}}}); also its heartbeat."""
    _own_page(request, slug, assignment_id)
    try:
        data = request_json.loads(request.body or b"null")
    except ValueError as error:
        return JsonResponse({"field": "body", "error": f"is not JSON this page reads: {error}"}, status=400)
    if not isinstance(data, dict) or "answers" not in data:
        return JsonResponse({"field": "answers", "error": "is missing"}, status=400)
    try:
        assignment = drafts.save_draft(assignment_id, request.user, data["answers"])
    except SubmissionError as exc:
        return _refusal(exc)
    return JsonResponse({"saved": True, **_page_state(assignment)})


@crowd_frame
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
