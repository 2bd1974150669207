"""The cost preview: rewards x places, Prolific's fee on rewards and bonuses, VAT on the fee, each rounded to the
penny; the Prolific page shows it before the study is created or published."""

from decimal import Decimal

import pytest
from django.test import Client

from recruitment.models import Bonus
from recruitment.services import studies
from recruitment.services.costs import preview

pytestmark = pytest.mark.django_db


def test_fee_on_rewards_and_bonuses_and_vat_on_the_fee():
    cost = preview(150, 3, Decimal("1.25"), "0.3333", "0.20")
    assert cost.rewards == Decimal("4.50") and cost.bonuses == Decimal("1.25")
    assert cost.fee == Decimal("1.92")  # 5.75 x 0.3333 = 1.916475
    assert cost.vat == Decimal("0.38")  # 1.92 x 0.20 = 0.384
    assert cost.total == Decimal("8.05")


def test_each_figure_is_rounded_to_the_penny_half_up():
    cost = preview(1, 1, Decimal(0), "0.5", "0.2")
    assert (cost.fee, cost.vat, cost.total) == (Decimal("0.01"), Decimal("0.00"), Decimal("0.02"))
    cost = preview(333, 7, Decimal("0.005"), "0.3333", "0.2")  # 23.31 + 0.01 = 23.32; fee 7.772556
    assert (cost.bonuses, cost.fee, cost.vat, cost.total) == (
        Decimal("0.01"),
        Decimal("7.77"),
        Decimal("1.55"),
        Decimal("32.64"),
    )


def test_zero_places_costs_only_the_bonuses_and_their_fee():
    assert preview(150, 0, Decimal(0), "0.3333", "0.2").total == Decimal("0.00")
    cost = preview(150, 0, Decimal("3.00"), "0.3333", "0.2")
    assert (cost.rewards, cost.fee, cost.vat, cost.total) == (0, Decimal("1.00"), Decimal("0.20"), Decimal("4.20"))


@pytest.mark.parametrize("rate", ["1.5", "-0.1", "a third"])
def test_a_rate_that_is_not_a_fraction_is_refused(rate):
    with pytest.raises(ValueError, match="PROLIFIC_SERVICE_FEE_RATE"):
        preview(150, 3, Decimal(0), rate, "0.2")
    with pytest.raises(ValueError, match="PROLIFIC_VAT_RATE"):
        preview(150, 3, Decimal(0), "0.3", rate)


def test_the_prolific_page_shows_the_cost_before_create(study, author, settings):
    settings.PROLIFIC_SERVICE_FEE_RATE, settings.PROLIFIC_VAT_RATE = "0.3333", "0.20"
    for key, amount, state in (("b1", "1.00", Bonus.State.PLANNED), ("b2", "0.25", Bonus.State.PAID)):
        Bonus.objects.create(
            project=study,
            participant_id="P1",
            amount=amount,
            currency="GBP",
            reason="r",
            idempotency_key=key,
            state=state,
        )
    Bonus.objects.create(  # refused by Prolific: never paid, not counted
        project=study,
        participant_id="P2",
        amount="9.00",
        currency="GBP",
        reason="r",
        idempotency_key="b3",
        state="failed",
    )
    client = Client()
    client.force_login(author)
    page = client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
    assert studies.link_of(study).prolific_study_id == ""  # not created yet
    assert "GBP 1.50 × 3 places" in page and '<td id="cost-rewards">GBP 4.50</td>' in page
    assert '<td id="cost-bonuses">GBP 1.25</td>' in page and '<td id="cost-fee">GBP 1.92</td>' in page
    assert '<td id="cost-vat">GBP 0.38</td>' in page and "<b>GBP 8.05</b>" in page
    assert page.index('id="cost-preview"') < page.index('value="create"')
    settings.PROLIFIC_VAT_RATE = "20%"
    page = client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
    assert "The cost cannot be worked out: PROLIFIC_VAT_RATE" in page
