"""The bonuses ledger: rules plan rows once; paying pays each bonus once, through a timeout, a refusal, and a
process killed between Prolific's set-up and its pay call (run as `manage.py prolific --pay-bonuses` in a
subprocess on its own database, SIGKILLed, and run again: the stand-in records one payment)."""

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import pytest

from recruitment.models import Bonus
from recruitment.services import bonuses, settle, studies
from tests.recruitment.conftest import SITE, TOKEN, arrive

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def settled(study, author, standin):
    """The study on Prolific, two participants who worked (one with good gold answers), their submissions."""
    link = studies.create_draft(studies.link_of(study), SITE, author)
    study.refresh_from_db()
    arrive(study, "PGOOD", pages=2, gold=[True, True, True, True, True])
    arrive(study, "PWEAK", pages=1, gold=[True, False, False])
    for participant in ("PGOOD", "PWEAK"):
        standin.add_submission(link.prolific_study_id, participant, "APPROVED")
    settle.pull(link)
    return link


@pytest.mark.django_db
def test_each_rule_plans_a_row_once_with_its_reason(settled, author):
    gold = bonuses.plan_for_gold(settled, 0.8, "0.50", author)
    assert [(b.participant_id, b.amount, b.reason) for b in gold] == [
        ("PGOOD", Decimal("0.50"), "gold accuracy at least 0.8")
    ]
    pages = bonuses.plan_per_page(settled, "0.10", author)
    assert sorted((b.participant_id, b.amount) for b in pages) == [
        ("PGOOD", Decimal("0.20")),
        ("PWEAK", Decimal("0.10")),
    ]
    manual = bonuses.plan_manual(settled, "PWEAK", "1.00", "a careful comment", author, key="form-1")
    assert manual[0].currency == "GBP" and manual[0].state == "planned"
    # Planned again (a double click, a second run): nothing new.
    assert bonuses.plan_for_gold(settled, 0.8, "0.50", author) == []
    assert bonuses.plan_per_page(settled, "0.10", author) == []
    assert bonuses.plan_manual(settled, "PWEAK", "1.00", "a careful comment", author, key="form-1") == []
    assert Bonus.objects.count() == 4


@pytest.mark.django_db
def test_the_rules_give_a_rejected_participant_nothing(settled, author, standin):
    good = settled.submissions.get(participant_id="PGOOD").submission_id
    standin.submissions[good]["status"] = "AWAITING REVIEW"  # what Prolific lets be rejected
    settle.reject(settled, good, "LOW_EFFORT", "x" * 100, author)
    assert [bonus.participant_id for bonus in bonuses.plan_per_page(settled, "0.10", author)] == ["PWEAK"]
    assert bonuses.plan_for_gold(settled, 0.0, "0.50", author)[0].participant_id == "PWEAK"
    assert not Bonus.objects.filter(participant_id="PGOOD").exists()


@pytest.mark.django_db
def test_the_same_manual_bonus_planned_again_from_a_new_form_needs_a_confirmation(settled, author):
    bonuses.plan_manual(settled, "PWEAK", "1.00", "a careful comment", author, key="form-1")
    # Back, then the form sent again: a new one-time key, the same participant, amount and reason.
    with pytest.raises(bonuses.DuplicateBonus, match=r"PWEAK already has a bonus of 1\.00 GBP for .a careful comment."):
        bonuses.plan_manual(settled, "PWEAK", "1", "a careful comment ", author, key="form-2")
    assert Bonus.objects.count() == 1
    # Another amount or reason is another bonus; the author may confirm a second identical one.
    assert bonuses.plan_manual(settled, "PWEAK", "2.00", "a careful comment", author, key="form-3")
    again = bonuses.plan_manual(
        settled, "PWEAK", "1.00", "a careful comment", author, key="form-4", confirm_duplicate=True
    )
    assert len(again) == 1 and Bonus.objects.count() == 3


@pytest.mark.django_db
def test_a_manual_bonus_key_fits_its_column_whatever_the_reason(settled, author):
    with pytest.raises(studies.RecruitmentError, match="key: at most 64 characters"):
        bonuses.plan_manual(settled, "PGOOD", "1", "why", author, key="k" * 65)
    (bonus,) = bonuses.plan_manual(settled, "PGOOD", "1", "r" * 300, author)  # no form key: the reason is hashed
    assert len(bonus.idempotency_key) <= 200 and bonus.reason == "r" * 200
    assert bonuses.plan_manual(settled, "PGOOD", "1", "r" * 300, author) == []  # planned once


