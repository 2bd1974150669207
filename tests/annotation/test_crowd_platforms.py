"""Crowd platforms: an entry link is not a login (attacks), the completion code stays secret until earned on
every route a worker reaches, Prolific and MTurk round trips, giving back, qualification feedback."""

import time
from urllib.parse import parse_qs, urlparse

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.contrib.auth import SESSION_KEY
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import CrowdSession
from annotation.services import access, qualification
from core import roles
from dataset_io.formats import exportable

pytestmark = pytest.mark.django_db

CODE = "PAID-7Q2X-SECRET"
PROLIFIC = "PROLIFIC_PID={pid}&STUDY_ID=STUDY1&SESSION_ID={session}"


def prolific_link(project, pid="5f00aa", session="SESS1", extra=""):
    return f"/enter/{project.slug}/?" + PROLIFIC.format(pid=pid, session=session) + extra


def logged_in_user(client):
    from django.contrib.auth import get_user_model

    pk = client.session.get(SESSION_KEY)
    return get_user_model().objects.get(pk=pk) if pk else None


@pytest.fixture
def study(make_project, import_rows):
    project = make_project("nli_label", slug="paid", items_per_page=2, completion_code=CODE, completion_pages=2)
    import_rows(
        project,
        [
            {"id": str(i), "premise": "A man plays a guitar.", "hypothesis": f"Someone makes music {i}."}
            for i in range(10)
        ],
    )
    return project


def answer_current_page(client, project):
    page = client.get(f"/work/{project.slug}/")
    assignment = page.context["assignment"]
    ids = list(assignment.claims.values_list("item_id", flat=True))
    return client.post(f"/work/{project.slug}/{assignment.id}/submit/", {f"value_{i}": "e" for i in ids})


# ---------------------------------------------------------------------------- item 0: not a login bypass


def test_an_entry_link_never_logs_in_a_staff_account_named_like_a_crowd_worker(study, make_user, client):
    admin = make_user("prolific-5f00aa", "admin")
    author = make_user("mturk-W123", "author")
    client.get(prolific_link(study))
    user = logged_in_user(client)
    assert user is not None and user.pk not in (admin.pk, author.pk)
    assert not user.has_usable_password() and ":" in user.username
    assert roles.has_role(user, roles.WORKER) and not roles.has_role(user, roles.AUTHOR)
    client = Client()
    client.get(f"/enter/{study.slug}/?workerId=W123&hitId=HIT1&assignmentId=A1")
    assert logged_in_user(client).pk != author.pk
    # Even an account given exactly a crowd account's name (the admin's command does not forbid it) is not
    # logged in: crowd accounts are found through their session row, and a clash is refused.
    squatter = make_user(f"prolific:NEWPID:{study.pk}", "admin")
    client = Client()
    refused = client.get(prolific_link(study, pid="NEWPID"))
    assert refused.status_code == 400 and logged_in_user(client) is None
    assert not CrowdSession.objects.filter(worker=squatter).exists()


