"""Paid waves (issue 53, item 3) against the Prolific stand-in: a cloned wave starts with the earlier wave in
Prolific's previous-studies blocklist and turns away, at its entry link, the earlier participants its author
keeps out (no session, no qualification attempt); bonus rules and groups skip participants rejected, returned
or asked to return, and a bonus by hand to one of them needs a confirmation; the settle table has a row per
submission and shows the code each participant was given (completed, screened out or returned)."""

import pytest
from django.test import Client

from annotation.models import CrowdSession, QualificationAttempt
from annotation.services import qualification
from annotation.services.projects import clone_project
from recruitment.models import Bonus, KeepOut, ProlificLink
from recruitment.services import bonuses, groups, settle, studies
from tests.recruitment.conftest import SITE, TOKEN, arrive

pytestmark = pytest.mark.django_db

REJECTION = "Your answers did not follow the instructions given on the first page of the study, sorry. " * 2


@pytest.fixture
def wave_one(study, author, standin):
    """Wave 1 on Prolific and settled: one approved, one rejected, one screened out, one returned, one asked to
    return (still awaiting review), each with a page done and every gold check right."""
    link = studies.create_draft(studies.link_of(study), SITE, author)
    studies.transition(link, "publish", author)
    study.refresh_from_db()
    ids = {}
    for pid in ("PGOOD", "PREJECT", "PSCREEN", "PRETURN", "PASKED"):
        session = arrive(study, pid, pages=1, gold=[True, True, True])
        ids[pid] = standin.add_submission(link.prolific_study_id, pid, "AWAITING REVIEW", session.completion_code)
    settle.pull(link)
    settle.approve(link, [ids["PGOOD"]], author)
    settle.reject(link, ids["PREJECT"], "FAILED_INSTRUCTIONS", REJECTION, author)
    settle.screen_out(link, ids["PSCREEN"], author)
    standin.submissions[ids["PRETURN"]]["status"] = "RETURNED"
    settle.pull(link)
    settle.request_return(link, ids["PASKED"], "You stopped before the end.", author)
    return link, ids


def wave_two(wave_one, author, slug: str = "wave-two") -> ProlificLink:
    link, _ = wave_one
    clone = clone_project(link.project, slug, author, with_items=True)
    studies.save_link(clone, author, token=TOKEN)
    return studies.create_draft(studies.link_of(clone), SITE, author)


def entry(link: ProlificLink, pid: str):
    query = f"PROLIFIC_PID={pid}&STUDY_ID={link.prolific_study_id}&SESSION_ID=s2-{pid}"
    return Client().get(f"/enter/{link.project.slug}/?{query}")


# ---------------------------------------------------------------------------- (b) the next wave


def test_a_clone_prefills_the_blocklist_with_the_earlier_waves_and_keeps_no_secret(wave_one, author, standin):
    link, _ = wave_one
    clone = clone_project(link.project, "wave-two", author)
    second = ProlificLink.objects.get(project=clone)
    assert second.blocked_studies == [link.prolific_study_id] == second.earlier_waves
    assert (second.places, second.reward_cents, second.screen_out_reward_cents) == (3, 150, 20)
    assert second.keep_out == KeepOut.ALL and second.token_encrypted == "" and second.prolific_study_id == ""
    assert (second.completed_code, second.state) == ("", ProlificLink.State.LINKED)
    # Its page shows the blocklist filled in and the choice of whom the entry link keeps out.
    client = Client()
    client.force_login(author)
    page = client.get(f"/recruitment/projects/{clone.slug}/prolific/").content.decode()
    assert f"{link.prolific_study_id}\n</textarea>" in page and 'name="keep_out"' in page
    # Created with the token its author enters: the blocklist goes to Prolific.
    created = wave_two(wave_one, author, slug="wave-three")
    body = standin.calls_to("POST", "/api/v1/studies/")[-1].body
    assert {"filter_id": "previous_studies_blocklist", "selected_values": [link.prolific_study_id]} in body["filters"]
    # A clone of the clone keeps both earlier waves out.
    third = ProlificLink.objects.get(project=clone_project(created.project, "wave-four", author))
    assert third.earlier_waves == [link.prolific_study_id, created.prolific_study_id] == third.blocked_studies


def test_a_study_without_a_prolific_link_is_cloned_without_one(make_project, author):
    plain = make_project("nli_label", slug="plain")
    assert not ProlificLink.objects.filter(project=clone_project(plain, "plain-two", author)).exists()


@pytest.mark.parametrize(
    ("keep_out", "turned_away"),
    [
        (KeepOut.REJECTED, {"PREJECT"}),
        (KeepOut.SCREENED_OUT, {"PSCREEN"}),
        (KeepOut.RETURNED, {"PRETURN", "PASKED"}),
        (KeepOut.ALL, {"PGOOD", "PREJECT", "PSCREEN", "PRETURN", "PASKED"}),
        (KeepOut.NONE, set()),
    ],
)
def test_the_entry_link_turns_away_the_earlier_participants_chosen(wave_one, author, standin, keep_out, turned_away):
    second = wave_two(wave_one, author)
    studies.save_link(second.project, author, keep_out=keep_out)
    studies.transition(second, "publish", author)
    second.project.qualification = qualification.create_test(
        "wave-two-q", "nli_label", [{"premise": "P", "hypothesis": "H", "reference": "e"}]
    )
    second.project.save()
    for pid in ("PGOOD", "PREJECT", "PSCREEN", "PRETURN", "PASKED", "PNEW"):
        response = entry(second, pid)
        if pid in turned_away:
            text = response.content.decode()
            assert response.status_code == 403 and 'data-reason="kept-out"' in text, pid
            assert "earlier wave of this study" in text and second.returned_code in text
        else:
            assert response.status_code == 302, pid  # on to the qualification test
    taken = set(CrowdSession.objects.filter(project=second.project).values_list("participant_id", flat=True))
    assert taken == {"PGOOD", "PREJECT", "PSCREEN", "PRETURN", "PASKED", "PNEW"} - turned_away
    assert not QualificationAttempt.objects.filter(worker__crowd_sessions__participant_id__in=turned_away).exists()


