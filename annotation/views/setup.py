"""Creating and configuring a study in the browser: its settings (one form from the settings schema), its
lifecycle, who may work on it, its qualification test, a preview of the worker page, and clones (imports are
the dataset app's: dataset_io/views/imports.py)."""

import json
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import Group
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.views.decorators.http import require_POST

from annotation.forms import project_form_class, project_settings_initial
from annotation.models import Item
from annotation.services import access, instrument, items, projects, qualification
from annotation.services.progress import project_progress
from annotation.services.redundancy import open_items
from annotation.views.work import render_items, sample_items
from common.schema import SettingError

PAGE_SIZE = 25


def _form_errors(form, error: SettingError) -> None:
    for name, message in error.errors.items():
        form.add_error(name if name in form.fields else None, message)


@login_required
def project_new(request):
    access.ensure_can_create_project(request.user)
    form_class = project_form_class(request.POST.get("task_type") or request.GET.get("task_type"))
    # A change of task type reloads the form with what was typed so far in the query string (reload_on_change.js).
    typed = {name: value for name, value in request.GET.items() if name in form_class.base_fields}
    form = form_class(request.POST if request.method == "POST" else None, initial=typed)
    if request.method == "POST" and form.is_valid():
        data = dict(form.cleaned_data)
        try:
            project = projects.create_project(data.pop("slug"), data.pop("task_type"), request.user, **data)
        except SettingError as exc:
            _form_errors(form, exc)
        else:
            if project.status == project.Status.DRAFT:
                messages.success(
                    request, f"Study {project.slug} created as a draft: import its items, then publish it."
                )
            else:
                messages.success(request, f"Study {project.slug} created ({project.status}).")
            return redirect("project_detail", slug=project.slug)
    return render(
        request, "annotation/project_form.html", {"form": form, "new": True}, status=400 if form.errors else 200
    )


@login_required
def project_settings(request, slug):
    """Every setting of the study in one form; the worker-page preview beside it shows the saved settings."""
    project = access.project_for(request.user, slug, "manage")
    form_class = project_form_class(project.task_type, editing=True)
    form = form_class(request.POST if request.method == "POST" else None, initial=project_settings_initial(project))
    still_open = open_items(project).count()
    if still_open and "redundancy" in form.fields:  # what saving a new redundancy will do, said before it is saved
        form.fields["redundancy"].help_text += (
            f" A change applies to the {still_open} item{pluralize(still_open)} still open: each is to get the "
            "new number (those with as many answers already are settled at once)."
        )
    if request.method == "POST" and form.is_valid():
        # Fields the request left out keep their values (a browser omits only unticked boxes: those are False).
        sent = {
            name
            for name in form.changed_data
            if not form.fields[name].widget.value_omitted_from_data(request.POST, request.FILES, name)
        }
        changes = {name: form.cleaned_data[name] for name in sent}
        try:
            projects.update_project(project, changed_by=request.user, **changes)
        except SettingError as exc:
            _form_errors(form, exc)
        else:
            messages.success(request, "Settings saved.")
            return redirect("project_settings", slug=slug)
    versions = instrument.versions(project)
    for version in versions:
        version["content_json"] = json.dumps(version["content"], ensure_ascii=False, indent=1)
    return render(
        request,
        "annotation/project_form.html",
        {
            "form": form,
            "project": project,
            "groups": Group.objects.order_by("name"),
            "members": project.members.order_by("username"),
            "member_groups": project.member_groups.order_by("name"),
            "instrument_versions": versions,
        },
        status=400 if form.errors else 200,
    )


@login_required
@require_POST
def project_status(request, slug):
    project = access.project_for(request.user, slug, "manage")
    if request.POST.get("status") == project.Status.CLOSED and not request.POST.get("confirm"):
        # Closing stops every worker at once: the author says so twice.
        return render(
            request, "annotation/confirm_close.html", {"project": project, "progress": project_progress(project)}
        )
    try:
        projects.set_status(
            project,
            request.POST.get("status", ""),
            changed_by=request.user,
            for_good=bool(request.POST.get("for_good")),
        )
    except SettingError as exc:
        messages.error(request, "; ".join(exc.errors.values()))
    else:
        messages.success(request, f"The study is {project.status} now.")
    return redirect(request.POST.get("next") or "project_detail", slug=slug)


