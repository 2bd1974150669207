"""Importing a file in the browser: upload it, see its first rows, map its columns and labels, confirm (a large
file is imported in the background)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.views.decorators.http import require_POST

from annotation.services import access
from common.vocabulary import LabelError, label_mapping, label_set_names, to_label
from dataset_io.formats import importable
from dataset_io.forms import ImportConfirmForm, UploadForm
from dataset_io.services import background, uploads
from dataset_io.services.importers import (
    GENERIC_FIELDS,
    ImportFileError,
    count_lines,
    import_file,
    label_map_pairs,
    label_values,
    preview,
)


@login_required
@require_POST
def import_upload(request, slug):
    """Step 1: keep the uploaded file aside and show its first rows."""
    project = access.project_for(request.user, slug, "manage")
    form = UploadForm(request.POST, request.FILES, formats=importable(project.task, project.options))
    if not form.is_valid():
        messages.error(request, "Not imported: " + "; ".join(e for errors in form.errors.values() for e in errors))
        return redirect("project_detail", slug=slug)
    try:
        token = uploads.stage(project, form.cleaned_data["file"])
    except ImportFileError as exc:
        messages.error(request, f"Not imported: {exc.errors[0][2]}")
        return redirect("project_detail", slug=slug)
    preview_url = reverse("import_preview", kwargs={"slug": slug, "token": token})
    return redirect(f"{preview_url}?format={form.cleaned_data['format']}")


@login_required
def import_preview(request, slug, token):
    """Step 2: the first rows as a table, the format, the column mapping and what the rows become; confirm."""
    project = access.project_for(request.user, slug, "manage")
    path = uploads.staged(project, token)
    if path is None:
        messages.error(request, "That upload is gone (imported or discarded already): upload the file again.")
        return redirect("project_detail", slug=slug)
    if request.method == "POST" and "discard" in request.POST:
        uploads.discard(project, token)
        messages.info(request, "The upload was discarded.")
        return redirect("project_detail", slug=slug)
    offered = importable(project.task, project.options)
    fmt = request.POST.get("format") or request.GET.get("format") or offered[0]
    shown = preview(path, fmt)
    form = ImportConfirmForm(
        request.POST or None,
        formats=offered,
        columns=shown["columns"],
        purposes=project.task.import_purposes(),
        initial={"format": fmt},
    )
    errors = []
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            if count_lines(path) > background.IMPORT_JOB_LINES:
                job = background.start_import(
                    project,
                    path,
                    data["format"],
                    form.mapping(),
                    data["purpose"],
                    request.user,
                    label_map=form.label_pairs(),
                )
                uploads.discard(project, token)  # the job keeps its own copy
                messages.info(
                    request,
                    "A large file: it is imported in the background. Nothing is stored unless every row is good.",
                )
                return redirect("jobs:detail", job_id=job.pk)
            report = import_file(
                project, path, data["format"], form.mapping(), purpose=data["purpose"], label_map=form.label_pairs()
            )
        except ImportFileError as exc:
            errors = exc.errors
        except ValueError as exc:
            form.add_error(None, str(exc))
        else:
            uploads.discard(project, token)
            _report_import(request, data["format"], report)
            return redirect("project_detail", slug=slug)
    generic = fmt in ("jsonl", "csv")
    return render(
        request,
        "dataset_io/import_preview.html",
        {
            "project": project,
            "form": form,
            "preview": shown,
            "file_name": path.name,
            "errors": errors[:50],
            "more_errors": max(0, len(errors) - 50),
            "generic": generic,
            "mapping_fields": GENERIC_FIELDS,
            "label_values": _label_values(project, path, fmt, form) if generic else [],
        },
        status=400 if errors or form.errors else 200,
    )


def _label_values(project, path, fmt, form) -> list[tuple[str, str | None]]:
    """The label column's distinct values, each with the label it reads as (None: no label of the study), so
    an author sees what needs a mapping before importing."""
    column = (form["map_label"].value() or "label") if "map_label" in form.fields else "label"
    labels = (
        project.task.example_labels(project.options) if project.task.source_fields(project.options) is None else None
    )
    if not labels:
        return []
    mapping = {}
    try:
        mapping = label_mapping(label_map_pairs(form["label_map"].value() or ""), labels)
    except LabelError:
        pass  # the import itself names the bad pair
    names = label_set_names(labels)
    shown = []
    for value in label_values(path, fmt, column)[:50]:
        try:
            shown.append((value, names(to_label(value, labels, numbering=mapping))))
        except LabelError:
            shown.append((value, None))
    return shown


def _report_import(request, fmt, report) -> None:
    if report.qualification_items:
        count = report.qualification_items
        messages.success(request, f"Added {count} item{pluralize(count)} to the qualification test.")
        return
    created = (
        f"{report.atoms} atom{pluralize(report.atoms)}"
        if fmt == "atoms"
        else f"{report.created} example{pluralize(report.created)}"
    )
    messages.success(
        request,
        f"Imported {created} ({report.items} new item{pluralize(report.items)}); {report.skipped} skipped, "
        f"{report.already_present} already present.",
    )
    for note in report.notes:
        messages.warning(request, note)
