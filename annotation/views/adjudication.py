"""Adjudication: the queue of items the redundancy policy could not settle, and one item's page."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.shortcuts import get_object_or_404, redirect, render

from annotation.models import Item
from annotation.services import access
from annotation.services.analysis import adjudication
from annotation.services.answers import SubmissionError
from annotation.views.work import task_context


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
        "aggregate_shown": task.display(item.aggregate, project.options)
        if item.aggregate is not None
        else "unresolved",
        "annotations": adjudication.anonymised_annotations(item),
        "history": item.adjudications.select_related("author"),
        "error": error,
        **task_context(task, project.options),
    }
    return render(request, "annotation/adjudication_item.html", context, status=400 if error else 200)
