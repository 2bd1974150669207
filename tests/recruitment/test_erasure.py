"""Erasure: forgetting a Prolific participant removes their Prolific ID from every recruitment table (a dump
of the whole database is searched), from the study's Prolific page and from the admin lists."""

import io

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.services.crowd.participants import forget_participant
from recruitment.models import Bonus, ProlificSubmission
from recruitment.services import bonuses, groups, settle, studies
from tests.recruitment.conftest import SITE, arrive

pytestmark = pytest.mark.django_db
PID = "PFORGETME7"


def test_forgetting_a_participant_leaves_no_trace_of_their_prolific_id(study, author, make_user, standin):
    link = studies.save_link(study, author, workspace_id="ws000001")
    link = studies.create_draft(link, SITE, author)
    study.refresh_from_db()
    arrive(study, PID, pages=2, gold=[True, True, True, True])
    arrive(study, "PKEEP", pages=1, gold=[True, False])
    for participant in (PID, "PKEEP"):
        standin.add_submission(link.prolific_study_id, participant, "APPROVED")
    settle.pull(link)
    bonuses.plan_manual(link, PID, "0.50", "careful work", author, key="k1")
    bonuses.plan_per_page(link, "0.10", author)
    groups.build_group(link, "good ones", 0.8, author)
    bonuses.pay(link, author)

    forget_participant("prolific", PID)

    dump = io.StringIO()
    call_command("dumpdata", exclude=["models_backend"], stdout=dump)  # no participant data there
    assert PID not in dump.getvalue()
    assert "PKEEP" in dump.getvalue()  # the others stay as they were
    # Their rows stay, under the pseudonym their session has, so the settle table still joins them.
    erased = ProlificSubmission.objects.exclude(participant_id="PKEEP").get()
    assert erased.participant_id.startswith("erased-participant-")
    assert set(Bonus.objects.exclude(participant_id="PKEEP").values_list("participant_id", flat=True)) == {
        erased.participant_id
    }
    client = Client()
    client.force_login(author)
    assert PID not in client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
    root = make_user("root", "admin")
    root.is_superuser = True
    root.save()
    admin = Client()
    admin.force_login(root)
    for model in ("prolificsubmission", "bonus", "participantgroup", "webhookevent"):
        page = admin.get(f"/admin/recruitment/{model}/")
        assert page.status_code == 200 and PID not in page.content.decode()
