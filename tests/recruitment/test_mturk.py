"""MTurk's requester API (recruitment/mturk.py): every call is checked by botocore's Stubber against the real
MTurk service model shipped in botocore (parameters and responses), or sent, signed, to a local stand-in of
the requester endpoint on 127.0.0.1. No network reaches AWS from the tests."""

import io
import json
import logging
import re
import threading
import time
import xml.etree.ElementTree as ET
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from botocore.stub import ANY, Stubber
from django.core.management import CommandError, call_command

from annotation.models import AuditEntry, CrowdSession
from annotation.services.crowd import crowd
from recruitment import mturk
from recruitment.mturk import HitRequest, MTurkError, Requester, unique_request_token

ACCESS_KEY_ID = "AKIATESTKEYID7Q3ZX9P"
SECRET_ACCESS_KEY = "test/Secret+Access+Key/never-shown-0123456789"
WORKER = "A2WORKER77"
HIT = "3HITID0001"
ASSIGNMENT = "3ASSIGN0001"
SITE = "https://nli.example.org/"  # this server's public address, as the command's --site gives it
NAMESPACE = {"mt": mturk.EXTERNAL_QUESTION_SCHEMA}


@pytest.fixture(autouse=True)
def _keys(settings):
    settings.MTURK_ACCESS_KEY_ID = ACCESS_KEY_ID
    settings.MTURK_SECRET_ACCESS_KEY = SECRET_ACCESS_KEY
    settings.MTURK_SANDBOX = True


@pytest.fixture
def stubbed():
    """A real boto3 MTurk client whose calls botocore's Stubber answers; each test asserts every expected
    call was made."""
    client = mturk.requester_client()
    with Stubber(client) as stubber:
        yield client, stubber
        stubber.assert_no_pending_responses()


@pytest.fixture
def study(make_project):
    return make_project("nli_label", slug="mturk-study")


@pytest.fixture
def arrival(study):
    """A worker who accepted the HIT and arrived through the study's entry link (its ExternalQuestion)."""
    return crowd.enter(study, {"workerId": WORKER, "hitId": HIT, "assignmentId": ASSIGNMENT})


def offer(**changes):
    fields = {
        "title": "Label sentence pairs",
        "description": "Read a premise and a hypothesis; say whether one follows from the other.",
        "reward": Decimal("1.50"),
        "max_assignments": 9,
        "lifetime_seconds": 3 * 24 * 3600,
        "assignment_duration_seconds": 3600,
    }
    return HitRequest(**{**fields, **changes})


def hit_response(hit_id=HIT):
    return {"HIT": {"HITId": hit_id, "HITTypeId": "3TYPE0001", "HITGroupId": "3GROUP0001"}}


def audit_text():
    return json.dumps([entry.details for entry in AuditEntry.objects.all()])


def test_the_endpoint_is_the_sandbox_unless_the_setting_says_production(settings):
    assert mturk.requester_client().meta.endpoint_url == "https://mturk-requester-sandbox.us-east-1.amazonaws.com"
    settings.MTURK_SANDBOX = False
    assert mturk.requester_client().meta.endpoint_url == "https://mturk-requester.us-east-1.amazonaws.com"


# ---------------------------------------------------------------------------------------------- HITs


