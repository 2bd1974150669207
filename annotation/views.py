"""HTML views: thin wrappers over the services, shared with the API and the commands."""
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.http import Http404, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.forms import ImportForm, ProjectForm
from annotation.models import Assignment, CrowdSession, Item, Project
from annotation.services import access, adjudication, crowd, exporters, qualification, quality
from annotation.services.assignments import SubmissionError, claim_page, open_assignment, release_page, submit_page
from annotation.services.importers import ImportFileError, import_stream, text_stream
from annotation.services.progress import project_progress
from annotation.services.projects import create_project
from annotation.tasktypes.defeasible_atom import EFFECT_LABELS
from annotation.tasktypes.atom_validity import CRITERIA
from annotation.tasktypes.nli_label import LABEL_NAMES


def home(request):
    user = request.user
    context = {"is_worker": False, "is_author": False}
    if user.is_authenticated:
        context["is_worker"] = access.has_role(user, access.WORKER)
        context["is_author"] = access.has_role(user, access.AUTHOR)
        if context["is_worker"]:
            has_work = Exists(Item.objects.filter(project=OuterRef("pk"), claimable=True))
            context["work_projects"] = [
                (project, project.has_work) for project in Project.objects.annotate(has_work=has_work).order_by("title")
            ]
        if context["is_author"]:
            managed = Project.objects.select_related("owner")
            if not access.is_admin(user):
                managed = managed.filter(owner=user)
            context["managed_projects"] = Paginator(managed, 25).get_page(request.GET.get("page"))
    return render(request, "home.html", context)


def _project(slug: str) -> Project:
    return get_object_or_404(Project, slug=slug)


@login_required
def work(request, slug):
    """Show the worker's current page of this project, claiming a new one when needed."""
    project = _project(slug)
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
    project = _project(slug)
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
    project = _project(slug)
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
    project = _project(slug)
    test = project.qualification
    if test is None or qualification.has_passed(test, request.user):
        return redirect("work", slug=slug)
    items = list(test.items.all())
    context = {
        "project": project,
        "test": test,
        "items": items,
        "attempts_left": qualification.attempts_left(test, request.user),
        **_task_context(project),
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
    items = [claim.item for claim in claims]
    if project.task_type == "unli_slider":
        # Pairs sharing a premise sit together: seeing them side by side calibrates the judgments.
        first_seen = {}
        for index, item in enumerate(items):
            first_seen.setdefault(item.example.premise, index)
        items.sort(key=lambda item: first_seen[item.example.premise])
    context = {
        "project": project,
        "assignment": assignment,
        "items": items,
        "error": error,
        "values": values or {},
        "crowd": _crowd_session(request, project) is not None,
        **_task_context(project),
    }
    return render(request, "annotation/work.html", context, status=status)


def _task_context(project) -> dict:
    return {
        "task_template": project.task.template,
        "effect_labels": sorted(EFFECT_LABELS.items()),
        "criteria": CRITERIA,
        "nli_labels": [(label, LABEL_NAMES.get(label, label)) for label in project.task.labels(project.options)]
        if project.task_type == "nli_label"
        else [],
    }


def answers_from_form(post, item_ids) -> dict:
    """Form fields value_<id>, reason_<id>, seconds_<id> -> the answers dict the service validates."""
    answers = {}
    for item_id in item_ids:
        answer = {"value": post.get(f"value_{item_id}", "")}
        if f"reason_{item_id}" in post:
            answer["reason"] = post[f"reason_{item_id}"]
        if post.get(f"seconds_{item_id}"):
            answer["seconds"] = post[f"seconds_{item_id}"]
        answers[str(item_id)] = answer
    return answers


@login_required
@require_POST
def submit(request, slug, assignment_id):
    project = _project(slug)
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
        messages.success(request, f"Saved {len(result.items)} answers. Here is the next page.")
    return redirect("work", slug=slug)


@login_required
@require_POST
def release(request, slug, assignment_id):
    project = _project(slug)
    try:
        release_page(assignment_id, request.user)
    except Assignment.DoesNotExist:
        raise Http404("no such page") from None
    messages.info(request, "The page was given back.")
    return redirect("home") if request.POST.get("stop") else redirect("work", slug=project.slug)


@login_required
def project_new(request):
    if not access.has_role(request.user, access.AUTHOR):
        raise PermissionDenied("only authors create projects")
    form = ProjectForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            project = create_project(
                data["slug"],
                data["task_type"],
                request.user,
                title=data["title"],
                items_per_page=data["items_per_page"],
                redundancy=data["redundancy"],
                instructions=data["instructions"],
            )
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Project {project.slug} created. Import some data to start.")
            return redirect("project_detail", slug=project.slug)
    return render(request, "annotation/project_form.html", {"form": form})


@login_required
def project_detail(request, slug):
    project = _project(slug)
    access.ensure_can_manage(request.user, project)
    form = ImportForm()
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES)
        if form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                report = import_stream(project, text_stream(upload.read()), form.cleaned_data["format"])
            except (ImportFileError, UnicodeDecodeError, ValueError) as exc:
                form.add_error("file", str(exc))
            else:
                created = f"{report.atoms} atoms" if form.cleaned_data["format"] == "atoms" else f"{report.created} examples"
                messages.success(
                    request,
                    f"Imported {created} ({report.items} new items); "
                    f"{report.skipped} skipped, {report.already_present} already present.",
                )
                return redirect("project_detail", slug=slug)
    items = Paginator(project.items.select_related("example", "atom").order_by("id"), 25).get_page(request.GET.get("page"))
    return render(
        request,
        "annotation/project_detail.html",
        {
            "project": project,
            "progress": project_progress(project),
            "form": form,
            "items": items,
            "export_formats": exporters.FORMATS,
            "figures": quality.worker_figures(project),
            "queue_size": adjudication.queue(project).count(),
        },
        status=400 if form.errors else 200,
    )


