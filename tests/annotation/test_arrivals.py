"""Arrivals from Prolific and MTurk (issue 27, items 7 and 8): audiences per platform; a closed, paused, full or
ineligible arrival gets a page with the study's message and the platform's way back (never a 404, never the
other platform's code); a paused study sends no one into its qualification test; an MTurk HIT works inside
MTurk's frame with a signed token instead of cookies; DEBUG is off unless asked for."""

import os
import subprocess
import sys
from urllib.parse import parse_qs, urlparse

import pytest
from django.core import signing
from django.test import Client

from annotation.models import CrowdSession, Item
from annotation.services import qualification
from annotation.services.crowd import crowd
from annotation.services.projects import set_status

pytestmark = pytest.mark.django_db

PROLIFIC_CODE, RETURNED, SCREENED_OUT = "DONE-PRO-1", "RET-PRO-1", "SCREEN-PRO-1"
MESSAGE = "Thank you for your interest: please return this study."


def prolific(project, pid="PID1", session="SESS1"):
    return f"/enter/{project.slug}/?PROLIFIC_PID={pid}&STUDY_ID=ST1&SESSION_ID={session}"


def mturk(project, worker="W1", assignment="A1"):
    return (
        f"/enter/{project.slug}/?workerId={worker}&hitId=H1&assignmentId={assignment}"
        "&turkSubmitTo=https://workersandbox.mturk.com"
    )


@pytest.fixture
def make_study(make_project, import_rows):
    def make(slug="arrivals", items=4, **settings):
        defaults = {
            "title": "Guitar study",
            "items_per_page": 2,
            "completion_code": PROLIFIC_CODE,
            "returned_code": RETURNED,
            "screened_out_code": SCREENED_OUT,
            "returned_message": MESSAGE,
        }
        project = make_project("nli_label", slug=slug, **{**defaults, **settings})
        rows = [{"id": str(i), "premise": "A man plays a guitar.", "hypothesis": f"Music {i}."} for i in range(items)]
        if rows:
            import_rows(project, rows)
        return project

    return make


def turned_away(response, reason: str) -> str:
    """The page's text, after checking it is the designed turnaway page for this reason."""
    text = response.content.decode()
    assert response.templates[0].name == "annotation/turnaway.html", response.templates[0].name
    assert f'data-reason="{reason}"' in text
    # One screened out is told they are paid for it and must not return; anyone else reads the study's message.
    screened_out = f'id="returned-code">{SCREENED_OUT}<' in text
    assert (crowd.SCREENED_OUT_MESSAGE if screened_out else MESSAGE) in text
    assert not screened_out or MESSAGE not in text
    assert PROLIFIC_CODE not in text  # the completion code is never given to someone turned away
    return text


def sent_back_to_prolific_with(response, code: str) -> None:
    text = response.content.decode()
    assert f'id="returned-code">{code}<' in text
    assert parse_qs(urlparse(response.context["turnaway"].return_url).query) == {"cc": [code]}


def told_to_return_the_hit(response) -> None:
    text = response.content.decode()
    assert "return the HIT" in text and 'id="returned-code"' not in text and "app.prolific.com" not in text
    assert response.context["turnaway"].code == ""


# ---------------------------------------------------------------------------- every outcome, on both platforms


@pytest.mark.parametrize("status", ["closed", "draft"])
def test_a_closed_study_turns_arrivals_away_with_the_platform_way_back(make_study, status):
    study = make_study(status=status)
    on_prolific = Client().get(prolific(study))
    assert on_prolific.status_code == 410
    text = turned_away(on_prolific, "closed")
    sent_back_to_prolific_with(on_prolific, RETURNED)
    assert ("Guitar study" in text) == (status == "closed")  # a draft's title is shown to nobody
    on_mturk = Client().get(mturk(study))
    assert on_mturk.status_code == 410
    turned_away(on_mturk, "closed")
    told_to_return_the_hit(on_mturk)
    assert "X-Frame-Options" not in on_mturk  # MTurk shows it in its frame
    assert not CrowdSession.objects.exists()


def test_a_paused_study_takes_no_new_arrival_and_sends_no_one_to_its_test(make_study):
    study = make_study()
    study.qualification = qualification.create_test(
        "arrivals-q", "nli_label", [{"premise": "P", "hypothesis": "H", "reference": "e"}]
    )
    study.save()
    early = Client()
    assert early.get(prolific(study, pid="EARLY"), follow=True).redirect_chain[-1][0] == f"/qualify/{study.slug}/"
    set_status(study, "paused")
    for client, link in ((Client(), prolific(study)), (Client(), mturk(study))):
        response = client.get(link, follow=True)
        assert response.status_code == 200 and not response.redirect_chain
        turned_away(response, "paused")
    told_to_return_the_hit(Client().get(mturk(study)))
    sent_back_to_prolific_with(Client().get(prolific(study)), RETURNED)
    assert CrowdSession.objects.count() == 1  # nobody new
    # The participant who arrived before the pause is not sent into the test either, wherever they go.
    for path in (prolific(study, pid="EARLY"), f"/work/{study.slug}/", f"/qualify/{study.slug}/"):
        response = early.get(path, follow=True)
        assert all(f"/qualify/{study.slug}/" not in url for url, _ in response.redirect_chain), path
        turned_away(response, "paused")
    assert early.post(f"/qualify/{study.slug}/", {}).templates[0].name == "annotation/turnaway.html"