def test_a_hit_shows_the_studys_entry_link_in_an_external_question(study, stubbed, settings):
    settings.MTURK_FRAME_HEIGHT = 720
    client, stubber = stubbed
    requirement = {
        "QualificationTypeId": "000000000000000000L0",
        "Comparator": "GreaterThanOrEqualTo",
        "IntegerValues": [95],
        "ActionsGuarded": "Accept",
    }
    the_offer = offer(qualification_requirements=(requirement,), keywords="nli, sentences")
    expected = {
        "Title": the_offer.title,
        "Description": the_offer.description,
        "Reward": "1.50",
        "MaxAssignments": 9,
        "LifetimeInSeconds": 259200,
        "AssignmentDurationInSeconds": 3600,
        "AutoApprovalDelayInSeconds": 259200,
        "Keywords": "nli, sentences",
        "QualificationRequirements": [requirement],
        "Question": ANY,
        "RequesterAnnotation": study.slug,
        "UniqueRequestToken": unique_request_token("CreateHIT", the_offer.key(study)),
    }
    stubber.add_response("create_hit", hit_response(), expected)
    sent = {}
    client.meta.events.register("before-parameter-build.mturk.CreateHIT", lambda params, **_: sent.update(params))

    hit_id = Requester(client=client).create_hit(study, the_offer, SITE)

    assert hit_id == HIT
    question = ET.fromstring(sent["Question"])
    assert question.tag == f"{{{mturk.EXTERNAL_QUESTION_SCHEMA}}}ExternalQuestion"
    assert question.find("mt:ExternalURL", NAMESPACE).text == "https://nli.example.org/enter/mturk-study/"
    assert question.find("mt:FrameHeight", NAMESPACE).text == "720"
    entry = AuditEntry.objects.get()
    assert (entry.action, entry.project, entry.actor_name) == ("mturk", study, "command line")
    assert entry.details["operation"] == "CreateHIT" and entry.details["hit"] == HIT
    assert entry.details["sandbox"] is True and entry.details["reward"] == "1.50"


def test_the_same_hit_retried_is_created_once(study, stubbed):
    client, stubber = stubbed
    stubber.add_response(
        "create_hit", hit_response(), {"UniqueRequestToken": ANY, **dict.fromkeys(CREATE_HIT_FIELDS, ANY)}
    )
    requester = Requester(client=client)
    requester.create_hit(study, offer(), SITE)
    # Run again (the command line after a timeout, say): the audit log knows the HIT; nothing is sent.
    with pytest.raises(MTurkError, match=f"HIT {HIT} was already created"):
        requester.create_hit(study, offer(), SITE)
    # Another key is another HIT, with another token.
    stubber.add_response(
        "create_hit", hit_response("3HITID0002"), {"UniqueRequestToken": ANY, **dict.fromkeys(CREATE_HIT_FIELDS, ANY)}
    )
    assert requester.create_hit(study, offer(), SITE, key="wave 2") == "3HITID0002"
    tokens = {entry.details["token"] for entry in AuditEntry.objects.all()}
    assert len(tokens) == 2 and all(len(token) == 64 for token in tokens)


CREATE_HIT_FIELDS = (
    "Title",
    "Description",
    "Reward",
    "MaxAssignments",
    "LifetimeInSeconds",
    "AssignmentDurationInSeconds",
    "AutoApprovalDelayInSeconds",
    "Question",
    "RequesterAnnotation",
)


@pytest.mark.parametrize(
    ("study_settings", "site", "changes", "message"),
    [
        ({"status": "draft"}, SITE, {}, "is draft: publish it"),
        ({"audience": "prolific"}, SITE, {}, "takes no MTurk arrivals .its audience: arrivals through a Prolific"),
        ({"audience": "members"}, SITE, {}, "takes no MTurk arrivals"),
        ({}, "http://nli.example.org", {}, "must use https"),
        ({}, SITE, {"reward": "1.555"}, "at most two decimals"),
        ({}, SITE, {"reward": "0"}, "more than 0"),
        ({}, SITE, {"max_assignments": 0}, "assignments must be 1"),
    ],
)
def test_a_hit_that_cannot_work_is_refused_before_any_call(
    make_project, stubbed, study_settings, site, changes, message
):
    client, _ = stubbed  # nothing stubbed: a call would fail the test
    project = make_project("nli_label", slug="mturk-study", **study_settings)
    with pytest.raises(MTurkError, match=message):
        Requester(client=client).create_hit(project, offer(**changes), site)
    assert not AuditEntry.objects.exists()


