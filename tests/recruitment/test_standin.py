"""The stand-in refuses the request shapes Prolific's references refuse (the app's old shapes among them), the
app sends the documented ones, and the rehearsal controls start, move and deliver submissions over HTTP."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qsl, urlsplit

import httpx
import pytest
from django.test import Client

from recruitment.models import ProlificSubmission
from recruitment.services import settle, studies, webhooks
from tests.recruitment.conftest import SITE, TOKEN

pytestmark = pytest.mark.django_db


def call(standin, method: str, path: str, body=None) -> httpx.Response:
    return httpx.request(method, standin.url + path, json=body, headers={"Authorization": f"Token {TOKEN}"})


@pytest.fixture
def running(study, author, standin):
    link = studies.create_draft(studies.link_of(study), SITE, author)
    submission = standin.add_submission(link.prolific_study_id, "PONE", "AWAITING REVIEW")
    return link, submission


def test_the_apps_old_shapes_are_refused(running, standin):
    link, submission = running
    # Screen-out without the study's screen-out code.
    refused = call(standin, "POST", f"/api/v1/submissions/{submission}/transition/", {"action": "SCREEN_OUT"})
    assert refused.status_code == 400 and "completion_code" in refused.text
    wrong = {"action": "SCREEN_OUT", "completion_code": link.completed_code}  # not a screen-out code
    assert call(standin, "POST", f"/api/v1/submissions/{submission}/transition/", wrong).status_code == 400
    # Bulk approve mixing its two forms.
    mixed = {"study_id": link.prolific_study_id, "submission_ids": [submission]}
    assert call(standin, "POST", "/api/v1/submissions/bulk-approve/", mixed).status_code == 400
    assert call(standin, "POST", "/api/v1/submissions/bulk-approve/", {"participant_ids": ["PONE"]}).status_code == 400
    # A participant group in no workspace (or in both a workspace and an organisation).
    assert call(standin, "POST", "/api/v1/participant-groups/", {"name": "g"}).status_code == 400
    both = {"name": "g", "workspace_id": "w", "organisation_id": "o"}
    assert call(standin, "POST", "/api/v1/participant-groups/", both).status_code == 400
    assert standin.submissions[submission]["status"] == "AWAITING REVIEW" and standin.groups == {}


def test_the_app_sends_the_documented_shapes_and_takes_a_202(running, author, standin):
    link, submission = running
    settle.pull(link)
    assert settle.approve(link, [submission], author) == 1  # the stand-in answers 202, as Prolific may
    assert standin.calls_to("POST", "/api/v1/submissions/bulk-approve/")[-1].body == {"submission_ids": [submission]}
    other = standin.add_submission(link.prolific_study_id, "PTWO", "ACTIVE")
    settle.pull(link)
    settle.screen_out(link, other, author)
    sent = standin.calls_to("POST", rf"/api/v1/submissions/{other}/transition/")[-1].body
    assert sent == {"action": "SCREEN_OUT", "completion_code": link.screened_out_code}
    assert standin.submissions[other]["status"] == "SCREENED OUT"


def test_a_study_without_a_screen_out_code_asks_for_a_return_instead(study, author, standin):
    studies.save_link(study, author, screen_out_reward_cents=0)
    link = studies.create_draft(studies.link_of(study), SITE, author)
    submission = standin.add_submission(link.prolific_study_id, "PONE", "ACTIVE")
    settle.pull(link)
    with pytest.raises(studies.RecruitmentError, match="without a screen-out code"):
        settle.screen_out(link, submission, author)
    assert not standin.calls_to("POST", r"/api/v1/submissions/\w+/transition/")


class Catcher(BaseHTTPRequestHandler):
    caught: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Catcher.caught.append((body, dict(self.headers)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_lab_rehearses_over_http_start_move_and_a_signed_delivery(study, author, standin):
    link = studies.save_link(study, author, workspace_id="ws000001")
    link = studies.create_draft(link, SITE, author)
    webhooks.subscribe(link, "https://studio.example.org/recruitment/webhooks/prolific/", author)
    started = httpx.post(
        standin.url + "/_standin/participants/", json={"study_id": link.prolific_study_id, "participant_id": "PREH"}
    ).json()
    assert (
        f"PROLIFIC_PID=PREH&STUDY_ID={link.prolific_study_id}&SESSION_ID={started['submission_id']}"
        in started["entry_url"]
    )
    study.refresh_from_db()
    query = dict(parse_qsl(urlsplit(started["entry_url"]).query))
    assert Client().get(f"/enter/{study.slug}/", query).status_code == 302  # the participant opens it
    moved = httpx.post(
        standin.url + f"/_standin/submissions/{started['submission_id']}/", json={"status": "AWAITING REVIEW"}
    )
    assert moved.status_code == 200
    catcher = HTTPServer(("127.0.0.1", 0), Catcher)
    threading.Thread(target=catcher.handle_request, daemon=True).start()
    target = f"http://127.0.0.1:{catcher.server_address[1]}/"
    answer = httpx.post(
        standin.url + "/_standin/deliveries/", json={"submission_id": started["submission_id"], "target_url": target}
    ).json()
    assert answer["deliveries"] == [{"target_url": target, "status": 200}]
    catcher.server_close()
    body, headers = Catcher.caught[-1]
    assert json.loads(body)["status"] == "AWAITING REVIEW"
    # What the stand-in signed, the app's webhook takes in (the SESSION_ID names the submission).
    passed = {name: headers[name] for name in headers if name.startswith("X-")}
    response = Client().post("/recruitment/webhooks/prolific/", body, content_type="application/json", headers=passed)
    assert response.json() == {"taken": True, "applied": True}
    assert ProlificSubmission.objects.get().status == "AWAITING REVIEW"
