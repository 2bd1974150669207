"""The bonuses ledger. A bonus is a row (participant, amount, reason, idempotency key) before any call to
Prolific; paying reads the ledger first, so a retry after a timeout or a crash pays each bonus once:

    planned --set-up call--> set_up (Prolific's bulk id stored) --row marked--> paying --pay call--> paid

Concurrent runs (two browser tabs, a double click, the command beside the page) pay nothing twice: a run
sets up only the planned rows it locked (SELECT ... FOR UPDATE SKIP LOCKED, held across the set-up call, which
moves no money), records the bulk id only when every row of that set-up is still planned, and sends a bulk's
pay call only after moving all of that bulk's rows set_up -> paying in one conditional UPDATE that one run wins.

Prolific's pay call is not idempotent, so a row left `paying` (the process died or the call timed out
after it was sent) is never paid again automatically: the next run looks for the bonus on the participant's
submission and marks it paid when Prolific shows it; otherwise it stays "pay sent, not confirmed" until the
author has checked on Prolific and releases it (`release_unconfirmed`, a whole bulk at a time: one pay call
pays every line of its set-up). A crash before the bulk id is stored leaves the row planned: the set-up
Prolific made then is never paid, and the next run sets up again."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from django.db import IntegrityError, transaction

from annotation.models import AuditEntry
from annotation.services import audit
from recruitment.models import Bonus, ProlificLink
from recruitment.prolific import ProlificClient, ProlificError, ProlificTimeout
from recruitment.services import settle
from recruitment.services.studies import RecruitmentError, client_for

KEY_MAX = 64  # a form's one-time key (the page makes 16 hex digits)
MAX_BONUS = Decimal("100.00")  # one bonus above this is a typo more often than not

PROLIFIC = AuditEntry.Action.PROLIFIC


@dataclass
class PayReport:
    paid: list[str] = field(default_factory=list)  # idempotency keys
    confirmed: list[str] = field(default_factory=list)  # left paying before, now seen on Prolific
    unconfirmed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def _amount(value) -> Decimal:
    try:
        amount = Decimal(str(value)).quantize(Decimal("0.01"))
    except (InvalidOperation, ValueError):
        raise RecruitmentError(f"amount: {value!r} is not a number") from None
    if not amount.is_finite() or not Decimal("0.01") <= amount <= MAX_BONUS:  # NaN cannot be compared
        raise RecruitmentError(f"amount: between 0.01 and {MAX_BONUS} (got {amount})")
    return amount


def _plan(link: ProlificLink, participant_id: str, amount: Decimal, reason: str, key: str) -> Bonus | None:
    """One ledger row, or None when a bonus with this key is already there (planning twice adds nothing)."""
    full_key = f"{link.project_id}:{key}"
    if Bonus.objects.filter(idempotency_key=full_key).exists():
        return None
    try:
        with transaction.atomic():
            return Bonus.objects.create(
                project=link.project,
                participant_id=participant_id,
                amount=amount,
                currency=link.currency,
                reason=reason,
                idempotency_key=full_key,
            )
    except IntegrityError:  # planned at the same moment elsewhere
        return None


def _paid_rows(link: ProlificLink) -> list[settle.Row]:
    """Participants who can get a bonus: they have a submission on Prolific (pulled) and worked here."""
    return [row for row in settle.table(link) if row.submission is not None and row.arrived is not None]


def _rewarded_rows(link: ProlificLink) -> list[settle.Row]:
    """Those a rule rewards: not a participant rejected on Prolific (their answers are excluded), nor one who
    returned the study or was asked to (settle.set_aside); an author may still plan one a bonus by hand."""
    aside = settle.set_aside(link)
    return [row for row in _paid_rows(link) if row.participant_id not in aside]


def plan_for_gold(link: ProlificLink, minimum_accuracy: float, amount, by) -> list[Bonus]:
    """A bonus for each participant whose gold accuracy is at least `minimum_accuracy`."""
    amount = _amount(amount)
    if not 0 <= minimum_accuracy <= 1:
        raise RecruitmentError("minimum accuracy: between 0 and 1")
    reason = f"gold accuracy at least {minimum_accuracy:g}"
    planned = [
        _plan(link, row.participant_id, amount, reason, f"gold>={minimum_accuracy:g}:{row.participant_id}")
        for row in _rewarded_rows(link)
        if row.gold_accuracy is not None and row.gold_accuracy >= minimum_accuracy
    ]
    return _recorded(link, [bonus for bonus in planned if bonus], by, rule="gold")


def plan_per_page(link: ProlificLink, amount_per_page, by) -> list[Bonus]:
    """A bonus of `amount_per_page` times the pages each participant submitted (planned once per participant)."""
    per_page = _amount(amount_per_page)
    planned = [
        _plan(
            link, row.participant_id, _amount(per_page * row.pages), f"{row.pages} pages", f"pages:{row.participant_id}"
        )
        for row in _rewarded_rows(link)
        if row.pages > 0
    ]
    return _recorded(link, [bonus for bonus in planned if bonus], by, rule="per page")


class DuplicateBonus(RecruitmentError):
    """The same bonus (participant, amount, reason) is in the ledger already: planned again only when confirmed."""


class SetAsideBonus(RecruitmentError):
    """A bonus by hand to a participant rejected, or asked to return: planned only when the author confirms it."""


def plan_manual(
    link: ProlificLink,
    participant_id: str,
    amount,
    reason: str,
    by,
    key: str = "",
    confirm_duplicate: bool = False,
    confirm_set_aside: bool = False,
) -> list[Bonus]:
    """One bonus the author decides; `key` (a form's one-time key) makes a double submit plan it once. The
    same participant, amount and reason as a bonus already in the ledger (a form planned again after Back gets
    a new key) is refused unless `confirm_duplicate` says the author means a second one; a participant rejected,
    or who returned or was asked to (settle.set_aside), unless `confirm_set_aside` says so."""
    reason = reason.strip()[:200]
    if not reason:
        raise RecruitmentError("reason: say what the bonus is for")
    if participant_id not in {row.participant_id for row in _paid_rows(link)}:
        raise RecruitmentError(f"participant: {participant_id!r} has no submission in this study")
    amount = _amount(amount)
    if participant_id in settle.set_aside(link) and not confirm_set_aside:
        statuses = link.submissions.filter(participant_id=participant_id).values_list("status", flat=True)
        raise SetAsideBonus(
            f"participant: {participant_id} was rejected, returned the study or was asked to return it "
            f"({', '.join(status.lower() for status in statuses)}): tick 'pay them all the same' to plan this bonus"
        )
    if len(key) > KEY_MAX:
        raise RecruitmentError(f"key: at most {KEY_MAX} characters")
    # Without a form's key, the reason (up to 200 characters) is hashed: the whole key fits its column.
    key = key or f"{participant_id}:{hashlib.sha256(reason.encode()).hexdigest()[:32]}"
    full_key = f"{link.project_id}:manual:{key}"
    same = Bonus.objects.filter(project=link.project, participant_id=participant_id, amount=amount, reason=reason)
    same = same.exclude(state=Bonus.State.FAILED).exclude(idempotency_key=full_key)
    if same.exists() and not confirm_duplicate:
        bonus = same.first()
        raise DuplicateBonus(
            f"{participant_id} already has a bonus of {amount} {bonus.currency} for {reason!r} "
            f"({bonus.get_state_display()}): tick 'plan it again' if a second one is meant"
        )
    bonus = _plan(link, participant_id, amount, reason, f"manual:{key}")
    return _recorded(link, [bonus] if bonus else [], by, rule="manual")


def _recorded(link: ProlificLink, bonuses: list[Bonus], by, rule: str) -> list[Bonus]:
    if bonuses:
        total = sum((bonus.amount for bonus in bonuses), Decimal("0"))
        audit.record(
            by, PROLIFIC, link.project, operation="bonus-plan", rule=rule, bonuses=len(bonuses), total=str(total)
        )
    return bonuses


def _set(bonuses, **changes) -> None:
    Bonus.objects.filter(pk__in=[bonus.pk for bonus in bonuses]).update(**changes)


class _Lost(Exception):
    """Another run took some of these rows first: this run's set-up or pay claim is given up."""


def _set_up_planned(link: ProlificLink, client: ProlificClient) -> None:
    """One set-up for the planned rows this run locks; rows another run holds are left to it."""
    try:
        with transaction.atomic():
            planned = list(
                Bonus.objects.select_for_update(skip_locked=True)
                .filter(project=link.project, state=Bonus.State.PLANNED)
                .order_by("pk")
            )
            if not planned:
                return
            set_up = client.set_up_bonuses(
                link.prolific_study_id, [(bonus.participant_id, str(bonus.amount)) for bonus in planned]
            )
            # Conditional: where locks do nothing (SQLite) a row set up by another run meanwhile is not
            # planned any more, and this set-up (which would pay it again) is left unpaid.
            taken = Bonus.objects.filter(pk__in=[bonus.pk for bonus in planned], state=Bonus.State.PLANNED).update(
                state=Bonus.State.SET_UP, bulk_id=set_up.id
            )
            if taken != len(planned):
                raise _Lost
    except _Lost:
        pass


def _claim_bulk(link: ProlificLink, bulk_id: str) -> list[Bonus]:
    """Every row of the set-up moved set_up -> paying, committed before the pay call; [] when another run
    claimed it first (or any of its rows is elsewhere: paying the bulk would pay that row's line too)."""
    try:
        with transaction.atomic():
            rows = list(Bonus.objects.select_for_update().filter(project=link.project, bulk_id=bulk_id).order_by("pk"))
            claimed = Bonus.objects.filter(pk__in=[row.pk for row in rows], state=Bonus.State.SET_UP).update(
                state=Bonus.State.PAYING
            )
            if not rows or claimed != len(rows):
                raise _Lost
    except _Lost:
        return []
    return rows


def pay(link: ProlificLink, by, client: ProlificClient | None = None) -> PayReport:
    """Pay every bonus of the study that is not paid yet, each once (see the module's docstring)."""
    client = client or client_for(link)
    report = PayReport()
    ledger = Bonus.objects.filter(project=link.project)
    if ledger.filter(state=Bonus.State.PAYING).exists():
        _confirm_paying(link, client, report)
    _set_up_planned(link, client)
    bulk_ids = sorted(set(ledger.filter(state=Bonus.State.SET_UP).values_list("bulk_id", flat=True)))
    for bulk_id in bulk_ids:
        bonuses = _claim_bulk(link, bulk_id)
        if not bonuses:
            continue
        keys = [bonus.idempotency_key for bonus in bonuses]
        try:
            client.pay_bonuses(bulk_id)
        except ProlificTimeout:
            report.unconfirmed += keys
            continue
        except ProlificError as error:
            if error.status is not None and error.status < 500:  # refused: nothing was paid
                _set(bonuses, state=Bonus.State.FAILED, error=str(error)[:500])
                report.failed += keys
            else:
                report.unconfirmed += keys
            continue
        _set(bonuses, state=Bonus.State.PAID, error="")
        report.paid += keys
    if report.paid or report.failed or report.confirmed:
        audit.record(
            by,
            PROLIFIC,
            link.project,
            operation="bonus-pay",
            paid=len(report.paid),
            confirmed=len(report.confirmed),
            failed=len(report.failed),
            unconfirmed=len(report.unconfirmed),
        )
    return report


def _confirm_paying(link: ProlificLink, client: ProlificClient, report: PayReport) -> None:
    """Rows whose pay call was sent without an answer: paid when Prolific's submissions show the bonus."""
    settle.pull(link, client)
    shown: dict[str, int] = defaultdict(int)  # a participant's submissions together (one bonus may be on any)
    for row in link.submissions.all():
        shown[row.participant_id] += row.bonus_cents
    counted: dict[str, int] = defaultdict(int)
    for bonus in Bonus.objects.filter(project=link.project, state=Bonus.State.PAID):
        counted[bonus.participant_id] += int(bonus.amount * 100)
    for bonus in Bonus.objects.filter(project=link.project, state=Bonus.State.PAYING).order_by("created_at", "id"):
        cents = int(bonus.amount * 100)
        if shown.get(bonus.participant_id, 0) - counted[bonus.participant_id] >= cents:
            counted[bonus.participant_id] += cents
            _set([bonus], state=Bonus.State.PAID, error="")
            report.confirmed.append(bonus.idempotency_key)
        else:
            report.unconfirmed.append(bonus.idempotency_key)


def release_unconfirmed(link: ProlificLink, bonus_ids: list[int], by) -> int:
    """The author checked on Prolific that these were not paid: the next run pays them (same set-up). The
    whole set-up of each chosen bonus is released, since its one pay call pays all of its lines."""
    chosen = Bonus.objects.filter(project=link.project, pk__in=bonus_ids, state=Bonus.State.PAYING)
    bulk_ids = set(chosen.values_list("bulk_id", flat=True))
    rows = Bonus.objects.filter(project=link.project, bulk_id__in=bulk_ids, state=Bonus.State.PAYING)
    count = rows.update(state=Bonus.State.SET_UP)
    if count:
        audit.record(by, PROLIFIC, link.project, operation="bonus-retry", bonuses=count)
    return count