def test_the_entry_url_is_escaped_in_the_xml_and_read_back_whole():
    url = "https://nli.example.org/enter/mturk-study/?batch=1&lang=en"
    question = ET.fromstring(mturk.external_question(url, 0))
    assert "&amp;" in mturk.external_question(url, 0)
    assert question.find("mt:ExternalURL", NAMESPACE).text == url
    assert question.find("mt:FrameHeight", NAMESPACE).text == "0"


def test_mturks_own_model_refuses_a_malformed_qualification_requirement(study, stand_in):
    broken = offer(qualification_requirements=({"Comparator": "Exists"},))
    requester = Requester(client=mturk.requester_client(endpoint_url=stand_in))
    with pytest.raises(
        MTurkError, match=re.escape('Missing required parameter in QualificationRequirements[0]: "QualificationTypeId"')
    ):
        requester.create_hit(study, broken, SITE)
    assert StandIn.seen == [] and not AuditEntry.objects.exists()


def test_a_hits_assignments_are_read_page_by_page(stubbed):
    client, stubber = stubbed

    def assignment(number, status="Submitted"):
        return {
            "AssignmentId": f"3ASSIGN000{number}",
            "WorkerId": f"A2WORKER{number}",
            "HITId": HIT,
            "AssignmentStatus": status,
            "Answer": "<QuestionFormAnswers/>",
        }

    query = {"HITId": HIT, "MaxResults": mturk.PAGE_SIZE, "AssignmentStatuses": ["Submitted", "Approved"]}
    stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment(1), assignment(2, "Approved")], "NextToken": "page-2", "NumResults": 2},
        query,
    )
    stubber.add_response(
        "list_assignments_for_hit",
        {"Assignments": [assignment(3)], "NumResults": 1},
        {**query, "NextToken": "page-2"},
    )
    found = list(Requester(client=client).assignments(HIT, ("Submitted", "Approved")))
    assert [a["AssignmentId"] for a in found] == ["3ASSIGN0001", "3ASSIGN0002", "3ASSIGN0003"]
    with pytest.raises(MTurkError, match="HIT ID 'hit-1' is not an MTurk HIT ID"):
        list(Requester(client=client).assignments("hit-1"))


# ------------------------------------------------------------------------------- approve and reject


def test_approving_and_rejecting_send_mturks_parameters_and_are_audited_under_a_pseudonym(arrival, stubbed):
    client, stubber = stubbed
    stubber.add_response("approve_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": "Thank you!"})
    stubber.add_response("approve_assignment", {}, {"AssignmentId": "3OTHER0001"})
    stubber.add_response(
        "reject_assignment", {}, {"AssignmentId": ASSIGNMENT, "RequesterFeedback": "Gold checks: 1 of 6 right."}
    )
    requester = Requester(client=client)
    requester.approve(ASSIGNMENT, "  Thank you!  ")
    requester.approve("3OTHER0001")  # an assignment that never came through the entry link
    requester.reject(ASSIGNMENT, "Gold checks: 1 of 6 right.")

    entries = list(AuditEntry.objects.order_by("id"))
    assert [e.details["operation"] for e in entries] == ["ApproveAssignment", "ApproveAssignment", "RejectAssignment"]
    assert entries[0].project == arrival.project and entries[0].details["participant"] == f"w{arrival.worker_id}"
    assert entries[1].project is None and entries[1].details["participant"] == "not matched to a participant"
    assert entries[2].details["feedback"] == "Gold checks: 1 of 6 right."
    # MTurk IDs are personal data: erasing the participant must leave none behind in the audit log.
    assert WORKER not in audit_text() and ASSIGNMENT not in audit_text() and "3OTHER0001" not in audit_text()


