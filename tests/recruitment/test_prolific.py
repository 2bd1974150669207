"""The Prolific client and the study's Prolific side against the stand-in: the draft study Prolific is sent
(entry URL, places, reward, time, codes and their actions), publish / pause / stop, settling (the joined
table, approvals, rejections, screen-outs, returns, mismatches), participant groups and the dry run."""

import io
import json

import httpx
import pytest
from django.core.management import call_command

from annotation.models import AuditEntry
from recruitment.models import ProlificLink
from recruitment.prolific import ProlificClient, ProlificError, ProlificTimeout
from recruitment.services import groups, settle, studies
from tests.recruitment.conftest import SITE, TOKEN, arrive

pytestmark = pytest.mark.django_db


def created(study, author, standin) -> ProlificLink:
    return studies.create_draft(studies.link_of(study), SITE, author)


def test_the_draft_study_carries_the_entry_url_the_codes_and_their_actions(study, author, standin):
    link = created(study, author, standin)
    (call,) = standin.calls_to("POST", "/api/v1/studies/")
    body = call.body
    assert body["external_study_url"] == (
        f"{SITE}/enter/wave-one/?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
        "&SESSION_ID={{%SESSION_ID%}}"
    )
    assert (body["total_available_places"], body["reward"], body["estimated_completion_time"]) == (3, 150, 8)
    assert body["prolific_id_option"] == "url_parameters"
    codes = {code["code_type"]: code for code in body["completion_codes"]}
    assert codes["COMPLETED"]["actions"] == [{"action": "MANUALLY_REVIEW"}]
    assert codes["FIXED_SCREENOUT"]["actions"] == [
        {"action": "FIXED_SCREEN_OUT_PAYMENT", "fixed_screen_out_reward": 20, "slots": 3}
    ]
    assert codes["OTHER"]["actions"][0]["action"] == "REQUEST_RETURN"
    # The codes participants are shown here are the ones Prolific acts on.
    study.refresh_from_db()
    assert study.options["completion_code"] == codes["COMPLETED"]["code"] == link.completed_code
    assert study.options["returned_code"] == codes["OTHER"]["code"]
    assert link.state == "draft" and link.prolific_study_id in standin.studies
    with pytest.raises(studies.RecruitmentError, match="already on Prolific"):
        studies.create_draft(link, SITE, author)


def test_auto_approve_is_sent_as_prolifics_action(study, author, standin):
    studies.save_link(study, author, auto_approve=True, screen_out_reward_cents=0)
    created(study, author, standin)
    codes = standin.calls_to("POST", "/api/v1/studies/")[0].body["completion_codes"]
    assert [code["code_type"] for code in codes] == ["COMPLETED", "OTHER"]
    assert codes[0]["actions"] == [{"action": "AUTOMATICALLY_APPROVE"}]


def test_bad_study_fields_are_refused_naming_the_field_and_nothing_is_stored(study, author):
    before = ProlificLink.objects.get(project=study)
    with pytest.raises(studies.RecruitmentError, match="screen_out_reward_cents"):
        studies.save_link(study, author, screen_out_reward_cents=500)
    with pytest.raises(studies.RecruitmentError, match="places"):
        studies.save_link(study, author, places=0)
    with pytest.raises(studies.RecruitmentError, match="unknown field"):
        studies.save_link(study, author, token_hint="x")
    after = ProlificLink.objects.get(project=study)
    assert (after.places, after.screen_out_reward_cents) == (before.places, before.screen_out_reward_cents)


def test_publish_pause_and_stop_move_both_sides(study, author, standin):
    link = created(study, author, standin)
    for action, prolific_status, project_status in (
        ("publish", "ACTIVE", "published"),
        ("pause", "PAUSED", "paused"),
        ("start", "ACTIVE", "published"),
        ("stop", "COMPLETED", "closed"),
    ):
        studies.transition(link, action, author)
        study.refresh_from_db()
        assert standin.studies[link.prolific_study_id]["status"] == prolific_status
        assert study.status == project_status
    actions = [call.body["action"] for call in standin.calls_to("POST", r"/api/v1/studies/\w+/transition/")]
    assert actions == ["PUBLISH", "PAUSE", "START", "STOP"]
    assert AuditEntry.objects.filter(action="prolific", details__operation="stop", project=study).exists()


def test_prolifics_refusal_reaches_the_author_with_its_reason(study, author, standin):
    link = created(study, author, standin)
    studies.transition(link, "publish", author)
    with pytest.raises(ProlificError, match=r"400.*only an unpublished study"):
        studies.transition(link, "publish", author)