@login_required
def project_export(request, slug, fmt):
    project = _project(slug)
    access.ensure_can_manage(request.user, project)
    if fmt not in exporters.FORMATS:
        raise Http404("unknown export format")
    response = StreamingHttpResponse(exporters.export(project, fmt), content_type=exporters.content_type(fmt))
    response["Content-Disposition"] = f'attachment; filename="{exporters.file_name(project, fmt)}"'
    return response


@login_required
def adjudication_queue(request, slug):
    project = _project(slug)
    access.ensure_can_manage(request.user, project)
    items = Paginator(adjudication.queue(project), 25).get_page(request.GET.get("page"))
    return render(request, "annotation/adjudication_queue.html", {"project": project, "items": items})


@login_required
def adjudication_item(request, slug, item_id):
    project = _project(slug)
    access.ensure_can_manage(request.user, project)
    item = get_object_or_404(Item.objects.select_related("example", "atom"), pk=item_id, project=project)
    error = None
    if request.method == "POST":
        if request.POST.get("action") in ("flag", "unflag"):
            adjudication.flag(item, request.user, request.POST["action"] == "flag")
            return redirect("adjudication_item", slug=slug, item_id=item.id)
        try:
            adjudication.adjudicate(item.id, request.user, request.POST.get("value", ""), request.POST.get("note", ""))
        except SubmissionError as exc:
            error = exc
        else:
            messages.success(request, f"Item {item.id} settled.")
            following = adjudication.queue(project).filter(id__gt=item.id).first()
            if following is not None:
                return redirect("adjudication_item", slug=slug, item_id=following.id)
            return redirect("adjudication_queue", slug=slug)
    context = {
        "project": project,
        "item": item,
        "annotations": adjudication.anonymised_annotations(item),
        "history": item.adjudications.select_related("author"),
        "error": error,
        **_task_context(project),
    }
    return render(request, "annotation/adjudication_item.html", context, status=400 if error else 200)


@login_required
def worker_figures(request, slug):
    """The per-worker table of the dashboard, as a fragment the live page reloads."""
    project = _project(slug)
    access.ensure_can_manage(request.user, project)
    return render(request, "annotation/_worker_figures.html", {"figures": quality.worker_figures(project)})
