"""Paying the bonuses ledger from many requests at once, on PostgreSQL (SQLite ignores SELECT ... FOR UPDATE):
each bonus is paid by one pay call, the ledger records the bulk id that was paid, the audit one payment."""

import threading
from collections import Counter

import pytest
from django.db import connection
from django.test import Client

from annotation.models import AuditEntry
from recruitment.models import Bonus
from recruitment.services import bonuses, settle, studies
from tests.recruitment.conftest import SITE, arrive

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

PARTICIPANTS = ("PONE", "PTWO", "PTHREE")


@pytest.fixture
def ledger(study, author, standin):
    """The study on Prolific, three participants who worked and were approved, a bonus planned for each."""
    link = studies.create_draft(studies.link_of(study), SITE, author)
    for participant in PARTICIPANTS:
        arrive(study, participant, pages=1)
        standin.add_submission(link.prolific_study_id, participant, "APPROVED")
    settle.pull(link)
    assert len(bonuses.plan_per_page(link, "0.30", author)) == len(PARTICIPANTS)
    return link


def pay_at_once(study, author, count: int) -> list[int]:
    """`count` POSTs to the pay button released together, each from its own client and thread (its own
    database connection, as in separate server processes; the pool lends 4 at a time, as a server's does)."""
    return post_at_once(author, f"/recruitment/projects/{study.slug}/prolific/bonuses/pay/", {}, count)


def post_at_once(author, url: str, form: dict, count: int) -> list[int]:
    barrier = threading.Barrier(count)
    statuses, errors = [], []

    def post():
        try:
            client = Client()
            client.force_login(author)
            connection.close()  # back to the pool: a thread waiting at the barrier holds no connection
            barrier.wait(timeout=60)
            statuses.append(client.post(url, form).status_code)
        except Exception as error:  # reported below: a thread's assertion would be lost
            errors.append(repr(error))
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not errors, errors[:3]
    return statuses


@pytest.mark.parametrize("requests", [2, 8])
def test_parallel_pay_requests_pay_each_bonus_once(ledger, study, author, standin, requests):
    assert pay_at_once(study, author, requests) == [302] * requests
    (paid_bulk,) = standin.payments  # one pay call in all
    paid = Counter()
    for participant, cents in standin.bonus_setups[paid_bulk]["lines"]:
        paid[participant] += cents
    assert paid == dict.fromkeys(PARTICIPANTS, 30)
    # Set-ups no run paid may exist on Prolific (they move no money); the ledger names the one paid.
    assert set(Bonus.objects.values_list("state", "bulk_id")) == {("paid", paid_bulk)}
    payments = AuditEntry.objects.filter(details__operation="bonus-pay")
    assert sum(entry.details["paid"] for entry in payments) == len(PARTICIPANTS)
    # A later run finds nothing to pay.
    assert pay_at_once(study, author, 2) == [302, 302] and len(standin.payments) == 1


def test_parallel_runs_while_a_bonus_is_added_pay_the_new_one_once_too(ledger, study, author, standin):
    pay_at_once(study, author, 4)
    arrive(study, "PFOUR", pages=1)
    standin.add_submission(ledger.prolific_study_id, "PFOUR", "APPROVED")
    settle.pull(ledger)
    bonuses.plan_manual(ledger, "PFOUR", "1.00", "a late helpful comment", author)
    pay_at_once(study, author, 8)
    assert len(standin.payments) == 2
    lines = [line for bulk in standin.payments for line in standin.bonus_setups[bulk]["lines"]]
    assert sorted(lines) == sorted([(participant, 30) for participant in PARTICIPANTS] + [("PFOUR", 100)])
    assert set(Bonus.objects.values_list("state", flat=True)) == {"paid"}


def test_a_waves_settled_participants_are_paid_once_by_eight_requests_at_once(study, author, standin):
    """The pay step of the two-wave browser journey (tests/browser/test_prolific_waves_journey.py), here because
    its demo server runs on SQLite: two approved, one screened out, one returned and one rejected participant;
    per-page bonuses go to the two approved only, and eight pay requests at once pay each of them once."""
    link = studies.create_draft(studies.link_of(study), SITE, author)
    outcomes = {"PDONE": "APPROVED", "PDTWO": "APPROVED", "PREJECT": "AWAITING REVIEW", "PRETURN": "RETURNED",
                "PQFAIL": "SCREENED OUT"}  # fmt: skip
    for participant, status in outcomes.items():
        arrive(study, participant, pages=0 if participant in ("PRETURN", "PQFAIL") else 1)
        standin.add_submission(link.prolific_study_id, participant, status)
    settle.pull(link)
    rejected = link.submissions.get(participant_id="PREJECT").submission_id
    settle.reject(link, rejected, "FAILED_INSTRUCTIONS", "The answers did not follow the instructions. " * 3, author)
    assert [bonus.participant_id for bonus in bonuses.plan_per_page(link, "0.40", author)] == ["PDONE", "PDTWO"]
    assert pay_at_once(study, author, 8) == [302] * 8
    (paid_bulk,) = standin.payments
    assert sorted(standin.bonus_setups[paid_bulk]["lines"]) == [("PDONE", 40), ("PDTWO", 40)]
    assert set(Bonus.objects.values_list("participant_id", "state")) == {("PDONE", "paid"), ("PDTWO", "paid")}


def test_a_confirmed_bonus_to_a_rejected_participant_from_eight_tabs_at_once_is_planned_and_paid_once(
    study, author, standin
):
    """The manual bonus's confirmation (issue 53, item 3): unconfirmed, eight requests at once plan nothing;
    confirmed, eight at once (one form, one key) plan one bonus, and eight pay requests pay it once."""
    link = studies.create_draft(studies.link_of(study), SITE, author)
    arrive(study, "PREJECT", pages=1)
    submission = standin.add_submission(link.prolific_study_id, "PREJECT", "AWAITING REVIEW")
    settle.pull(link)
    settle.reject(link, submission, "FAILED_INSTRUCTIONS", "The answers did not follow the instructions. " * 3, author)
    url = f"/recruitment/projects/{study.slug}/prolific/bonuses/"
    form = {"rule": "manual", "participant": "PREJECT", "amount": "1.50", "reason": "good notes", "key": "tab-1"}
    assert post_at_once(author, url, form, 8) == [302] * 8
    assert not Bonus.objects.exists()
    assert post_at_once(author, url, {**form, "set_aside": "1"}, 8) == [302] * 8
    assert list(Bonus.objects.values_list("participant_id", "state")) == [("PREJECT", "planned")]
    assert pay_at_once(study, author, 8) == [302] * 8
    (paid_bulk,) = standin.payments
    assert standin.bonus_setups[paid_bulk]["lines"] == [("PREJECT", 150)]
