"""HTML views: thin wrappers over the services, shared with the API and the commands. Every project route
goes through access.project_for (404 when the user may not see the project, 403 when they may not act)."""
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Exists, OuterRef
from django.http import Http404, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.forms import ImportForm, project_form_class
from annotation.models import Assignment, CrowdSession, Item
from annotation.services import access, adjudication, crowd, exporters, linking, qualification, quality
from annotation.services.assignments import SubmissionError, claim_page, open_assignment, release_page, submit_page
from annotation.services.importers import ImportFileError, import_upload
from annotation.services.progress import project_progress
from annotation.services.projects import create_project
from annotation.tasktypes import TASK_TYPE_CHOICES
from common.schema import SettingError


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
        **_task_context(project.task, test.options or project.options),
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
    context = {
        "project": project,
        "assignment": assignment,
        "items": project.task.order_page([claim.item for claim in claims]),
        "error": error,
        "values": values or {},
        "crowd": _crowd_session(request, project) is not None,
        **_task_context(project.task, project.options),
    }
    return render(request, "annotation/work.html", context, status=status)


def _task_context(task, options) -> dict:
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


@login_required
def project_new(request):
    access.ensure_can_create_project(request.user)
    form_class = project_form_class(request.POST.get("task_type") or request.GET.get("task_type"))
    form = form_class(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        try:
            project = create_project(data.pop("slug"), data.pop("task_type"), request.user, **data)
        except SettingError as exc:
            for name, message in exc.errors.items():
                form.add_error(name if name in form.fields else None, message)
        else:
            messages.success(request, f"Project {project.slug} created as a draft. Import some data, then publish it.")
            return redirect("project_detail", slug=project.slug)
    chosen = form.fields["task_type"].initial  # the task type whose settings the form shows
    context = {
        "form": form,
        "chosen_label": dict(TASK_TYPE_CHOICES)[chosen],
        "other_task_types": [(name, label) for name, label in TASK_TYPE_CHOICES if name != chosen],
    }
    return render(request, "annotation/project_form.html", context, status=400 if form.errors else 200)


@login_required
def project_detail(request, slug):
    project = access.project_for(request.user, slug, "manage")
    form = ImportForm(formats=project.task.import_formats)
    if request.method == "POST":
        form = ImportForm(request.POST, request.FILES, formats=project.task.import_formats)
        if form.is_valid():
            fmt = form.cleaned_data["format"]
            try:
                report = import_upload(project, form.cleaned_data["file"], fmt, gold=form.cleaned_data["gold"])
            except (ImportFileError, ValueError) as exc:
                form.add_error("file", str(exc))
            else:
                created = f"{report.atoms} atoms" if fmt == "atoms" else f"{report.created} examples"
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
            "export_formats": project.task.export_formats_for(project.options),
            "validation": linking.validation_status(project),
            "figures": quality.worker_figures(project),
            "queue_size": adjudication.queue(project).count(),
        },
        status=400 if form.errors else 200,
    )


@login_required
def project_export(request, slug, fmt):
    project = access.project_for(request.user, slug, "export")
    try:
        chunks = exporters.export(project, fmt)
    except exporters.ExportError as exc:
        return HttpResponseBadRequest(str(exc), content_type="text/plain; charset=utf-8")
    response = StreamingHttpResponse(chunks, content_type=exporters.content_type(fmt))
    response["Content-Disposition"] = f'attachment; filename="{exporters.file_name(project, fmt)}"'
    return response


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
        messages.success(request, f"Sent {report.created} new pair{'s' if report.created != 1 else ''} to "
                                  f"{report.validation_project} ({report.already_sent} sent before).")
    return redirect("project_detail", slug=slug)


@login_required
def adjudication_queue(request, slug):
    project = access.project_for(request.user, slug, "manage")
    items = Paginator(adjudication.queue(project), 25).get_page(request.GET.get("page"))
    return render(request, "annotation/adjudication_queue.html", {"project": project, "items": items})


@login_required
def adjudication_item(request, slug, item_id):
    project = access.project_for(request.user, slug, "manage")
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
    task = project.task
    context = {
        "project": project,
        "item": item,
        "final_shown": task.display(item.final_value, project.options),
        "aggregate_shown": task.display(item.aggregate, project.options) if item.aggregate is not None else "unresolved",
        "annotations": adjudication.anonymised_annotations(item),
        "history": item.adjudications.select_related("author"),
        "error": error,
        **_task_context(task, project.options),
    }
    return render(request, "annotation/adjudication_item.html", context, status=400 if error else 200)


@login_required
def worker_figures(request, slug):
    """The per-worker table of the dashboard, as a fragment the live page reloads."""
    project = access.project_for(request.user, slug, "manage")
    return render(request, "annotation/_worker_figures.html", {"figures": quality.worker_figures(project)})