def test_a_keep_out_choice_that_is_not_one_is_refused_naming_the_field(wave_one, author):
    second = wave_two(wave_one, author)
    client = Client()
    client.force_login(author)
    response = client.post(f"/recruitment/projects/{second.project.slug}/prolific/link/", {"keep_out": "friends"})
    assert response.status_code == 400 and "keep_out: one of" in response.content.decode()
    assert ProlificLink.objects.get(pk=second.pk).keep_out == KeepOut.ALL


# ---------------------------------------------------------------------------- (c) bonuses and groups


def test_bonus_rules_and_groups_skip_the_rejected_the_returned_and_those_asked_to_return(wave_one, author, standin):
    link, _ = wave_one
    assert settle.set_aside(link) == {"PREJECT", "PRETURN", "PASKED"}
    assert [bonus.participant_id for bonus in bonuses.plan_per_page(link, "0.25", author)] == ["PGOOD", "PSCREEN"]
    assert [bonus.participant_id for bonus in bonuses.plan_for_gold(link, 0.8, "1.00", author)] == ["PGOOD", "PSCREEN"]
    link = studies.save_link(link.project, author, workspace_id="ws000001")
    group = groups.build_group(link, "good workers", 0.8, author)
    assert group.participant_ids == ["PGOOD", "PSCREEN"] == standin.groups[group.prolific_group_id]["members"]


def test_a_bonus_by_hand_to_a_rejected_participant_needs_a_confirmation(wave_one, author):
    link, _ = wave_one
    client = Client()
    client.force_login(author)
    url = f"/recruitment/projects/{link.project.slug}/prolific/bonuses/"
    form = {"rule": "manual", "participant": "PREJECT", "amount": "2.00", "reason": "good explanations", "key": "k1"}
    page = client.post(url, form, follow=True).content.decode()
    assert "PREJECT was rejected, returned the study or was asked to return it (rejected)" in page
    assert "tick &#x27;pay them all the same&#x27;" in page and not Bonus.objects.exists()
    with pytest.raises(bonuses.SetAsideBonus, match="asked to return it"):
        bonuses.plan_manual(link, "PASKED", "1.00", "thanks", author)
    assert not Bonus.objects.exists()
    client.post(url, {**form, "set_aside": "1"})
    (bonus,) = Bonus.objects.all()
    assert (bonus.participant_id, bonus.amount, bonus.state) == ("PREJECT", 2, Bonus.State.PLANNED)
    # A participant in good standing needs no confirmation.
    assert bonuses.plan_manual(link, "PGOOD", "1.00", "thanks", author)


# ---------------------------------------------------------------------------- (d) the settle table


def test_every_submission_is_a_row_and_every_code_given_is_shown(study, author, standin):
    study.qualification = qualification.create_test(
        "settle-q", "nli_label", [{"premise": "P", "hypothesis": "H", "reference": "e"}], max_attempts=1
    )
    study.save()
    link = studies.create_draft(studies.link_of(study), SITE, author)
    studies.transition(link, "publish", author)
    study.refresh_from_db()
    failed = arrive(study, "PFAIL")
    QualificationAttempt.objects.create(test=study.qualification, worker=failed.worker, answers={}, passed=False)
    stopped = arrive(study, "PSTOP")
    QualificationAttempt.objects.create(test=study.qualification, worker=stopped.worker, answers={}, passed=True)
    at_test = arrive(study, "PTEST")
    assert at_test.completion_code == ""
    first = standin.add_submission(link.prolific_study_id, "PSTOP", "RETURNED", link.returned_code)
    again = standin.add_submission(link.prolific_study_id, "PSTOP", "AWAITING REVIEW", link.returned_code)
    standin.add_submission(link.prolific_study_id, "PFAIL", "ACTIVE")
    settle.pull(link)
    rows = settle.table(link)
    stops = [row for row in rows if row.participant_id == "PSTOP"]
    assert {row.submission.submission_id for row in stops} == {first, again} and len(rows) == 4
    shown = {row.participant_id: (row.code_shown, row.code_kind) for row in rows}
    assert shown["PFAIL"] == (link.screened_out_code, "screened out")
    assert shown["PSTOP"] == (link.returned_code, "returned")
    assert shown["PTEST"] == ("", "")  # still at the test: given nothing yet
    # A code for leaving owes nothing: only the submission finished with no completion code shown is a mismatch.
    assert {(row.participant_id, row.status, row.mismatch) for row in settle.mismatches(rows)} == {
        ("PSTOP", "AWAITING REVIEW", "finished on Prolific, never shown the completion code here")
    }
    client = Client()
    client.force_login(author)
    page = client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
    assert f"<code>{link.screened_out_code}</code> (screened out)" in page
    assert page.count(f"<code>{link.returned_code}</code> (returned)") == 2
    assert f'data-submission="{first}"' in page and f'data-submission="{again}"' in page
