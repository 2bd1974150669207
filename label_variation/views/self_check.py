"""The authors' self-check: a worker judges their own label-explanation pairs of a study (VariErr's round 2),
a page at a time, by keyboard like any work page (annotate.js: y / n, Enter to review and send)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize

from annotation.services import access
from common.vocabulary import NLI
from label_variation.services import self_judgments

PAGE = 10  # pairs judged on one page
FIELD = "judgment_"


@login_required
def own_explanations(request, slug):
    """GET: the worker's pairs not judged yet (a page of them) with Makes sense / Does not; POST: store them."""
    project = access.project_for(request.user, slug, "submit")
    if not self_judgments.has_self_check(project):
        raise Http404("this study has no validation round for its explanations")
    error, values = None, {}
    if request.method == "POST":
        values = {name.removeprefix(FIELD): value for name, value in request.POST.items() if name.startswith(FIELD)}
        try:
            stored = self_judgments.record_self_judgments(project, request.user, values)
        except self_judgments.SelfJudgmentError as exc:
            error = exc
        else:
            messages.success(request, f"{stored} judgment{pluralize(stored)} of your explanations saved. Thank you!")
            return redirect("own_explanations", slug=slug)
    validation = project.validation_project
    pending = self_judgments.pending_pairs(project, request.user, limit=PAGE + 1)
    judged = self_judgments.judged_count(project, request.user)
    return render(
        request,
        "label_variation/own_explanations.html",
        {
            "project": project,
            "pairs": pending[:PAGE],
            "more": len(pending) > PAGE,
            "judged": judged,
            "choices": validation.task.choices(validation.options),
            "label_names": dict(NLI.names),
            "values": {int(key): value for key, value in values.items() if key.isdigit()},
            "error": error,
        },
        status=400 if error else 200,
    )


def self_check_link(project, worker) -> dict:
    """What a study's no-work and done pages show of the self-check: {"self_check_waiting": the worker's
    pairs still to judge} where the study has a self-check and the worker wrote pairs; else nothing."""
    if not worker.is_authenticated or not self_judgments.has_self_check(project):
        return {}
    waiting = self_judgments.pending_count(project, worker)
    return {"self_check_waiting": waiting} if waiting else {}
