"""The study page gives the platforms' entry links (issue 27, item 7) and suggests a fair reward from the time
pages really take (item 6), warning below Prolific's minimum hourly rate."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Assignment
from annotation.services.crowd.pay import reward_for, suggest_reward

PLACEHOLDERS = "PROLIFIC_PID={{%PROLIFIC_PID%}}&amp;STUDY_ID={{%STUDY_ID%}}&amp;SESSION_ID={{%SESSION_ID%}}"


def test_a_reward_is_the_target_rate_over_the_time_rounded_up():
    # 95 s a page, 4 pages: 380 s, 7 minutes (rounded up) at £9.00 an hour = £1.05.
    suggestion = reward_for(95, 4, "9", "GBP")
    assert (suggestion.minutes, suggestion.reward, suggestion.reward_cents) == (7, Decimal("1.05"), 105)
    assert suggestion.warnings == []
    # A rate whose product has fractions of a cent is rounded up: never below the target.
    assert reward_for(60, 1, "8.01", "USD").reward == Decimal("0.14")


@pytest.mark.parametrize(
    ("rate", "currency", "warned"),
    [("5.99", "GBP", "below Prolific's minimum of £6.00"), ("7.99", "USD", "below Prolific's minimum of $8.00")],
)
def test_a_rate_below_prolifics_minimum_is_warned_about(rate, currency, warned):
    assert any(warned in warning for warning in reward_for(60, 1, rate, currency).warnings)
    recommended = {"GBP": "9", "USD": "12"}[currency]
    assert reward_for(60, 1, recommended, currency).warnings == []
    minimum = {"GBP": "6", "USD": "8"}[currency]
    assert "recommends" in reward_for(60, 1, minimum, currency).warnings[0]


@pytest.mark.parametrize(
    ("rate", "currency", "field"),
    [
        ("abc", "GBP", "hourly_rate"),
        ("-3", "GBP", "hourly_rate"),
        ("NaN", "USD", "hourly_rate"),
        ("9", "EUR", "currency"),
    ],
)
def test_a_bad_rate_or_currency_is_refused_by_name(rate, currency, field):
    with pytest.raises(ValueError, match=field):
        reward_for(60, 1, rate, currency)


@pytest.mark.django_db
def test_the_suggestion_uses_the_median_submitted_page_of_the_study_or_its_pilot(make_project, make_user):
    study = make_project("nli_label", slug="paid-study", completion_pages=3)
    pilot = make_project("nli_label", slug="paid-pilot")
    assert suggest_reward(study, "9", "GBP").reward is None  # nothing timed yet: no figure, a warning
    worker = make_user("timed")
    for seconds in (40, 60, 300):  # the slow page does not move the median
        page = Assignment.objects.create(project=pilot, worker=worker, expires_at=timezone.now())
        Assignment.objects.filter(pk=page.pk).update(
            status=Assignment.Status.SUBMITTED, submitted_at=page.created_at + timedelta(seconds=seconds)
        )
    open_page = Assignment.objects.create(project=pilot, worker=worker, expires_at=timezone.now())
    assert open_page.status == Assignment.Status.OPEN  # not submitted: not timed
    suggestion = suggest_reward(study, "9", "GBP", pilot=pilot)
    assert suggestion.median_page_seconds == pytest.approx(60, abs=0.01) and suggestion.pages_timed == 3
    assert (suggestion.pages, suggestion.minutes, suggestion.reward) == (3, 3, Decimal("0.45"))


@pytest.mark.django_db
def test_the_study_page_gives_the_entry_links_of_its_audience_and_the_reward(make_project, author):
    study = make_project("nli_label", slug="linked", audience="prolific")
    client = Client()
    client.force_login(author)
    text = client.get(f"/projects/{study.slug}/").content.decode()
    assert f'value="http://testserver/enter/linked/?{PLACEHOLDERS}"' in text
    assert 'data-copy="entry-prolific"' in text and 'id="entry-mturk"' not in text
    assert "no page has been submitted yet" in text  # the fair-pay box at Prolific's recommended rate
    study.audience = "platform"
    study.save()
    text = client.get(f"/projects/{study.slug}/").content.decode()
    assert 'value="http://testserver/enter/linked/"' in text and 'data-copy="entry-mturk"' in text
    low = client.get(f"/projects/{study.slug}/?hourly_rate=4&currency=GBP").content.decode()
    assert "below Prolific&#x27;s minimum of £6.00" in low
    bad = client.get(f"/projects/{study.slug}/?hourly_rate=lots&currency=GBP").content.decode()
    assert "hourly_rate: &#x27;lots&#x27; is not an amount" in bad
    study.audience = "members"
    study.save()
    assert 'id="no-entry-links"' in client.get(f"/projects/{study.slug}/").content.decode()