def test_knowing_a_prolific_id_is_not_enough_to_act_as_that_worker(study, client, import_rows):
    client.get(prolific_link(study))
    victim = logged_in_user(client)
    answer_current_page(client, study)
    attacker = Client()
    refused = attacker.get(prolific_link(study, session="ATTACKER-SESSION"))
    assert refused.status_code == 400 and "another platform session" in refused.content.decode()
    assert logged_in_user(attacker) is None
    forged = attacker.get(prolific_link(study, session="ATTACKER-SESSION", extra="&resume=1:forged:token"))
    assert forged.status_code == 400 and logged_in_user(attacker) is None
    assert attacker.get(f"/enter/{study.slug}/?resume=1:forged").status_code == 400
    # The same Prolific ID in another study is another account: nothing of the first study is reachable.
    other = type(study).objects.create(slug="other", task_type="nli_label", owner=study.owner, status="published")
    import_rows(other, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    attacker.get(prolific_link(other, session="ATTACKER-SESSION"))
    stranger = logged_in_user(attacker)
    assert stranger is not None and stranger.pk != victim.pk
    assert attacker.get(f"/done/{study.slug}/").status_code == 404
    assert CrowdSession.objects.filter(project=study).count() == 1


def test_the_signed_token_the_study_hands_out_brings_the_participant_back(study, client):
    client.get(prolific_link(study))
    worker = logged_in_user(client)
    stopped = client.post(
        f"/work/{study.slug}/{client.get(f'/work/{study.slug}/').context['assignment'].id}/release/",
        {"stop": "1"},
        follow=True,
    )
    token = stopped.context["resume_token"]
    assert f"resume={token}" in stopped.content.decode().replace("%3A", ":")
    later = Client()
    assert later.get(prolific_link(study, session="NEW-SESSION", extra=f"&resume={token}")).status_code == 302
    assert logged_in_user(later) == worker
    again = Client()
    assert again.get(f"/enter/{study.slug}/?resume={token}").status_code == 302 and logged_in_user(again) == worker
    # The token of one study opens no other.
    other = type(study).objects.create(slug="other", task_type="nli_label", owner=study.owner, status="published")
    assert Client().get(f"/enter/{other.slug}/?resume={token}").status_code == 400


def test_a_resume_link_lapses_and_dies_with_an_erasure(study, client, settings):
    from unittest import mock

    from annotation.services.crowd import crowd
    from annotation.services.crowd.participants import forget_participant

    client.get(prolific_link(study))
    session = CrowdSession.objects.get(project=study)
    token = crowd.resume_token(session)
    assert Client().get(f"/enter/{study.slug}/?resume={token}").status_code == 302
    # Older than CROWD_RESUME_LINK_MAX_AGE: refused, whoever holds it.
    later = time.time() + settings.CROWD_RESUME_LINK_MAX_AGE + 60
    with mock.patch("django.core.signing.time.time", return_value=later):
        stale = Client().get(f"/enter/{study.slug}/?resume={token}")
    assert stale.status_code == 400 and "too old" in stale.content.decode()
    # A token of the erased participant's session opens nothing, even within its lifetime.
    forget_participant(session.platform, session.participant_id)
    assert Client().get(f"/enter/{study.slug}/?resume={token}").status_code == 400


# ---------------------------------------------------------------------------- item 5: the code is secret until earned


def worker_views(client, api, project):
    """Everything a crowd worker can read about the study: pages, API routes, the progress socket."""
    texts = []
    work = client.get(f"/work/{project.slug}/", follow=True)
    texts.append(work.content.decode())
    texts.append(client.get(f"/qualify/{project.slug}/", follow=True).content.decode())
    texts.append(client.get(f"/done/{project.slug}/").content.decode())
    texts.append(client.get("/", follow=True).content.decode())
    texts.append(api.get(f"/api/projects/{project.slug}/").content.decode())
    texts.append(api.get("/api/projects/").content.decode())
    texts.append(api.get("/api/assignments/").content.decode())
    claim = api.post(f"/api/projects/{project.slug}/claim/")
    texts.append(claim.content.decode())
    if claim.status_code == 201:
        texts.append(api.get(f"/api/assignments/{claim.json()['id']}/").content.decode())
    return texts


def progress_socket(project, user):
    from config.asgi import application

    async def scenario():
        communicator = WebsocketCommunicator(
            application, f"/ws/projects/{project.slug}/progress/", headers=[(b"origin", b"http://127.0.0.1")]
        )
        communicator.scope["user"] = user
        connected, code = await communicator.connect()
        received = await communicator.receive_output(timeout=1) if connected else None
        if received and received["type"] == "websocket.close":  # refused: opened and closed with a code
            connected, code = False, received["code"]
        await communicator.disconnect()
        return connected, code, received

    return async_to_sync(scenario)()


@pytest.mark.django_db(transaction=True)
def test_the_completion_code_is_on_no_route_before_the_quota_and_shown_after(study, client):
    client.get(prolific_link(study))
    worker = logged_in_user(client)
    api = APIClient()
    api.force_login(worker)
    assert not any(CODE in text for text in worker_views(client, api, study))
    connected, close_code, received = progress_socket(study, worker)
    assert not connected and close_code == 4403 and CODE not in str(received)
    answer_current_page(client, study)  # one page of two: not yet
    assert not any(CODE in text for text in worker_views(client, api, study))
    refused = client.post(f"/done/{study.slug}/", follow=True)
    assert CODE not in refused.content.decode() and "Submit 2 pages before finishing." in refused.content.decode()
    answer_current_page(client, study)  # the quota: the next request ends the session with the code
    after = worker_views(client, api, study)
    assert CODE in after[0]  # the work page now is the end page
    assert api.get(f"/api/projects/{study.slug}/").json()["completion_code"] == CODE
    assert CODE not in api.post(f"/api/projects/{study.slug}/claim/").content.decode()
    connected, close_code, _ = progress_socket(study, worker)
    assert not connected and close_code == 4403
    # Managers still read and set it; another worker never sees this participant's code.
    owner = APIClient()
    owner.force_login(study.owner)
    assert owner.get(f"/api/projects/{study.slug}/").json()["options"]["completion_code"] == CODE
    assert (
        owner.patch(f"/api/projects/{study.slug}/", {"options": {"completion_code": "NEW-CODE"}}, format="json").json()[
            "options"
        ]["completion_code"]
        == "NEW-CODE"
    )
    other = Client()
    other.get(prolific_link(study, pid="someone-else"))
    other_api = APIClient()
    other_api.force_login(logged_in_user(other))
    assert "completion_code" not in other_api.get(f"/api/projects/{study.slug}/").json()


def test_prolific_round_trip_through_qualification_ends_at_prolific_with_the_code(study, client):
    test = qualification.create_test(
        "paid-q",
        "nli_label",
        [
            {"premise": "A dog runs.", "hypothesis": "An animal moves.", "reference": "e"},
            {"premise": "A dog runs.", "hypothesis": "A cat sleeps.", "reference": "n"},
        ],
        min_accuracy=1.0,
        max_attempts=2,
    )
    study.qualification = test
    study.save()
    arrival = client.get(prolific_link(study), follow=True)
    assert arrival.redirect_chain[-1][0] == f"/qualify/{study.slug}/"
    items = list(test.items.all())
    failed = client.post(f"/qualify/{study.slug}/", {f"value_{items[0].id}": "e", f"value_{items[1].id}": "c"})
    text = failed.content.decode()
    assert "Not passed this time." in text and "0.50" in text and "1.00" in text and "1 attempt left" in text
    assert "qualification-feedback" not in text  # the author did not enable per-item feedback
    passed = client.post(
        f"/qualify/{study.slug}/", {f"value_{items[0].id}": "e", f"value_{items[1].id}": "n"}, follow=True
    )
    assert (
        passed.redirect_chain[-1][0] == f"/work/{study.slug}/"
        and "score of 1.00 (pass mark 1.00)" in passed.content.decode()
    )
    answer_current_page(client, study)
    answer_current_page(client, study)
    end = client.get(f"/work/{study.slug}/", follow=True)
    assert end.redirect_chain[-1][0] == f"/done/{study.slug}/"
    target = urlparse(end.context["platform_url"])
    assert (target.scheme, target.netloc, target.path) == ("https", "app.prolific.com", "/submissions/complete")
    assert parse_qs(target.query) == {"cc": [CODE]}
    assert f'content="3;url={end.context["platform_url"]}"' in end.content.decode()


def test_giving_back_and_stopping_gives_the_returned_message_and_code(study, client):
    study.options = {
        **study.options,
        "returned_message": "Please return the study on Prolific.",
        "returned_code": "RET-9",
    }
    study.save()
    client.get(prolific_link(study))
    assignment = client.get(f"/work/{study.slug}/").context["assignment"]
    stopped = client.post(f"/work/{study.slug}/{assignment.id}/release/", {"stop": "1"}, follow=True)
    text = stopped.content.decode()
    assert stopped.redirect_chain[-1][0] == f"/done/{study.slug}/"
    assert "Please return the study on Prolific." in text and "RET-9" in text and CODE not in text
    assert parse_qs(urlparse(stopped.context["platform_url"]).query) == {"cc": ["RET-9"]}
    assert "Go on working" in text


def test_a_worker_who_fails_qualification_is_told_how_to_leave(study, client):
    test = qualification.create_test(
        "paid-q", "nli_label", [{"premise": "P", "hypothesis": "H", "reference": "e"}], min_accuracy=1.0, max_attempts=1
    )
    test.options = {**test.options, "show_feedback": True}
    test.save()
    study.qualification = test
    study.options = {**study.options, "returned_code": "RET-9"}
    study.save()
    client.get(prolific_link(study))
    item = test.items.get()
    failed = client.post(f"/qualify/{study.slug}/", {f"value_{item.id}": "c"}).content.decode()
    assert "0 attempts left" in failed and "No attempts are left" in failed and "RET-9" in failed
    assert 'id="qualification-feedback"' in failed and "Contradiction" in failed and "Entailment" in failed


# ---------------------------------------------------------------------------- item 6: MTurk


MTURK = "workerId=W77&hitId=HIT1&assignmentId={assignment}&turkSubmitTo={host}"


def test_mturk_preview_is_a_read_only_sample_that_mturk_may_frame(study, client):
    preview = client.get(
        f"/enter/{study.slug}/?"
        + MTURK.format(assignment="ASSIGNMENT_ID_NOT_AVAILABLE", host="https://workersandbox.mturk.com")
    )
    text = preview.content.decode()
    assert preview.status_code == 200 and 'id="mturk-preview"' in text and "Someone makes music 0." in text
    assert "disabled" in text and "/submit/" not in text and logged_in_user(client) is None
    policy = preview["Content-Security-Policy"]
    assert "frame-ancestors https://mturk.com https://*.mturk.com;" in policy + ";"
    assert "script-src 'self'" in policy and "default-src 'self'" in policy  # the whole policy, widened only there
    assert "X-Frame-Options" not in preview


def test_mturk_arrival_is_framed_only_by_mturk_and_posts_the_assignment_back(study, client, settings):
    refused = client.get(f"/enter/{study.slug}/?" + MTURK.format(assignment="A1", host="https://evil.example"))
    assert refused.status_code == 400 and "turkSubmitTo" in refused.content.decode()
    entered = client.get(f"/enter/{study.slug}/?" + MTURK.format(assignment="A1", host="https://www.mturk.com"))
    assert entered.status_code == 302
    page = client.get(f"/work/{study.slug}/")
    assert (
        "X-Frame-Options" not in page
        and "frame-ancestors https://mturk.com https://*.mturk.com" in (page["Content-Security-Policy"])
    )
    assert "form-action 'self' https://*.mturk.com;" in page["Content-Security-Policy"]
    # Other pages, and a Prolific arrival's work page, stay unframeable.
    assert client.get("/")["X-Frame-Options"] == "DENY"
    prolific = Client()
    prolific.get(prolific_link(study))
    assert prolific.get(f"/work/{study.slug}/")["X-Frame-Options"] == "DENY"
    answer_current_page(client, study)
    answer_current_page(client, study)
    end = client.get(f"/work/{study.slug}/", follow=True)
    assert "X-Frame-Options" not in end
    text = end.content.decode()
    assert 'action="https://www.mturk.com/mturk/externalSubmit"' in text and 'method="post"' in text
    assert 'name="assignmentId" value="A1"' in text and 'name="answers" value="4"' in text and CODE in text


# ---------------------------------------------------------------------------- item 9: odd states


def test_a_user_without_a_role_is_told_what_to_do(client, db):
    from django.contrib.auth import get_user_model

    client.force_login(get_user_model().objects.create_user("nobody", password="x"))
    text = client.get("/").content.decode()
    assert 'id="no-role"' in text and "Ask the researcher" in text


def test_no_work_left_without_an_answer_gives_no_code_but_a_way_out(make_project, import_rows, client):
    study = make_project("nli_label", slug="scarce", completion_code=CODE, items_per_page=1, redundancy=1)
    import_rows(study, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    client.get(prolific_link(study))  # in while there is work; another participant takes the last item
    Client().get(prolific_link(study, pid="OTHER"), follow=True)
    page = client.get(f"/work/{study.slug}/")
    text = page.content.decode()
    assert CODE not in text and "There is no work for you in this study right now." in text and "resume=" in text


def test_counts_read_as_english_and_exports_have_one_extension(make_project, import_rows, make_user, client, author):
    from annotation.services.assignments import claim_page, submit_page
    from annotation.tasktypes import TASK_TYPES
    from dataset_io.services import exporters

    project = make_project("nli_label", slug="plurals", items_per_page=1, redundancy=1, max_annotations=1)
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    worker = make_user("solo")
    page = claim_page(project, worker)
    submit_page(page.pk, worker, {str(page.claims.get().item_id): {"value": "e"}})
    client.force_login(author)
    dashboard = client.get(f"/projects/{project.slug}/").content.decode()
    assert '>1</b><span data-one="item" data-many="items">item</span>' in dashboard
    assert '>1</b><span data-one="answer" data-many="answers">answer</span>' in dashboard
    assert "1 answers" not in client.get(f"/projects/{project.slug}/workers/{worker.pk}/").content.decode()
    from annotation.models import WorkerStatus

    assert str(WorkerStatus._meta.verbose_name_plural) == "worker statuses"
    for task in TASK_TYPES.values():
        for fmt in exportable(task, task.default_options()):
            name = exporters.file_name(project, fmt)
            assert name.count(".csv") + name.count(".jsonl") == 1 and not name.endswith((".csv.csv", ".jsonl.jsonl")), (
                name
            )
    assert (
        client.get(f"/projects/{project.slug}/export/csv/")["Content-Disposition"]
        == 'attachment; filename="plurals.csv"'
    )


def test_a_crowd_account_works_on_its_own_study_and_no_other(study, make_project, import_rows, client):
    """A participant paid for one study cannot wander into the lab's other open studies with that account."""
    open_to_all = make_project("nli_label", slug="open-to-all", audience="everyone")
    import_rows(open_to_all, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    client.get(prolific_link(study))
    crowd_user = logged_in_user(client)
    assert access.crowd_study(crowd_user) == study.pk
    assert set(access.workable_projects(crowd_user)) == {study}
    assert client.get(f"/work/{open_to_all.slug}/").status_code == 404
    api = APIClient()
    api.force_authenticate(crowd_user)
    assert api.post(f"/api/v1/projects/{open_to_all.slug}/claim/").status_code == 404
    assert api.post(f"/api/v1/projects/{study.slug}/claim/").status_code == 201
