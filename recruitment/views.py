"""A study's Prolific page (link, study, settle table, bonuses, groups) and Prolific's webhook. Thin: each
view asks annotation.services.access who may act, calls one service, and goes back with a message."""

import math
import re
import secrets

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation.services import access
from annotation.services.crowd.pay import suggest_reward
from recruitment import prescreening
from recruitment.models import Bonus, KeepOut, ProlificLink
from recruitment.prolific import REJECTION_CATEGORIES, REJECTION_MESSAGE_MIN, ProlificError
from recruitment.services import bonuses, costs, groups, settle, studies, webhooks
from recruitment.services.webhooks import WebhookRefused

NUMBER_FIELDS = (
    "places",
    "reward_cents",
    "estimated_minutes",
    "screen_out_reward_cents",
    "screen_out_slots",
    "minimum_approval_rate",
)
TEXT_FIELDS = ("name", "description", "currency", "workspace_id", "keep_out")
WHOLE_NUMBER = re.compile(r"[0-9]{1,18}")  # fits any integer column
WEBHOOK_BODY_LIMIT = 64 * 1024  # a submission event is a few hundred bytes


def _site(request) -> str:
    return request.build_absolute_uri("/").rstrip("/")


@login_required
def prolific_page(request, slug):
    return _page(request, access.project_for(request.user, slug, "manage"))


def _page(request, project, status: int = 200):
    link = studies.link_of(project)
    rows = settle.table(link) if link else []
    suggestion, suggestion_error = None, ""
    if request.GET.get("hourly_rate"):
        try:
            suggestion = suggest_reward(project, request.GET["hourly_rate"], link.currency if link else "GBP")
        except ValueError as error:
            suggestion_error = str(error)
    drift, drift_error = [], ""
    if link and link.prolific_study_id:
        try:
            drift = studies.drift(link)
        except (studies.RecruitmentError, ProlificError) as error:
            drift_error = str(error)
    cost, paid, cost_error = None, None, ""
    if link:
        try:
            cost, paid = costs.study_cost(link), costs.paid_cost(link)
        except ValueError as error:  # a rate in settings that is not a fraction
            cost_error = str(error)
    context = {
        "cost": cost,
        "paid": paid,
        "keep_out_choices": KeepOut.choices,
        "cost_error": cost_error,
        "drift": drift,
        "drift_error": drift_error,
        "suggestion": suggestion,
        "suggestion_error": suggestion_error,
        "project": project,
        "link": link,
        "entry_url": studies.entry_url(project, _site(request)),
        "webhook_url": request.build_absolute_uri(reverse("recruitment:prolific_webhook")),
        "rows": rows,
        "mismatches": settle.mismatches(rows),
        "bonuses": Bonus.objects.filter(project=project),
        "groups": groups.groups_for(project),
        "own_groups": project.participant_groups.all(),
        "rejection_categories": REJECTION_CATEGORIES,
        "rejection_minimum": REJECTION_MESSAGE_MIN,
        "bonus_key": secrets.token_hex(8),  # one key a form: submitting it twice plans one bonus
        "states": ProlificLink.State,
        "place_and_language": [
            (field, label, ", ".join(getattr(link, field)) if link else "", prescreening.CHOICES[field])
            for field, (_, label) in prescreening.FILTERS.items()
        ],
    }
    return render(request, "recruitment/prolific.html", context, status=status)


def _acted(request, slug, action) -> object:
    """Run `action(link)` for the study's manager; a refusal (ours or Prolific's) comes back as a message."""
    project = access.project_for(request.user, slug, "manage")
    link = studies.link_of(project)
    try:
        if link is None:
            raise studies.RecruitmentError("link the study to Prolific first (its API token)")
        done = action(link)
    except (studies.RecruitmentError, ProlificError) as error:
        messages.error(request, str(error))
    else:
        messages.success(request, done)
    return redirect("recruitment:prolific", slug=slug)


