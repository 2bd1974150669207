"""What a Prolific study costs: the most it can cost (its ceiling, shown before it is created or published)
and, once submissions are settled, what was paid. Both count the participants' rewards, the fixed screen-out
payments, the bonuses, Prolific's service fee on all three and VAT on the fee. Money is Decimal, rounded to
the penny (cent)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django.conf import settings
from django.db.models import Sum

from recruitment.models import Bonus, ProlificLink

PENNY = Decimal("0.01")
APPROVED = "APPROVED"  # a submission whose reward Prolific paid
SCREENED_OUT = "SCREENED OUT"  # a submission paid the study's fixed screen-out reward


@dataclass(frozen=True)
class Cost:
    reward: Decimal  # one participant's
    places: int  # the places counted (all of them for the ceiling; the approved submissions once paid)
    rewards: Decimal  # reward x places
    screen_out_reward: Decimal  # one screen-out payment
    screen_outs: int  # the screen-out places (ceiling) or the submissions screened out (paid)
    screen_out_payments: Decimal  # screen_out_reward x screen_outs
    bonuses: Decimal
    fee_rate: Decimal
    fee: Decimal
    vat_rate: Decimal
    vat: Decimal
    total: Decimal


def _rate(value, name: str) -> Decimal:
    try:
        rate = Decimal(str(value))
    except InvalidOperation:
        raise ValueError(f"{name}: {value!r} is not a number") from None
    if not Decimal(0) <= rate <= Decimal(1):
        raise ValueError(f"{name}: a fraction between 0 and 1 (got {rate})")
    return rate


def _pennies(amount: Decimal) -> Decimal:
    return amount.quantize(PENNY, rounding=ROUND_HALF_UP)


def preview(
    reward_cents: int,
    places: int,
    bonuses: Decimal,
    fee_rate,
    vat_rate,
    screen_out_cents: int = 0,
    screen_outs: int = 0,
) -> Cost:
    """The cost of `places` participants at `reward_cents` each, `screen_outs` fixed screen-out payments of
    `screen_out_cents` and `bonuses`: Prolific charges its fee on all participant payments alike, and VAT on
    the fee only. Each figure is rounded to the penny."""
    if min(reward_cents, places, screen_out_cents, screen_outs) < 0 or bonuses < 0:
        raise ValueError("reward, places, screen-out payments and bonuses: none may be negative")
    fee_rate, vat_rate = _rate(fee_rate, "PROLIFIC_SERVICE_FEE_RATE"), _rate(vat_rate, "PROLIFIC_VAT_RATE")
    reward, screen_out_reward = Decimal(reward_cents) / 100, Decimal(screen_out_cents) / 100
    rewards, screen_out_payments, bonuses = reward * places, screen_out_reward * screen_outs, _pennies(bonuses)
    paid_out = rewards + screen_out_payments + bonuses
    fee = _pennies(paid_out * fee_rate)
    vat = _pennies(fee * vat_rate)
    return Cost(
        reward,
        places,
        rewards,
        screen_out_reward,
        screen_outs,
        screen_out_payments,
        bonuses,
        fee_rate,
        fee,
        vat_rate,
        vat,
        paid_out + fee + vat,
    )


def _at_settings_rates(link: ProlificLink, places: int, bonuses, screen_outs: int) -> Cost:
    return preview(
        link.reward_cents,
        places,
        bonuses or Decimal(0),
        settings.PROLIFIC_SERVICE_FEE_RATE,
        settings.PROLIFIC_VAT_RATE,
        screen_out_cents=link.screen_out_reward_cents,
        screen_outs=screen_outs,
    )


def study_cost(link: ProlificLink) -> Cost:
    """The most the study can cost at the rates in settings: every place rewarded, every screen-out place
    paid, and every bonus of its ledger that is or may be paid."""
    ledger = Bonus.objects.filter(project=link.project).exclude(state=Bonus.State.FAILED)
    bonuses = ledger.aggregate(total=Sum("amount"))["total"]
    slots = link.screen_out_slots if link.screen_out_reward_cents else 0
    return _at_settings_rates(link, link.places, bonuses, slots)


def paid_cost(link: ProlificLink) -> Cost | None:
    """What was paid so far, as the submissions and the ledger say: the rewards of the approved submissions,
    the screen-out payments of those screened out and the bonuses paid, with their fee and VAT (None before
    any submission is known)."""
    if not link.submissions.exists():
        return None
    approved = link.submissions.filter(status=APPROVED).count()
    screened_out = link.submissions.filter(status=SCREENED_OUT).count()
    paid = Bonus.objects.filter(project=link.project, state=Bonus.State.PAID).aggregate(total=Sum("amount"))["total"]
    return _at_settings_rates(link, approved, paid, screened_out)
