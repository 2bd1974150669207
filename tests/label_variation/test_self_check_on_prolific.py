"""A Prolific writer reaches their self-check from every end page they see (issue 53, item 4): the round-1
end page and the validation study's end page link to it and do not send them back to Prolific by themselves
while it is due; a new Prolific session of a writer who earned round 1's code is let through to it, with no
new round-1 page and no code they did not earn."""

import pytest
from django.contrib.auth import SESSION_KEY, get_user_model
from django.test import Client

from annotation.models import Assignment, CrowdSession
from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import send_to_validation
from annotation.services.projects import update_project
from label_variation.services.self_judgments import pending_pairs, record_self_judgments
from tests.label_variation.explanations import HYPOTHESIS, PREMISE, explained

pytestmark = pytest.mark.django_db
User = get_user_model()
REDIRECT = 'http-equiv="refresh"'


def arrive(project, pid: str, session: str) -> Client:
    """The participant follows the study's Prolific link from a Prolific session: their browser."""
    browser = Client()
    response = browser.get(f"/enter/{project.slug}/?PROLIFIC_PID={pid}&STUDY_ID={project.slug}&SESSION_ID={session}")
    assert response.status_code == 302, response.content[:300]
    return browser


def account(browser: Client):
    return User.objects.get(pk=browser.session[SESSION_KEY])


def write_one_page(project, browser: Client) -> None:
    writer = account(browser)
    page = claim_page(project, writer)
    (claim,) = page.claims.all()
    labels = {"e": explained(f"{writer.username} reads a commute to work in this scene.")}
    submit_page(page.pk, writer, {str(claim.item_id): {"value": {"labels": labels, "idk": False}}})


def end_page(project, browser: Client):
    """What the participant sees once they have no more work: the study's end page, their code on it."""
    response = browser.get(f"/work/{project.slug}/", follow=True)
    assert response.status_code == 200
    assert response.redirect_chain[-1][0] == f"/done/{project.slug}/"
    return response.content.decode()


@pytest.fixture
def rounds(make_project, import_rows):
    """Round 1 on Prolific (code R1DONE): three writers explain the one pair and reach its end; their pairs
    go to the validation study, also on Prolific (code R2DONE). Returns (round 1, validation, browsers)."""
    project = make_project(
        "label_explanation",
        slug="prolific-r1",
        redundancy=3,
        max_annotations=3,
        items_per_page=1,
        audience="prolific",
        completion_code="R1DONE",
    )
    import_rows(project, [{"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    browsers = {pid: arrive(project, pid, f"{pid}-first") for pid in ("PIDA", "PIDB", "PIDC")}
    for browser in browsers.values():
        write_one_page(project, browser)
    send_to_validation(project)
    project.refresh_from_db()
    validation = update_project(project.validation_project, items_per_page=10, completion_code="R2DONE")
    return project, validation, browsers


def judge_own(project, browser: Client) -> None:
    writer = account(browser)
    record_self_judgments(project, writer, {pair.pk: "yes" for pair in pending_pairs(project, writer)})


def test_the_round_one_end_page_links_the_self_check_and_waits_for_it(rounds):
    project, _, browsers = rounds
    page = end_page(project, browsers["PIDA"])
    assert "R1DONE" in page  # earned by round 1's work
    assert REDIRECT not in page
    assert f'href="/work/{project.slug}/explanations/" id="self-check-link"' in page
    assert 'id="follow-up-link"' in page
    judge_own(project, browsers["PIDA"])
    page = end_page(project, browsers["PIDA"])
    assert REDIRECT in page and "R1DONE" in page and "self-check-link" not in page  # nothing due: on to Prolific


def test_the_validation_studys_end_page_leads_to_the_self_check_and_back(rounds):
    project, validation, browsers = rounds
    judge = arrive(validation, "PIDA", "PIDA-round-two")
    assert account(judge) == account(browsers["PIDA"])  # one person, one account
    page = claim_page(validation, account(judge))
    submit_page(page.pk, account(judge), {str(c.item_id): {"value": "yes"} for c in page.claims.all()})
    shown = end_page(validation, judge)
    assert "R2DONE" in shown and REDIRECT not in shown
    address = f"/work/{project.slug}/explanations/?from={validation.slug}"
    assert f'href="{address}" id="self-check-link"' in shown
    assert f"1 of your explanations in {project.title} waits" in shown
    check = judge.get(address)
    assert check.status_code == 200
    pair = check.context["pairs"][0]
    saved = judge.post(address, {f"judgment_{pair.pk}": "yes"})
    assert saved.status_code == 302 and saved["Location"] == address  # the way back kept
    done = judge.get(address).content.decode()
    assert f'href="/work/{validation.slug}/" id="back-to-study">Back to {validation.title}' in done
    assert REDIRECT in end_page(validation, judge)  # nothing due any more


def test_a_new_prolific_session_of_a_writer_with_a_self_check_due_is_let_through_to_it(rounds):
    project, _, browsers = rounds
    end_page(project, browsers["PIDA"])  # round 1's code earned in the first session
    pages = Assignment.objects.filter(project=project).count()
    again = Client()
    response = again.get(f"/enter/{project.slug}/?PROLIFIC_PID=PIDA&STUDY_ID={project.slug}&SESSION_ID=PIDA-later")
    assert response.status_code == 302 and response["Location"] == f"/work/{project.slug}/explanations/"
    assert account(again) == account(browsers["PIDA"])
    assert again.get(response["Location"]).status_code == 200
    assert "R1DONE" in end_page(project, again)  # the code they earned, no new round-1 page
    assert Assignment.objects.filter(project=project).count() == pages
    session = CrowdSession.objects.get(project=project, participant_id="PIDA")
    assert session.session_id == "PIDA-first"  # the session that earned the code stays the one on record

    elsewhere = Client().get(f"/enter/{project.slug}/?PROLIFIC_PID=PIDA&STUDY_ID=another&SESSION_ID=PIDA-later")
    assert elsewhere.status_code == 400  # a link from another Prolific study is no return to this one

    judge_own(project, again)
    refused = Client().get(f"/enter/{project.slug}/?PROLIFIC_PID=PIDA&STUDY_ID={project.slug}&SESSION_ID=PIDA-third")
    assert refused.status_code == 400  # nothing due any more: the other session is refused as before
    assert b"already started this study in another platform session" in refused.content


def test_a_new_session_of_a_writer_who_has_not_earned_the_code_is_refused_with_no_code(rounds):
    project, _, _ = rounds
    # PIDB wrote but never reached the end page: no code earned, although a self-check is due.
    assert not CrowdSession.objects.get(project=project, participant_id="PIDB").completion_code
    refused = Client().get(f"/enter/{project.slug}/?PROLIFIC_PID=PIDB&STUDY_ID={project.slug}&SESSION_ID=PIDB-later")
    assert refused.status_code == 400 and b"R1DONE" not in refused.content
    assert SESSION_KEY not in refused.wsgi_request.session


def test_once_round_one_is_closed_no_self_check_holds_the_validation_studys_end_page(rounds):
    project, validation, _ = rounds
    judge = arrive(validation, "PIDB", "PIDB-round-two")
    page = claim_page(validation, account(judge))
    submit_page(page.pk, account(judge), {str(c.item_id): {"value": "no"} for c in page.claims.all()})
    update_project(project, status="closed")  # its writers can no longer judge their own explanations
    shown = end_page(validation, judge)
    assert REDIRECT in shown and "R2DONE" in shown and "self-check-link" not in shown