@pytest.mark.django_db
def test_bad_bonuses_are_refused_naming_what_is_wrong(settled, author):
    with pytest.raises(studies.RecruitmentError, match="amount: 'lots' is not a number"):
        bonuses.plan_manual(settled, "PGOOD", "lots", "why", author)
    with pytest.raises(studies.RecruitmentError, match="amount: between"):
        bonuses.plan_manual(settled, "PGOOD", "500", "why", author)
    with pytest.raises(studies.RecruitmentError, match="participant: 'PNOBODY'"):
        bonuses.plan_manual(settled, "PNOBODY", "1", "why", author)
    with pytest.raises(studies.RecruitmentError, match="reason"):
        bonuses.plan_manual(settled, "PGOOD", "1", "  ", author)
    assert Bonus.objects.count() == 0


@pytest.mark.django_db
def test_paying_sets_up_once_pays_once_and_a_second_run_pays_nothing(settled, author, standin):
    bonuses.plan_per_page(settled, "0.25", author)
    report = bonuses.pay(settled, author)
    assert len(report.paid) == 2 and not report.unconfirmed
    (setup,) = standin.bonus_setups.values()
    assert sorted(setup["lines"]) == [("PGOOD", 50), ("PWEAK", 25)]
    assert standin.payments == list(standin.bonus_setups)
    assert set(Bonus.objects.values_list("state", flat=True)) == {"paid"}
    assert bonuses.pay(settled, author).paid == [] and len(standin.payments) == 1


@pytest.mark.django_db
def test_a_pay_call_that_times_out_is_confirmed_later_not_paid_again(settled, author, standin, settings):
    settings.PROLIFIC_TIMEOUT_SECONDS = 0.5
    bonuses.plan_for_gold(settled, 0.8, "0.75", author)
    hold = standin.hold(r"/api/v1/bulk-bonus-payments/\w+/pay/", record=True)  # paid, answer lost
    report = bonuses.pay(settled, author)
    assert report.unconfirmed and Bonus.objects.get().state == "paying"
    standin.release(hold)
    report = bonuses.pay(settled, author)
    assert report.confirmed == [Bonus.objects.get().idempotency_key] and report.paid == []
    assert Bonus.objects.get().state == "paid" and len(standin.payments) == 1


@pytest.mark.django_db
def test_a_pay_call_that_never_arrived_waits_for_the_author_then_pays_once(settled, author, standin, settings):
    settings.PROLIFIC_TIMEOUT_SECONDS = 0.5
    bonuses.plan_for_gold(settled, 0.8, "0.75", author)
    hold = standin.hold(r"/api/v1/bulk-bonus-payments/\w+/pay/", record=False)  # lost on the way
    bonuses.pay(settled, author)
    standin.release(hold)
    # Prolific shows no bonus: the ledger cannot tell "not received" from "not shown yet", so it waits.
    assert bonuses.pay(settled, author).unconfirmed and standin.payments == []
    bonus = Bonus.objects.get()
    assert bonuses.release_unconfirmed(settled, [bonus.pk], author) == 1
    assert bonuses.pay(settled, author).paid == [bonus.idempotency_key]
    assert len(standin.payments) == 1 and len(standin.bonus_setups) == 1


@pytest.mark.django_db
def test_a_refused_pay_call_marks_the_bonus_failed_with_prolifics_reason(settled, author, standin):
    bonuses.plan_for_gold(settled, 0.8, "0.75", author)
    Bonus.objects.update(state="set_up", bulk_id="bulk999999")  # a set-up Prolific does not know
    report = bonuses.pay(settled, author)
    bonus = Bonus.objects.get()
    assert report.failed == [bonus.idempotency_key] and bonus.state == "failed"
    assert "404" in bonus.error and "no bonus set-up bulk999999" in bonus.error
    assert standin.payments == []


# ---------------------------------------------------------------------------- a process killed mid-run