@login_required
@require_POST
def save_link(request, slug):
    project = access.project_for(request.user, slug, "manage")
    fields = {name: request.POST[name].strip() for name in TEXT_FIELDS if name in request.POST}
    try:
        for name in NUMBER_FIELDS:
            if request.POST.get(name, "").strip():
                value = request.POST[name].strip()
                # ASCII digits, few enough for int() to be cheap; the range is the service's check.
                if not WHOLE_NUMBER.fullmatch(value):
                    raise studies.RecruitmentError(f"{name}: a whole number (got {value[:20]!r})")
                fields[name] = int(value)
        if "estimated_minutes" in request.POST:
            fields["auto_approve"] = request.POST.get("auto_approve") == "1"
        if "currency" in fields:
            fields["currency"] = fields["currency"].upper()
        if "blocked_studies" in request.POST:
            fields["blocked_studies"] = request.POST["blocked_studies"].split()
        for name in prescreening.FILTERS:
            if name in request.POST:
                fields[name] = prescreening.parse(name, request.POST[name])
        studies.save_link(
            project,
            request.user,
            token=request.POST.get("token", ""),
            webhook_secret=request.POST.get("webhook_secret", ""),
            **fields,
        )
    except (studies.RecruitmentError, prescreening.PrescreeningError) as error:
        # A form error: the page again with the reason, nothing saved and nothing sent to Prolific.
        messages.error(request, str(error))
        return _page(request, project, status=400)
    else:
        link = studies.link_of(project)
        sent = " and sent to the Prolific study" if link and link.prolific_study_id else ""
        messages.success(request, f"Saved{sent}.")
    return redirect("recruitment:prolific", slug=slug)


@login_required
@require_POST
def study_action(request, slug):
    action = request.POST.get("action", "")
    confirm_low_pay = request.POST.get("confirm_low_pay") == "1"

    def run(link):
        if action == "create":
            studies.create_draft(link, _site(request), request.user, confirm_low_pay=confirm_low_pay)
            return f"Created on Prolific as a draft ({link.prolific_study_id})."
        if action == "fix":
            return (
                "Both sides brought together: "
                + ("; ".join(studies.fix_drift(link, request.user)) or "nothing to do")
                + "."
            )
        if action == "stop" and request.POST.get("confirm") != "1":
            raise studies.RecruitmentError(
                "Stop ends the Prolific study for good (it cannot be started again): tick the box next to Stop to confirm."
            )
        studies.transition(link, action, request.user, confirm_low_pay=confirm_low_pay)
        if action == "stop":
            return "Stopped for good on Prolific: the study is closed here and cannot be reopened; clone it for a new wave."
        return f"Prolific: {action} done; the study is {link.project.status} here."

    return _acted(request, slug, run)


@login_required
@require_POST
def pull(request, slug):
    return _acted(request, slug, lambda link: f"{settle.pull(link)} submissions read from Prolific.")


@login_required
@require_POST
def decide(request, slug):
    """Approve the ticked submissions, or reject, screen out or ask for the return of one."""
    decision = request.POST.get("decision", "")
    chosen = request.POST.getlist("submission")

    def run(link):
        if decision == "approve":
            return f"{settle.approve(link, chosen, request.user)} approved."
        if len(chosen) != 1:
            raise studies.RecruitmentError("choose one submission for this")
        if decision == "reject":
            settle.reject(
                link, chosen[0], request.POST.get("category", ""), request.POST.get("message", ""), request.user
            )
        elif decision == "screen_out":
            settle.screen_out(link, chosen[0], request.user)
        elif decision == "return":
            settle.request_return(link, chosen[0], request.POST.get("reason", ""), request.user)
        else:
            raise studies.RecruitmentError(f"unknown decision {decision!r}")
        return f"{decision.replace('_', ' ')}: done for {chosen[0]}."

    return _acted(request, slug, run)