def test_a_wrong_token_is_refused_and_the_error_does_not_carry_it(study, author, standin):
    studies.save_link(study, author, token="not-the-right-one")
    with pytest.raises(ProlificError) as refused:
        created(study, author, standin)
    assert refused.value.status == 401
    assert "not-the-right-one" not in str(refused.value) and "not-the-right-one" not in repr(
        ProlificClient("not-the-right-one")
    )


def test_the_stand_in_refuses_a_payload_shape_the_api_does_not_take(standin):
    client = ProlificClient(TOKEN, base_url=standin.url)
    with pytest.raises(ProlificError, match=r"400.*colour"):
        client.create_study({"name": "x", "colour": "red"})
    with pytest.raises(ProlificError, match=r"404.*not an endpoint"):
        client._call("GET", "/api/v1/studies/x/unknown/")


def test_submissions_are_read_page_after_page(study, author, standin):
    link = created(study, author, standin)
    for number in range(230):
        standin.add_submission(link.prolific_study_id, f"P{number:04d}", "AWAITING REVIEW")
    assert settle.pull(link) == 230
    pages = standin.calls_to("GET", r"/api/v1/studies/\w+/submissions/")
    assert [call.path.split("offset=")[1] for call in pages] == ["0", "100", "200"]
    assert link.submissions.count() == 230


def test_a_call_without_an_answer_in_time_is_a_timeout(study, author, standin, settings):
    settings.PROLIFIC_TIMEOUT_SECONDS = 0.5
    link = created(study, author, standin)
    standin.hold(r"/api/v1/studies/\w+/transition/", record=True)
    with pytest.raises(ProlificTimeout):
        studies.transition(link, "publish", author)


# ---------------------------------------------------------------------------- settling


@pytest.fixture
def three_arrivals(study, author, standin):
    """The journey's three participants: one completes (3 gold checks right), one gives up after a page, one
    is screened out by Prolific's code; plus a code shown here to someone Prolific has no submission of."""
    link = created(study, author, standin)
    studies.transition(link, "publish", author)
    study.refresh_from_db()  # the codes the study now shows
    done = arrive(study, "PDONE", pages=1, gold=[True, True, True])
    gave_up = arrive(study, "PGAVEUP", gold=[True, False])
    arrive(study, "PSCREEN")
    ghost = arrive(study, "PGHOST", pages=1, gold=[False])
    ids = {
        "done": standin.add_submission(link.prolific_study_id, "PDONE", "AWAITING REVIEW", done.completion_code),
        "gave_up": standin.add_submission(link.prolific_study_id, "PGAVEUP", "ACTIVE"),
        "screen": standin.add_submission(link.prolific_study_id, "PSCREEN", "ACTIVE"),
        "stranger": standin.add_submission(link.prolific_study_id, "PSTRANGER", "AWAITING REVIEW", "WRONG"),
    }
    assert gave_up.completion_code == "" and ghost.completion_code
    settle.pull(link)
    return link, ids


def test_the_settle_table_joins_prolifics_state_with_ours(three_arrivals):
    link, _ = three_arrivals
    rows = {row.participant_id: row for row in settle.table(link)}
    done = rows["PDONE"]
    assert (done.status, done.pages, done.answers_kept, done.gold_accuracy) == ("AWAITING REVIEW", 1, 2, 1.0)
    assert done.code_shown == link.project.options["completion_code"] and done.arrived is not None
    assert rows["PGAVEUP"].gold_accuracy == 0.5 and rows["PGAVEUP"].pages == 0
    assert rows["PSTRANGER"].arrived is None
    mismatched = {row.participant_id: row.mismatch for row in settle.mismatches(list(rows.values()))}
    assert mismatched == {
        "PGHOST": "shown the completion code here, no submission on Prolific",
        "PSTRANGER": "finished on Prolific, never shown the completion code here",
    }


def test_approve_reject_screen_out_and_return_reach_prolific_and_the_audit_log(three_arrivals, author, standin):
    link, ids = three_arrivals
    with pytest.raises(studies.RecruitmentError, match="only submissions awaiting review"):
        settle.approve(link, [ids["done"], ids["gave_up"]], author)
    assert settle.approve(link, [ids["done"]], author) == 1
    assert standin.submissions[ids["done"]]["status"] == "APPROVED"
    short = "Your code was wrong."
    with pytest.raises(studies.RecruitmentError, match="at least 100 characters"):
        settle.reject(link, ids["stranger"], "BAD_CODE", short, author)
    with pytest.raises(studies.RecruitmentError, match="category"):
        settle.reject(link, ids["stranger"], "RUDE", short * 6, author)
    message = "The completion code you entered is not the one this study shows at its end. " * 2
    settle.reject(link, ids["stranger"], "BAD_CODE", message, author)
    settle.screen_out(link, ids["screen"], author)
    settle.request_return(link, ids["gave_up"], "You stopped after the first page.", author)
    assert standin.submissions[ids["stranger"]]["status"] == "REJECTED"
    assert standin.submissions[ids["screen"]]["status"] == "SCREENED OUT"
    assert standin.calls_to("POST", rf"/api/v1/submissions/{ids['gave_up']}/request-return/")
    statuses = dict(link.submissions.values_list("submission_id", "status"))
    assert (statuses[ids["done"]], statuses[ids["screen"]]) == ("APPROVED", "SCREENED OUT")
    logged = list(AuditEntry.objects.filter(project=link.project, action="prolific").values_list("details", flat=True))
    for operation in ("approve", "reject", "screen-out", "return"):
        assert operation in [details["operation"] for details in logged]
    rejection = AuditEntry.objects.get(action="prolific", details__operation="reject")
    assert rejection.details["category"] == "BAD_CODE" and message not in json.dumps(rejection.details)


