"""The cost preview: rewards x places, fixed screen-out payments, Prolific's fee on rewards, screen-out payments
and bonuses, VAT on the fee, each rounded to the penny; the Prolific page shows the most the study can cost
before it is created or published and, once submissions are settled, what was paid next to it."""

from decimal import Decimal

import pytest
from django.test import Client

from recruitment.models import Bonus
from recruitment.services import bonuses, settle, studies
from recruitment.services.costs import preview
from tests.recruitment.conftest import SITE, arrive

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


def test_screen_out_payments_are_counted_with_their_fee():
    cost = preview(150, 3, Decimal("1.25"), "0.3333", "0.20", screen_out_cents=20, screen_outs=2)
    assert (cost.screen_out_reward, cost.screen_out_payments) == (Decimal("0.20"), Decimal("0.40"))
    assert cost.fee == Decimal("2.05")  # (4.50 + 0.40 + 1.25) x 0.3333 = 2.049795
    assert (cost.vat, cost.total) == (Decimal("0.41"), Decimal("8.61"))
    with pytest.raises(ValueError, match="none may be negative"):
        preview(150, 3, Decimal(0), "0.3", "0.2", screen_out_cents=-1, screen_outs=1)


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
    # The study's 3 screen-out places at 20p each: the most its fixed screen-out payments can cost.
    assert "GBP 0.20 × 3 screen-out places" in page and '<td id="cost-screen-outs">GBP 0.60</td>' in page
    # Fee on 4.50 + 0.60 + 1.25 = 6.35: 2.116455; VAT on 2.12: 0.424.
    assert '<td id="cost-bonuses">GBP 1.25</td>' in page and '<td id="cost-fee">GBP 2.12</td>' in page
    assert '<td id="cost-vat">GBP 0.42</td>' in page and "<b>GBP 8.89</b>" in page
    assert 'id="paid-total"' not in page  # nothing paid before any submission
    assert page.index('id="cost-preview"') < page.index('value="create"')
    settings.PROLIFIC_VAT_RATE = "20%"
    page = client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
    assert "The cost cannot be worked out: PROLIFIC_VAT_RATE" in page


def test_after_settling_the_page_shows_what_was_paid_next_to_the_ceiling(study, author, standin, settings):
    settings.PROLIFIC_SERVICE_FEE_RATE, settings.PROLIFIC_VAT_RATE = "0.3333", "0.20"
    link = studies.create_draft(studies.link_of(study), SITE, author)
    studies.transition(link, "publish", author)
    study.refresh_from_db()
    ids = {}
    for pid in ("PONE", "PTWO", "PTHREE"):
        session = arrive(study, pid, pages=1)
        ids[pid] = standin.add_submission(link.prolific_study_id, pid, "AWAITING REVIEW", session.completion_code)
    settle.pull(link)
    settle.approve(link, [ids["PONE"]], author)
    settle.screen_out(link, ids["PTWO"], author)  # PTHREE still awaits review: not paid yet
    bonuses.plan_manual(link, "PONE", "0.25", "thanks", author)
    bonuses.pay(link, author)
    bonuses.plan_manual(link, "PONE", "0.50", "planned, not paid", author)
    client = Client()
    client.force_login(author)
    page = client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
    # Paid: one reward 1.50, one screen-out 0.20, the 0.25 bonus; fee on 1.95 is 0.649935, VAT on 0.65 0.13.
    assert "(paid: 1 approved)" in page and '<td id="paid-rewards">GBP 1.50</td>' in page
    assert "(paid: 1 screened out)" in page and '<td id="paid-screen-outs">GBP 0.20</td>' in page
    assert '<td id="paid-bonuses">GBP 0.25</td>' in page and '<td id="paid-fee">GBP 0.65</td>' in page
    assert '<td id="paid-vat">GBP 0.13</td>' in page and "<b>GBP 2.73</b>" in page
    # The ceiling beside it: 3 places, 3 screen-out places, both bonuses; fee on 5.85 is 1.949805.
    assert '<td id="cost-rewards">GBP 4.50</td>' in page and '<td id="cost-bonuses">GBP 0.75</td>' in page
    assert '<td id="cost-fee">GBP 1.95</td>' in page and "<b>GBP 8.19</b>" in page