@pytest.mark.parametrize(
    ("assignment", "feedback", "message"),
    [
        (ASSIGNMENT, "   ", "needs feedback"),
        (ASSIGNMENT, "x" * 1025, "1025 characters; MTurk takes at most 1024"),
        ("3assign-1", "Too fast.", "assignment ID '3assign-1' is not an MTurk assignment ID"),
    ],
)
def test_a_rejection_mturk_would_refuse_is_refused_here_first(stubbed, db, assignment, feedback, message):
    client, _ = stubbed
    with pytest.raises(MTurkError, match=message):
        Requester(client=client).reject(assignment, feedback)
    assert not AuditEntry.objects.exists()


def test_mturks_refusal_is_reported_with_its_reason_and_nothing_is_audited(stubbed, db):
    client, stubber = stubbed
    stubber.add_client_error(
        "approve_assignment",
        service_error_code="RequestError",
        service_message="This operation can be called with a status of: Submitted",
        http_status_code=400,
        expected_params={"AssignmentId": ASSIGNMENT},
    )
    with pytest.raises(MTurkError, match="MTurk refused ApproveAssignment: This operation can be called"):
        Requester(client=client).approve(ASSIGNMENT)
    assert not AuditEntry.objects.exists()


# ---------------------------------------------------------------------------------------------- bonuses


def bonus_params(token, amount="0.50"):
    return {
        "WorkerId": WORKER,
        "AssignmentId": ASSIGNMENT,
        "BonusAmount": amount,
        "Reason": "Gold accuracy 0.9",
        "UniqueRequestToken": token,
    }


def test_a_bonus_retried_is_paid_once_with_the_same_token(arrival, stubbed, settings):
    client, stubber = stubbed
    token = unique_request_token("SendBonus", f"{WORKER}:{ASSIGNMENT}:0.50")
    stubber.add_response("send_bonus", {}, bonus_params(token))
    assert Requester(client=client).send_bonus(WORKER, ASSIGNMENT, "0.5", "Gold accuracy 0.9") is True
    # The same bonus again, written "0.50" this time: the audit log knows its token, nothing is sent.
    assert Requester(client=client).send_bonus(WORKER, ASSIGNMENT, "0.50", "Gold accuracy 0.9") is False
    entry = AuditEntry.objects.get()
    assert entry.project == arrival.project and entry.actor is None
    assert entry.details == {
        "operation": "SendBonus",
        "sandbox": True,
        "participant": f"w{arrival.worker_id}",
        "token": token,
        "amount": "0.50",
        "already_processed": False,
    }
    # A sandbox rehearsal does not stand for production: there the same bonus is paid.
    settings.MTURK_SANDBOX = False
    stubber.add_response("send_bonus", {}, bonus_params(token))
    assert Requester(client=client).send_bonus(WORKER, ASSIGNMENT, "0.50", "Gold accuracy 0.9") is True
    assert Requester(client=client).send_bonus(WORKER, ASSIGNMENT, "0.50", "Gold accuracy 0.9") is False
    assert [e.details["sandbox"] for e in AuditEntry.objects.order_by("id")] == [True, False]
    # A second bonus of the same amount is another key, so another token.
    other = unique_request_token("SendBonus", "second bonus")
    assert other != token
    stubber.add_response("send_bonus", {}, bonus_params(other))
    assert Requester(client=client).send_bonus(WORKER, ASSIGNMENT, "0.50", "Gold accuracy 0.9", key="second bonus")


def test_a_bonus_whose_answer_was_lost_is_not_paid_again(arrival, stubbed):
    """A process sent the bonus and died before it wrote anything (a timeout, a crash): the rerun sends the
    same token, MTurk refuses it as already processed, and that counts as paid."""
    client, stubber = stubbed
    token = unique_request_token("SendBonus", f"{WORKER}:{ASSIGNMENT}:0.50")
    stubber.add_response("send_bonus", {}, bonus_params(token))
    client.send_bonus(**bonus_params(token))  # the earlier process: paid, nothing recorded
    stubber.add_client_error(
        "send_bonus",
        service_error_code="RequestError",
        service_message=f'The idempotency token "{token}" has already been processed. (1700000000000)',
        http_status_code=400,
        expected_params=bonus_params(token),
    )
    assert Requester(client=client).send_bonus(WORKER, ASSIGNMENT, "0.50", "Gold accuracy 0.9") is False
    entry = AuditEntry.objects.get()
    assert entry.details["already_processed"] is True and entry.details["token"] == token