def test_a_submission_of_another_study_is_refused(three_arrivals, author, standin):
    link, _ = three_arrivals
    with pytest.raises(studies.RecruitmentError, match="not a submission of this study: nope"):
        settle.screen_out(link, "nope", author)
    assert not standin.calls_to("POST", r"/api/v1/submissions/nope/transition/")


# ---------------------------------------------------------------------------- participant groups


def test_a_group_of_good_workers_is_built_updated_and_used_in_the_next_wave(
    three_arrivals, author, standin, make_project
):
    link, _ = three_arrivals
    with pytest.raises(studies.RecruitmentError, match="workspace_id: Prolific keeps a participant group"):
        groups.build_group(link, "wave one, gold >= 0.8", 0.8, author)
    assert standin.groups == {}
    link = studies.save_link(link.project, author, workspace_id="ws000001")
    group = groups.build_group(link, "wave one, gold >= 0.8", 0.8, author)
    assert standin.calls_to("POST", "/api/v1/participant-groups/")[-1].body["workspace_id"] == "ws000001"
    assert standin.groups[group.prolific_group_id]["members"] == ["PDONE"] == group.participant_ids
    # More gold answers later: the same group is brought up to date, not made twice.
    from annotation.services.quality import record_gold_answers

    gave_up = link.project.crowd_sessions.get(participant_id="PGAVEUP")
    record_gold_answers(link.project, gave_up.worker, [True] * 8)
    groups.build_group(link, "wave one, gold >= 0.8", 0.8, author)
    assert len(standin.groups) == 1
    assert sorted(standin.groups[group.prolific_group_id]["members"]) == ["PDONE", "PGAVEUP"]

    wave_two = make_project("nli_label", slug="wave-two")
    next_link = studies.save_link(wave_two, author, token=TOKEN, name="Wave two", reward_cents=150)
    groups.use_group(next_link, group, "allow", author)
    studies.create_draft(next_link, SITE, author)
    body = standin.calls_to("POST", "/api/v1/studies/")[-1].body
    assert body["filters"] == [
        {"filter_id": "participant_group_allowlist", "selected_values": [group.prolific_group_id]}
    ]


# ---------------------------------------------------------------------------- dry run


def test_the_dry_run_prints_the_exact_requests_with_the_token_redacted_and_changes_nothing(study, standin):
    out = io.StringIO()
    call_command("prolific", study.slug, "--dry-run", "--site", SITE, stdout=out)
    printed = out.getvalue()
    assert TOKEN not in printed and "Authorization: Token ********" in printed
    assert f"POST {standin.url}/api/v1/studies/" in printed
    assert "POST " + standin.url + "/api/v1/studies/DRY-RUN-STUDY/transition/" in printed
    create = printed.split("\n\n")[0].splitlines()
    assert create[:3] == [
        f"POST {standin.url}/api/v1/studies/",
        "Authorization: Token ********",
        "Content-Type: application/json",
    ]
    body = json.loads("\n".join(create[3:]))
    assert body["reward"] == 150 and body["total_available_places"] == 3
    assert standin.calls == []  # nothing was sent
    study.refresh_from_db()
    assert study.options["completion_code"] == "" and study.prolific_link.state == "linked"
    assert not AuditEntry.objects.filter(action="prolific", details__operation="create").exists()


def test_the_client_sends_the_token_only_in_the_authorization_header():
    seen = []

    def handle(request):
        seen.append(request)
        return httpx.Response(200, json={"id": "s1", "status": "ACTIVE"})

    client = ProlificClient(TOKEN, base_url="https://api.example", transport=httpx.MockTransport(handle))
    client.transition_study("s1", "PAUSE")
    (request,) = seen
    assert request.headers["Authorization"] == f"Token {TOKEN}"
    assert TOKEN not in str(request.url) and TOKEN.encode() not in request.content
