"""Tagging an item's disagreement reasons from the adjudication item page (htmx swaps the section)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.models import Item
from annotation.services import access
from label_variation.services import reasons


def reasons_context(item: Item, user, error: reasons.ReasonError | None = None, saved: bool = False) -> dict:
    """What label_variation/templates/label_variation/_reasons.html needs: the item's tags, the taxonomy, the user's own last
    choice, and why they may not tag (None when they may)."""
    try:
        reasons.tagging_role(user, item)
        refusal = None
    except PermissionDenied as denied:
        refusal = str(denied)
    shown = reasons.item_reasons(item, user)
    mine = [
        tag for entry in shown["rounds"] for tag in entry["tags"] if tag["mine"] and tag["role"] != "reconciliation"
    ]
    return {
        "item": item,
        "project": item.project,
        "reasons": shown,
        "taxonomy": reasons.taxonomy(item.project),
        "mine": mine[-1]["reasons"] if mine else [],
        "my_round": next(
            (entry["round"] for entry in reversed(shown["rounds"]) if any(tag["mine"] for tag in entry["tags"])), 1
        ),
        "rounds": reasons.ROUNDS,
        "needs_reconciliation": any(entry["needs_reconciliation"] for entry in shown["rounds"]),
        "refusal": refusal,
        "reason_error": error,
        "saved": saved,
    }


@login_required
@require_POST
def tag_reasons(request, slug, item_id):
    project = access.project_for(request.user, slug, "manage")
    item = get_object_or_404(Item.objects.select_related("example", "project"), pk=item_id, project=project)
    error = None
    try:
        reasons.tag_item(
            item,
            request.user,
            request.POST.getlist("reasons"),
            request.POST.get("round", 1),
            request.POST.get("note", ""),
            reconcile=request.POST.get("action") == "reconcile",
        )
    except reasons.ReasonError as exc:
        error = exc
    if not request.htmx:  # without scripts: back to the item page, with what happened
        if error is None:
            messages.success(request, "Reasons saved.")
        else:
            messages.error(request, f"Reasons not saved: {error.field} — {error.message}")
        return redirect("adjudication_item", slug=slug, item_id=item.id)
    section = reasons_context(item, request.user, error=error, saved=error is None)
    return render(request, "label_variation/_reasons.html", {"section": section}, status=400 if error else 200)
