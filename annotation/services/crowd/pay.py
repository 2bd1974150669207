"""Fair pay for a crowd study: a reward suggested from the time participants really take and a target hourly
rate, checked against Prolific's minimum.

Prolific enforces a minimum of £6.00 / $8.00 an hour and recommends at least £9.00 / $12.00, judged on the
median completion time ("Prolific's payment principles",
https://researcher-help.prolific.com/hc/en-gb/articles/4407695146002-Prolific-s-payment-principles).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, Decimal, InvalidOperation

from django.db.models import F

from annotation.models import Assignment, Project
from annotation.services.crowd.crowd import quota
from annotation.services.simulation import SIMULATED_GROUP

PROLIFIC_MINIMUM_HOURLY = {"GBP": Decimal("6.00"), "USD": Decimal("8.00")}
PROLIFIC_RECOMMENDED_HOURLY = {"GBP": Decimal("9.00"), "USD": Decimal("12.00")}
CURRENCY_SIGNS = {"GBP": "£", "USD": "$"}
# The median page time is taken over this many of the most recently submitted pages.
TIMED_PAGES = 2_000


@dataclass(frozen=True)
class Suggestion:
    """A reward for one participant. `reward` and `minutes` are None until a page has been timed."""

    currency: str
    hourly_rate: Decimal
    pages: int  # pages one participant submits (the study's completion_pages, at least one)
    pages_timed: int  # submitted pages the median is taken over (the last TIMED_PAGES at most)
    median_page_seconds: float | None
    minutes: int | None  # the estimated completion time Prolific is given, whole minutes rounded up
    reward: Decimal | None  # rounded up to the cent, so that the rate is never below the target
    warnings: list[str] = field(default_factory=list)

    @property
    def reward_cents(self) -> int | None:
        """The reward as Prolific's API takes it (an integer number of cents or pence)."""
        return None if self.reward is None else int(self.reward * 100)

    @property
    def sign(self) -> str:
        return CURRENCY_SIGNS[self.currency]


def reward_for(median_page_seconds: float | None, pages: int, hourly_rate, currency: str, pages_timed: int = 0):
    """The Suggestion for participants who spend `median_page_seconds` on each of `pages` pages (pure)."""
    if currency not in PROLIFIC_MINIMUM_HOURLY:
        raise ValueError(f"currency: {currency!r} is not one Prolific pays in ({', '.join(PROLIFIC_MINIMUM_HOURLY)})")
    try:
        rate = Decimal(str(hourly_rate).strip())
    except InvalidOperation:
        raise ValueError(f"hourly_rate: {hourly_rate!r} is not an amount") from None
    if not rate.is_finite() or rate <= 0:
        raise ValueError(f"hourly_rate: {hourly_rate!r} is not a positive amount")
    warnings = []
    if rate < PROLIFIC_MINIMUM_HOURLY[currency]:
        warnings.append(
            f"{CURRENCY_SIGNS[currency]}{rate:.2f} an hour is below Prolific's minimum of "
            f"{CURRENCY_SIGNS[currency]}{PROLIFIC_MINIMUM_HOURLY[currency]:.2f}: Prolific refuses such a study"
        )
    elif rate < PROLIFIC_RECOMMENDED_HOURLY[currency]:
        warnings.append(
            f"{CURRENCY_SIGNS[currency]}{rate:.2f} an hour is below the {CURRENCY_SIGNS[currency]}"
            f"{PROLIFIC_RECOMMENDED_HOURLY[currency]:.2f} Prolific recommends"
        )
    if median_page_seconds is None:
        warnings.append("no page has been submitted yet: run a pilot to time the study")
        return Suggestion(currency, rate, pages, pages_timed, None, None, None, warnings)
    minutes = max(1, math.ceil(median_page_seconds * pages / 60))
    reward = (rate * minutes / 60).quantize(Decimal("0.01"), rounding=ROUND_CEILING)
    return Suggestion(currency, rate, pages, pages_timed, median_page_seconds, minutes, reward, warnings)


def median_page_seconds(project: Project) -> tuple[float | None, int]:
    """The median seconds from claiming to submitting a page, as Prolific times a submission, over the study's
    last TIMED_PAGES submitted pages (simulated workers' pages left out), and how many pages that is (None, 0
    before the first). Every page of a pilot; the latest of a larger study, which also tell how long a page
    takes now. One query reads at most TIMED_PAGES spans through assignment_submitted_idx, newest first: the
    same cost at any size of study."""
    spans = list(
        Assignment.objects.filter(project=project, status=Assignment.Status.SUBMITTED, submitted_at__isnull=False)
        .exclude(worker__groups__name=SIMULATED_GROUP)
        .order_by("-submitted_at")
        .annotate(span=F("submitted_at") - F("created_at"))
        .values_list("span", flat=True)[:TIMED_PAGES]
    )
    if not spans:
        return None, 0
    return statistics.median(span.total_seconds() for span in spans), len(spans)


def suggest_reward(project: Project, hourly_rate, currency: str, pilot: Project | None = None) -> Suggestion:
    """The reward one participant of `project` should get at `hourly_rate` (GBP or USD), from the median time
    of the pages submitted last in `pilot` (or in the study itself), times the pages a participant submits."""
    median, timed = median_page_seconds(pilot or project)
    return reward_for(median, max(1, quota(project)), hourly_rate, currency, pages_timed=timed)