@pytest.mark.parametrize(
    ("worker", "amount", "reason", "message"),
    [
        ("W77", "0.50", "Good work", "worker ID 'W77' is not an MTurk worker ID"),
        (WORKER, "-1", "Good work", "more than 0"),
        (WORKER, "five", "Good work", "not an amount of dollars"),
        (WORKER, "0.50", " ", "needs a reason"),
    ],
)
def test_a_bonus_mturk_would_refuse_is_refused_here_first(stubbed, db, worker, amount, reason, message):
    client, _ = stubbed
    with pytest.raises(MTurkError, match=message):
        Requester(client=client).send_bonus(worker, ASSIGNMENT, amount, reason)
    assert not AuditEntry.objects.exists()


# --------------------------------------------------------------------------------------------- secrets


class StandIn(BaseHTTPRequestHandler):
    """MTurk's requester endpoint as far as the tests need it: records each request and answers {}; with
    `first_answer_after` it answers the first request only after that many seconds; a UniqueRequestToken it
    has seen gets MTurk's RequestError, as MTurk answers for 24 hours."""

    seen: list[dict] = []
    first_answer_after = 0.0

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        token = body.get("UniqueRequestToken")
        repeat = token is not None and any(r["body"].get("UniqueRequestToken") == token for r in self.seen)
        self.seen.append({"headers": dict(self.headers), "body": body})
        if len(self.seen) == 1:
            time.sleep(self.first_answer_after)
        status, answer = 200, {}
        if repeat:
            message = f'The idempotency token "{token}" has already been processed. (1700000000000)'
            status, answer = 400, {"__type": "RequestError", "Message": message}
        data = json.dumps(answer).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/x-amz-json-1.1")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:  # the client stopped waiting
            pass

    def log_message(self, *args):
        pass


@pytest.fixture
def stand_in():
    StandIn.seen = []
    StandIn.first_answer_after = 0.0
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    server.server_close()


def test_the_keys_sign_requests_and_appear_in_no_log_line_or_audit_detail(arrival, stand_in, caplog):
    caplog.set_level(logging.DEBUG)  # as with LOG_LEVEL=DEBUG
    requester = Requester(client=mturk.requester_client(endpoint_url=stand_in))
    requester.approve(ASSIGNMENT, "Thanks")
    requester.send_bonus(WORKER, ASSIGNMENT, "0.25", "Fast and accurate")

    assert [request["body"]["AssignmentId"] for request in StandIn.seen] == [ASSIGNMENT, ASSIGNMENT]
    signature = StandIn.seen[0]["headers"]["Authorization"]
    assert signature.startswith(f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY_ID}/")  # the settings' keys signed it
    assert StandIn.seen[0]["headers"]["X-Amz-Target"] == "MTurkRequesterServiceV20170117.ApproveAssignment"
    assert caplog.records, "botocore wrote nothing: the test would prove nothing"
    for secret in (ACCESS_KEY_ID, SECRET_ACCESS_KEY):
        assert secret not in caplog.text
        assert secret not in audit_text()
    assert AuditEntry.objects.count() == 2