@login_required
@require_POST
def project_members(request, slug):
    """Admit users by name or e-mail, remove one, or set the groups whose members may work on it."""
    project = access.project_for(request.user, slug, "manage")
    try:
        if "add" in request.POST:
            added = projects.add_members(project, request.POST.get("names", ""))
            messages.success(request, f"{len(added)} member{pluralize(len(added))} admitted.")
        elif "remove" in request.POST:
            project.members.remove(*project.members.filter(pk=request.POST.get("remove") or 0))
        elif "groups" in request.POST:
            project.member_groups.set(Group.objects.filter(pk__in=request.POST.getlist("group")))
            messages.success(request, "Member groups saved.")
    except SettingError as exc:
        messages.error(request, "; ".join(exc.errors.values()))
    return redirect("project_settings", slug=slug)


@login_required
@require_POST
def project_clone(request, slug):
    project = access.project_for(request.user, slug, "manage")
    access.ensure_can_create_project(request.user)
    try:
        clone = projects.clone_project(
            project, request.POST.get("slug", "").strip(), request.user, with_items=bool(request.POST.get("with_items"))
        )
    except (SettingError, ValueError) as exc:
        messages.error(request, f"Not cloned: {exc}")
        return redirect("project_settings", slug=slug)
    messages.success(request, f"Cloned into the draft study {clone.slug}.")
    return redirect("project_settings", slug=clone.slug)


@login_required
def project_preview(request, slug):
    """The worker page as a worker will see it, with the study's first items; nothing can be submitted."""
    project = access.project_for(request.user, slug, "manage")
    return render_items(request, project, sample_items(project))


@login_required
def project_qualification(request, slug):
    """The qualification test: items copied from the study's data with their reference answers (found by text,
    filters and reference range, with the test's balance across the ranges), and its rules."""
    project = access.project_for(request.user, slug, "manage")
    if request.method == "POST":
        try:
            if "rules" in request.POST:
                qualification.update_rules(
                    project,
                    {
                        name: request.POST.get(name)
                        for name in qualification.RULES.defaults()
                        if name in request.POST or name == "show_feedback"
                    },
                )
                messages.success(request, "Rules saved.")
            elif "copy" in request.POST:
                item = project.items.select_related("example", "atom").get(pk=request.POST["copy"])
                qualification.copy_item(
                    project, item, request.POST.get("reference", ""), bool(request.POST.get("easy"))
                )
                messages.success(request, f"Item {item.pk} copied into the test.")
            elif "remove" in request.POST:
                qualification.remove_item(project, int(request.POST["remove"]))
        except (qualification.QualificationError, SettingError, Item.DoesNotExist, ValueError) as exc:
            messages.error(request, f"Not saved: {exc}")
        return redirect(f"{request.path}?{request.POST.get('query', '')}")
    test = project.qualification
    query = {"q": request.GET.get("q", ""), "show": request.GET.get("show", ""), "range": request.GET.get("range", "")}
    found = qualification.candidates(project, query["q"], query["show"], query["range"])
    return render(
        request,
        "annotation/qualification_setup.html",
        {
            "project": project,
            "test": test,
            "test_items": list(test.items.all()) if test else [],
            "rules": qualification.RULES,
            "rule_values": {
                **qualification.RULES.defaults(),
                **(
                    {name: getattr(test, name) for name in qualification.RULES.defaults() if hasattr(test, name)}
                    if test
                    else {}
                ),
                "show_feedback": bool(test and test.options.get("show_feedback")),
            },
            "candidates": Paginator(found["rows"], PAGE_SIZE).get_page(request.GET.get("page")),
            "bins": found["bins"],
            "read": found["read"],
            "more": found["more"],
            "query": query,
            "query_string": urlencode(query) + "&",
            "filters": [(key, name) for key, name in items.FILTER_NAMES.items() if key != "gold"],
            "attempts": test.attempts.count() if test else 0,
        },
    )