@pytest.fixture(scope="module")
def migrated_database(tmp_path_factory):
    folder = tmp_path_factory.mktemp("crash-db")
    env = {
        **os.environ,
        "DEBUG": "true",
        "NLI_STUDIO_VAR": str(folder),
        "DATABASE_URL": f"sqlite:///{folder / 'db.sqlite3'}",
    }
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=REPO, env=env, check=True, timeout=300)
    return folder / "db.sqlite3"


@pytest.fixture
def own_database(migrated_database, tmp_path, standin):
    """The environment of processes that share a fresh copy of the migrated database and the stand-in."""
    shutil.copy(migrated_database, tmp_path / "db.sqlite3")
    return {
        **os.environ,
        "DEBUG": "true",
        "NLI_STUDIO_VAR": str(tmp_path),
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "PROLIFIC_API_URL": standin.url,
        "DJANGO_SETTINGS_MODULE": "config.settings",
    }


def django_script(env, code: str) -> str:
    script = "import django\ndjango.setup()\n" + textwrap.dedent(code)
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


SEED = f"""
    from annotation.services.projects import create_project
    from core.roles import grant_role
    from django.contrib.auth import get_user_model
    from recruitment.services import studies
    from tests.recruitment.conftest import arrive
    author = get_user_model().objects.create_user("author1", password="x")
    grant_role(author, "author")
    project = create_project("crash", "nli_label", author, status="published", items_per_page=1)
    from dataset_io.services.importers import import_stream
    import io
    rows = open("../shared/data/snli/snli_dev_gold_only.jsonl", encoding="utf-8").readlines()[:4]
    import_stream(project, io.StringIO("".join(rows)), "snli")
    link = studies.save_link(project, author, token={TOKEN!r}, name="Crash", places=2, reward_cents=150)
    link = studies.create_draft(link, "{SITE}", author)
    project.refresh_from_db()
    arrive(project, "PCRASH", pages=2)
    print(link.prolific_study_id)
"""
PLAN = """
    from annotation.models import Project
    from recruitment.services import bonuses, settle, studies
    link = studies.link_of(Project.objects.get(slug="crash"))
    settle.pull(link)
    print(len(bonuses.plan_per_page(link, "0.40", None)))
"""
LEDGER = """
    import json
    from recruitment.models import Bonus
    print(json.dumps(list(Bonus.objects.values_list("state", "bulk_id"))))
"""


def pay_command(env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", "prolific", "crash", "--pay-bonuses", "--json"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def killed_at(env, standin, path_pattern: str) -> None:
    """Run the pay command until the stand-in has taken in a call to `path_pattern` (its answer held back),
    then SIGKILL it: the process dies mid-call, as in a crash or a lost connection."""
    hold = standin.hold(path_pattern, record=True)
    process = pay_command(env)
    try:
        assert hold.reached.wait(120), process.communicate(timeout=5)
    finally:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        standin.release(hold)
    assert process.returncode == -signal.SIGKILL


def prepared(env, standin) -> str:
    study_id = django_script(env, SEED).strip().splitlines()[-1]
    standin.add_submission(study_id, "PCRASH", "APPROVED")
    assert django_script(env, PLAN).strip() == "1"
    return study_id


@pytest.mark.slow
def test_killed_after_prolific_set_the_bonus_up_a_rerun_pays_it_once(own_database, standin):
    prepared(own_database, standin)
    killed_at(own_database, standin, r"/api/v1/submissions/bonus-payments/")
    assert json.loads(django_script(own_database, LEDGER)) == [["planned", ""]]  # the set-up id never came back
    rerun = pay_command(own_database)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert len(json.loads(out.splitlines()[-1])["paid"]) == 1
    assert len(standin.bonus_setups) == 2  # the first set-up is left unpaid on Prolific
    assert len(standin.payments) == 1
    assert json.loads(django_script(own_database, LEDGER)) == [["paid", standin.payments[0]]]


@pytest.mark.slow
def test_killed_while_the_pay_call_was_on_its_way_a_rerun_pays_nothing_more(own_database, standin):
    prepared(own_database, standin)
    killed_at(own_database, standin, r"/api/v1/bulk-bonus-payments/\w+/pay/")
    assert json.loads(django_script(own_database, LEDGER))[0][0] == "paying"
    rerun = pay_command(own_database)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    assert json.loads(out.splitlines()[-1])["confirmed"] and len(standin.payments) == 1
    assert json.loads(django_script(own_database, LEDGER))[0][0] == "paid"
