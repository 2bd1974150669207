"""What a Prolific study costs before it is created or published: the participants' rewards, the bonuses in the
ledger, Prolific's service fee on both and VAT on the fee. Money is Decimal, rounded to the penny (cent)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

from django.conf import settings
from django.db.models import Sum

from recruitment.models import Bonus, ProlificLink

PENNY = Decimal("0.01")


@dataclass(frozen=True)
class Cost:
    reward: Decimal  # one participant's
    places: int
    rewards: Decimal  # reward x places
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


def preview(reward_cents: int, places: int, bonuses: Decimal, fee_rate, vat_rate) -> Cost:
    """The cost of `places` participants at `reward_cents` each plus `bonuses`: Prolific charges its fee on
    rewards and bonuses alike, and VAT on the fee only. Each figure is rounded to the penny."""
    if reward_cents < 0 or places < 0 or bonuses < 0:
        raise ValueError("reward, places and bonuses: none may be negative")
    fee_rate, vat_rate = _rate(fee_rate, "PROLIFIC_SERVICE_FEE_RATE"), _rate(vat_rate, "PROLIFIC_VAT_RATE")
    reward = Decimal(reward_cents) / 100
    rewards, bonuses = reward * places, _pennies(bonuses)
    fee = _pennies((rewards + bonuses) * fee_rate)
    vat = _pennies(fee * vat_rate)
    return Cost(reward, places, rewards, bonuses, fee_rate, fee, vat_rate, vat, rewards + bonuses + fee + vat)


def study_cost(link: ProlificLink) -> Cost:
    """The study's cost at the rates in settings, with every bonus of its ledger that is or may be paid."""
    ledger = Bonus.objects.filter(project=link.project).exclude(state=Bonus.State.FAILED)
    bonuses = ledger.aggregate(total=Sum("amount"))["total"] or Decimal(0)
    return preview(
        link.reward_cents, link.places, bonuses, settings.PROLIFIC_SERVICE_FEE_RATE, settings.PROLIFIC_VAT_RATE
    )