def test_a_bonus_whose_answer_timed_out_is_retried_with_its_token_and_paid_once(arrival, stand_in):
    StandIn.first_answer_after = 1.0  # MTurk pays, but answers after the client stopped waiting
    requester = Requester(client=mturk.requester_client(endpoint_url=stand_in, read_timeout=0.3))
    assert requester.send_bonus(WORKER, ASSIGNMENT, "0.75", "Gold accuracy 0.9") is False
    tokens = [request["body"]["UniqueRequestToken"] for request in StandIn.seen]
    assert len(tokens) == 2 and tokens[0] == tokens[1]  # botocore's retry, refused by "MTurk" as a repeat
    assert AuditEntry.objects.get().details["already_processed"] is True
    # Run again later: the audit log has it; nothing is sent.
    assert requester.send_bonus(WORKER, ASSIGNMENT, "0.75", "Gold accuracy 0.9") is False
    assert len(StandIn.seen) == 2


def test_missing_keys_are_named_not_guessed(settings, stand_in, db, monkeypatch):
    settings.MTURK_ACCESS_KEY_ID = settings.MTURK_SECRET_ACCESS_KEY = ""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    requester = Requester(client=mturk.requester_client(endpoint_url=stand_in))
    with pytest.raises(MTurkError, match="no MTurk keys; set MTURK_ACCESS_KEY_ID and MTURK_SECRET_ACCESS_KEY"):
        requester.approve(ASSIGNMENT)
    assert StandIn.seen == []


# ------------------------------------------------------------------------------------ the command line


def run(*args):
    out = io.StringIO()
    call_command("mturk", *args, stdout=out)
    return out.getvalue()


def printed_requests(output):
    """The dry run's requests: a line naming the operation, then its JSON body."""
    lines = output.strip().splitlines()
    return [(lines[i].split()[-1].rsplit(".", 1)[1], json.loads(lines[i + 1])) for i in range(0, len(lines), 2)]


def test_a_dry_run_prints_the_exact_requests_and_sends_nothing(study):
    output = run(
        "create-hit",
        study.slug,
        "--site",
        "https://nli.example.org/",
        "--title",
        "Label pairs",
        "--description",
        "Read two sentences",
        "--reward",
        "1.5",
        "--assignments",
        "3",
        "--dry-run",
    )
    assert output.startswith("POST https://mturk-requester-sandbox.us-east-1.amazonaws.com/ ")
    [(operation, body)] = printed_requests(output)
    assert operation == "CreateHIT" and body["Reward"] == "1.50" and body["MaxAssignments"] == 3
    url = ET.fromstring(body["Question"]).find("mt:ExternalURL", NAMESPACE).text
    assert url == "https://nli.example.org/enter/mturk-study/"

    output = run("approve", ASSIGNMENT, "3OTHER0001", "--dry-run") + run(
        "bonus", "--worker", WORKER, "--assignment", ASSIGNMENT, "--amount", "0.5", "--reason", "Gold", "--dry-run"
    )
    requests = printed_requests(output)
    assert requests[:2] == [
        ("ApproveAssignment", {"AssignmentId": ASSIGNMENT}),
        ("ApproveAssignment", {"AssignmentId": "3OTHER0001"}),
    ]
    assert requests[2][0] == "SendBonus" and requests[2][1]["BonusAmount"] == "0.50"
    assert requests[2][1]["UniqueRequestToken"] == unique_request_token("SendBonus", f"{WORKER}:{ASSIGNMENT}:0.50")
    assert not AuditEntry.objects.exists()
    assert ACCESS_KEY_ID not in output and SECRET_ACCESS_KEY not in output


def test_the_command_names_what_is_wrong(study, db):
    with pytest.raises(CommandError, match="no study 'nope'"):
        run(
            "create-hit",
            "nope",
            "--site",
            "https://x.org",
            "--title",
            "t",
            "--description",
            "d",
            "--reward",
            "1",
            "--assignments",
            "1",
            "--dry-run",
        )
    with pytest.raises(
        CommandError, match=re.escape("the bonus '0.555' must be more than 0 with at most two decimals")
    ):
        run("bonus", "--worker", WORKER, "--assignment", ASSIGNMENT, "--amount", "0.555", "--reason", "r", "--dry-run")
    assert not CrowdSession.objects.exists() and not AuditEntry.objects.exists()