def _fraction(value: str, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not 0 <= number <= 1:  # NaN too
        raise studies.RecruitmentError(f"{name}: a number between 0 and 1 (got {value[:20]!r})")
    return number


@login_required
@require_POST
def plan_bonuses(request, slug):
    rule = request.POST.get("rule", "")

    def run(link):
        if rule == "gold":
            minimum = _fraction(request.POST.get("minimum", ""), "minimum accuracy")
            planned = bonuses.plan_for_gold(link, minimum, request.POST.get("amount", ""), request.user)
        elif rule == "page":
            planned = bonuses.plan_per_page(link, request.POST.get("amount", ""), request.user)
        elif rule == "manual":
            planned = bonuses.plan_manual(
                link,
                request.POST.get("participant", "").strip(),
                request.POST.get("amount", ""),
                request.POST.get("reason", ""),
                request.user,
                key=request.POST.get("key", ""),
                confirm_duplicate=request.POST.get("again") == "1",
                confirm_set_aside=request.POST.get("set_aside") == "1",
            )
        else:
            raise studies.RecruitmentError(f"unknown rule {rule!r}")
        return f"{len(planned)} bonus(es) planned; none is paid until you pay the ledger."

    return _acted(request, slug, run)


@login_required
@require_POST
def pay_bonuses(request, slug):
    def run(link):
        if request.POST.get("release"):
            ids = [int(value) for value in request.POST.getlist("bonus") if WHOLE_NUMBER.fullmatch(value)]
            return f"{bonuses.release_unconfirmed(link, ids, request.user)} bonus(es) will be paid on the next run."
        report = bonuses.pay(link, request.user)
        return (
            f"Paid {len(report.paid)}, confirmed {len(report.confirmed)}, failed {len(report.failed)}, "
            f"sent but not confirmed {len(report.unconfirmed)}."
        )

    return _acted(request, slug, run)


@login_required
@require_POST
def build_group(request, slug):
    def run(link):
        minimum = _fraction(request.POST.get("minimum", ""), "minimum accuracy")
        group = groups.build_group(link, request.POST.get("name", ""), minimum, request.user)
        return f"Group {group.name} holds {len(group.participant_ids)} participant(s) on Prolific."

    return _acted(request, slug, run)


@login_required
@require_POST
def use_group(request, slug):
    def run(link):
        chosen = request.POST.get("group", "")
        group = groups.groups_for(link.project).filter(pk=chosen).first() if WHOLE_NUMBER.fullmatch(chosen) else None
        if group is None:
            raise studies.RecruitmentError("group: choose one of your participant groups")
        groups.use_group(link, group, request.POST.get("mode", ""), request.user)
        return f"Group {group.name}: {request.POST.get('mode')} in this study's filters."

    return _acted(request, slug, run)


@login_required
@require_POST
def hooks(request, slug):
    """Subscribe the workspace's submission status events to this app's webhook, or remove the subscription."""
    operation = request.POST.get("operation", "")

    def run(link):
        if operation == "subscribe":
            target = request.build_absolute_uri(reverse("recruitment:prolific_webhook"))
            webhooks.subscribe(link, target, request.user)
            return f"Subscribed to submission events ({link.hook_subscription_id}); Prolific sends them to {target}."
        if operation == "unsubscribe":
            webhooks.unsubscribe(link, request.user)
            return "Subscription removed: Prolific sends no more submission events here."
        raise studies.RecruitmentError(f"unknown operation {operation!r}")

    return _acted(request, slug, run)


@csrf_exempt  # Prolific signs the request instead (webhooks.receive checks the signature and its age)
@require_POST
def webhook(request):
    if len(request.body) > WEBHOOK_BODY_LIMIT:
        return HttpResponse("the body is larger than any Prolific event", status=413)
    try:
        event = webhooks.receive(
            request.body,
            request.headers.get("X-Prolific-Request-Signature", ""),
            request.headers.get("X-Prolific-Request-Timestamp", ""),
            event_id=request.headers.get("X-Event-ID", ""),
            sent_at=request.headers.get("X-Timestamp", ""),
        )
    except WebhookRefused as refused:
        return HttpResponse(str(refused), status=refused.status, content_type="text/plain")
    if event is None:
        return JsonResponse({"taken": False})
    return JsonResponse({"taken": True, "applied": event.applied})