def test_a_participant_holding_a_page_finishes_it_in_a_paused_study(make_study):
    study = make_study(completion_pages=1)
    client = Client()
    page = client.get(prolific(study), follow=True)
    assignment = page.context["assignment"]
    set_status(study, "paused")
    again = client.get(prolific(study), follow=True)  # back through the link: their page, not the pause
    assert again.context["assignment"].pk == assignment.pk
    ids = assignment.claims.values_list("item_id", flat=True)
    done = client.post(f"/work/{study.slug}/{assignment.id}/submit/", {f"value_{i}": "e" for i in ids}, follow=True)
    assert done.context["code"] == PROLIFIC_CODE


def test_a_full_study_turns_new_arrivals_away_but_not_those_already_in(make_study):
    study = make_study(items=2, redundancy=1, max_annotations=1)
    inside = Client()
    page = inside.get(mturk(study, worker="IN"), follow=True).context["assignment"]  # takes both items
    full = Client().get(prolific(study))
    turned_away(full, "full")
    sent_back_to_prolific_with(full, RETURNED)
    told_to_return_the_hit(Client().get(mturk(study, worker="W2", assignment="A2")))
    preview = Client().get(f"/enter/{study.slug}/?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    turned_away(preview, "full")  # an MTurk worker is told before accepting the HIT
    back = inside.get(mturk(study, worker="IN"), follow=True)
    assert back.context["assignment"].pk == page.pk
    assert CrowdSession.objects.count() == 1


@pytest.mark.parametrize(
    ("audience", "admitted", "refused"),
    [("prolific", "prolific", "mturk"), ("mturk", "mturk", "prolific")],
)
def test_a_study_for_one_platform_turns_the_other_away_without_its_codes(make_study, audience, admitted, refused):
    study = make_study(audience=audience)
    links = {"prolific": prolific(study), "mturk": mturk(study)}
    response = Client().get(links[refused])
    assert response.status_code == 403
    text = turned_away(response, "ineligible")
    name = {"prolific": "Prolific", "mturk": "MTurk"}[admitted]
    assert f"takes participants from {name} only" in text
    if refused == "prolific":  # screened out with the study's screen-out code
        sent_back_to_prolific_with(response, SCREENED_OUT)
    else:  # no Prolific code of any kind goes to an MTurk worker
        told_to_return_the_hit(response)
        assert RETURNED not in text and SCREENED_OUT not in text
    assert not CrowdSession.objects.exists()
    welcome = Client().get(links[admitted])
    assert welcome.status_code == 302 and CrowdSession.objects.get().platform == admitted


def test_any_platform_and_everyone_take_both_and_members_only_takes_neither(make_study):
    for audience in ("platform", "everyone"):
        study = make_study(slug=f"open-{audience}", audience=audience)
        assert Client().get(prolific(study)).status_code == 302
        assert Client().get(mturk(study)).status_code == 302
    members = make_study(slug="members", audience="members")
    response = Client().get(prolific(members))
    assert "takes no participants through a platform link" in turned_away(response, "ineligible")
    sent_back_to_prolific_with(response, SCREENED_OUT)


def test_without_a_screen_out_code_an_ineligible_participant_gets_the_returned_code(make_study):
    study = make_study(audience="mturk", screened_out_code="")
    sent_back_to_prolific_with(Client().get(prolific(study)), RETURNED)


def test_a_failed_qualification_gives_the_screen_out_code(make_study):
    study = make_study()
    study.qualification = qualification.create_test(
        "fail-q", "nli_label", [{"premise": "P", "hypothesis": "H", "reference": "e"}], max_attempts=1
    )
    study.save()
    client = Client()
    client.get(prolific(study))
    item = study.qualification.items.get()
    failed = client.post(f"/qualify/{study.slug}/", {f"value_{item.id}": "c"})
    assert failed.context["returned_code"] == SCREENED_OUT
    assert failed.context["returned_message"] == crowd.SCREENED_OUT_MESSAGE
    assert parse_qs(urlparse(failed.context["platform_url"]).query) == {"cc": [SCREENED_OUT]}


def test_an_arrival_with_no_work_left_gets_the_returned_code_not_the_qualification_test(make_study):
    study = make_study()
    study.qualification = qualification.create_test(
        "late-q", "nli_label", [{"premise": "P", "hypothesis": "H", "reference": "e"}]
    )
    study.save()
    client = Client()
    client.get(prolific(study))
    assert client.get(f"/work/{study.slug}/")["Location"] == f"/qualify/{study.slug}/"
    Item.objects.filter(project=study).update(status=Item.Status.DONE, claimable=False)
    told = client.get(f"/work/{study.slug}/")
    text = told.content.decode()
    assert told.templates[0].name == "annotation/no_work.html" and PROLIFIC_CODE not in text
    assert f'id="returned-code">{RETURNED}<' in text
    assert parse_qs(urlparse(told.context["platform_url"]).query) == {"cc": [RETURNED]}


# ---------------------------------------------------------------------------- MTurk's frame: a token, not cookies


def frame_token_of(response) -> str:
    """The frame token the entry link's redirect carries."""
    return parse_qs(urlparse(response["Location"]).query)["frame"][0]


def test_the_frame_token_carries_a_hit_through_without_any_cookie(make_study):
    study = make_study(completion_pages=1)
    entry = Client().get(mturk(study))
    token = frame_token_of(entry)
    # A browser inside MTurk's frame sends no cookie: every request carries the token, and CSRF is not
    # checked on them (the token is no ambient credential). Nothing else is needed.
    framed = Client(enforce_csrf_checks=True)
    page = framed.get(f"/work/{study.slug}/?frame={token}")
    assert page.status_code == 200 and not framed.cookies.get("sessionid")
    text = page.content.decode()
    assignment = page.context["assignment"]
    submit_url = f"/work/{study.slug}/{assignment.id}/submit/?frame="
    assert submit_url in text and "/draft/?frame=" in text and "/extend/?frame=" in text
    policy = page["Content-Security-Policy"]
    assert "frame-ancestors https://mturk.com https://*.mturk.com" in policy and "script-src 'self'" in policy
    renewed = page.context["frame_query"].removeprefix("?frame=")
    ids = assignment.claims.values_list("item_id", flat=True)
    saved = framed.post(
        f"/work/{study.slug}/{assignment.id}/draft/?frame={renewed}",
        {"answers": {}},
        content_type="application/json",
    )
    assert saved.status_code == 200
    sent = framed.post(f"/work/{study.slug}/{assignment.id}/submit/?frame={renewed}", {f"value_{i}": "e" for i in ids})
    assert sent.status_code == 302 and "?frame=" in sent["Location"]
    end = framed.get(sent["Location"], follow=True)
    text = end.content.decode()
    assert 'action="https://workersandbox.mturk.com/mturk/externalSubmit"' in text
    assert 'name="assignmentId" value="A1"' in text and end.context["code"] == PROLIFIC_CODE


def test_without_the_token_a_framed_post_needs_the_csrf_check(make_study):
    study = make_study()
    entered = Client(enforce_csrf_checks=True)
    entered.get(mturk(study), follow=True)  # the session cookie, as outside a frame
    assignment = entered.get(f"/work/{study.slug}/").context["assignment"]
    refused = entered.post(f"/work/{study.slug}/{assignment.id}/release/", {"stop": "1"})
    assert refused.status_code == 403  # no CSRF token: refused as before


def test_a_frame_token_opens_only_its_own_session_of_its_own_study_for_a_while(make_study, author, monkeypatch):
    study = make_study()
    other = make_study(slug="other-study")
    token = frame_token_of(Client().get(mturk(study)))
    assert Client().get(f"/work/{study.slug}/?frame={token}").status_code == 200
    # Another study's pages, an author's pages, a forged or altered token: not signed in at all.
    assert Client().get(f"/work/{other.slug}/?frame={token}")["Location"].startswith("/accounts/login/")
    assert Client().get(f"/projects/{study.slug}/?frame={token}").status_code in (302, 404)
    forged = signing.TimestampSigner(salt="another-salt").sign_object({"session": 1, "project": study.pk})
    for bad in (forged, token[:-2] + "xx", "1"):
        assert Client().get(f"/work/{study.slug}/?frame={bad}")["Location"].startswith("/accounts/login/")
    # A Prolific session is never opened by a token (the token is MTurk's frame only).
    Client().get(prolific(study))
    prolific_session = CrowdSession.objects.get(platform="prolific")
    prolific_token = crowd.frame_token(prolific_session)
    assert Client().get(f"/work/{study.slug}/?frame={prolific_token}")["Location"].startswith("/accounts/login/")
    # Once the pages stop for longer than the token lives, it lapses.
    monkeypatch.setattr(crowd, "FRAME_TOKEN_MAX_AGE", -1)
    assert Client().get(f"/work/{study.slug}/?frame={token}")["Location"].startswith("/accounts/login/")


# ---------------------------------------------------------------------------- DEBUG only when asked for


def test_debug_is_off_unless_asked_for():
    code = "import django; django.setup(); from django.conf import settings; print(settings.DEBUG)"
    env = {key: value for key, value in os.environ.items() if key != "DEBUG"}
    env.update(DJANGO_SETTINGS_MODULE="config.settings", SECRET_KEY="k" * 50)
    plain = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert plain.stdout.split() == ["False"], plain.stderr[-2000:]
    asked = subprocess.run(
        [sys.executable, "-c", code], env={**env, "DEBUG": "true"}, capture_output=True, text=True, timeout=120
    )
    assert asked.stdout.split() == ["True"], asked.stderr[-2000:]
