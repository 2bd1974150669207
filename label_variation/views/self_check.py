"""The authors' self-check: a worker judges their own label-explanation pairs of a study (VariErr's round 2),
a page at a time, by keyboard like any work page (annotate.js: y / n, Enter to review and send)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import redirect, render
from django.template.defaultfilters import pluralize
from django.urls import reverse
from django.utils.http import urlencode

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
            return redirect(request.get_full_path())  # keeps ?from=, the way back
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
            "back_to": _came_from(project, request.GET.get(CAME_FROM, "")),
        },
        status=400 if error else 200,
    )


CAME_FROM = "from"  # the validation study whose end page led here: the page's way back


def _came_from(project, slug: str):
    """The study the page leads back to: the validation study named by ?from=, else the study itself."""
    validation = project.validation_project
    return validation if validation is not None and slug == validation.slug else project


def self_check_address(study, came_from) -> str:
    """The self-check page of `study`, leading back to `came_from`'s pages when that is its validation study."""
    address = reverse("own_explanations", args=[study.slug])
    return address if came_from == study else f"{address}?{urlencode({CAME_FROM: came_from.slug})}"


def self_check_links(project, worker) -> dict | None:
    """What a study's no-work, stopped and done pages show of the self-checks due from this worker (the
    study's own, and those of the studies whose pairs it validates): {"self_checks": [(address, study,
    pairs still to judge)]}, or None when none is due."""
    due = self_judgments.studies_to_self_check(project, worker)
    if not due:
        return None
    return {"self_checks": [(self_check_address(study, project), study, waiting) for study, waiting in due]}


def self_check_due(project, worker) -> str | None:
    """The follow-up this worker owes from `project`'s end page (extensions.add_follow_up): the first
    self-check due, or None."""
    due = self_judgments.studies_to_self_check(project, worker)
    return self_check_address(due[0][0], project) if due else None
