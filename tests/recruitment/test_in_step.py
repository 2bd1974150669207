"""Both sides in step: places, reward and time edited after creation reach the Prolific study (places added
while it runs, nothing else then); the dashboard's pause, resume and close move Prolific first (close
pauses it, so that reopening starts it again, unless the close page's box says for good); Stop, for good, asks for a confirmation; drift Prolific shows is listed on the page and brought together by one button."""

import pytest
from django.test import Client

from annotation.models import Project
from recruitment.models import ProlificLink
from recruitment.services import studies
from tests.recruitment.conftest import SITE

pytestmark = pytest.mark.django_db


@pytest.fixture
def drafted(study, author, standin):
    return studies.create_draft(studies.link_of(study), SITE, author)


@pytest.fixture
def author_client(author):
    client = Client()
    client.force_login(author)
    return client


def test_edits_after_creation_reach_the_prolific_study(drafted, study, author, standin):
    studies.save_link(study, author, places=5, reward_cents=200, estimated_minutes=9)
    sent = standin.calls_to("PATCH", r"/api/v1/studies/\w+/")[-1].body
    assert sent == {"total_available_places": 5, "reward": 200, "estimated_completion_time": 9}
    studies.transition(drafted, "publish", author)
    studies.save_link(study, author, places=8)  # more places while it runs
    assert standin.studies[drafted.prolific_study_id]["total_available_places"] == 8
    with pytest.raises(studies.RecruitmentError, match="places can only go up"):
        studies.save_link(study, author, places=2)
    with pytest.raises(studies.RecruitmentError, match="reward_cents: the Prolific study is running"):
        studies.save_link(study, author, reward_cents=300)
    link = ProlificLink.objects.get()
    assert (link.places, link.reward_cents) == (8, 200)  # a refusal changes nothing here either
    assert len(standin.calls_to("PATCH", r"/api/v1/studies/\w+/")) == 2


def test_the_dashboard_moves_prolific_too(drafted, study, author, author_client, standin):
    def dashboard(status, **extra):
        return author_client.post(f"/projects/{study.slug}/status/", {"status": status, **extra}, follow=True)

    studies.transition(drafted, "publish", author)
    prolific = standin.studies[drafted.prolific_study_id]
    dashboard("paused")
    assert prolific["status"] == "PAUSED" and ProlificLink.objects.get().state == "paused"
    dashboard("published")
    assert prolific["status"] == "ACTIVE" and ProlificLink.objects.get().state == "active"
    # Closed: paused on Prolific, so that the study can be reopened, as the close page says.
    dashboard("closed", confirm="1")
    study.refresh_from_db()
    assert prolific["status"] == "PAUSED" and study.status == Project.Status.CLOSED
    assert ProlificLink.objects.get().state == "paused" and studies.drift(ProlificLink.objects.get()) == []
    dashboard("published")
    study.refresh_from_db()
    assert prolific["status"] == "ACTIVE" and study.status == Project.Status.PUBLISHED
    actions = [call.body["action"] for call in standin.calls_to("POST", r"/api/v1/studies/\w+/transition/")]
    assert actions == ["PUBLISH", "PAUSE", "START", "PAUSE", "START"]
    # Stopped for good (the box ticked): STOP is sent, the page says so, and reopening is refused.
    page = author_client.post(
        f"/recruitment/projects/{study.slug}/prolific/study/", {"action": "stop", "confirm": "1"}, follow=True
    ).content.decode()
    assert prolific["status"] == "COMPLETED" and "cannot be reopened" in page
    assert standin.calls_to("POST", r"/api/v1/studies/\w+/transition/")[-1].body == {"action": "STOP"}
    page = dashboard("published").content.decode()
    assert "cannot start again" in page
    study.refresh_from_db()
    assert study.status == Project.Status.CLOSED


def test_a_study_closed_while_paused_stays_paused_and_is_not_stopped_by_bringing_sides_together(
    drafted, study, author, author_client, standin
):
    studies.transition(drafted, "publish", author)
    studies.transition(drafted, "pause", author)
    author_client.post(f"/projects/{study.slug}/status/", {"status": "closed", "confirm": "1"})
    prolific = standin.studies[drafted.prolific_study_id]
    study.refresh_from_db()
    assert prolific["status"] == "PAUSED" and study.status == Project.Status.CLOSED
    prolific["status"] = "ACTIVE"  # started again on Prolific's own site
    author_client.post(f"/recruitment/projects/{study.slug}/prolific/study/", {"action": "fix"})
    assert prolific["status"] == "PAUSED"  # paused again, never stopped
    assert "STOP" not in [call.body["action"] for call in standin.calls_to("POST", r"/api/v1/studies/\w+/transition/")]


def test_the_close_page_offers_to_stop_the_prolific_study_for_good_and_does_when_ticked(
    drafted, study, author, author_client, standin
):
    close = f"/projects/{study.slug}/status/"
    assert 'id="close-for-good"' not in author_client.post(close, {"status": "closed"}).content.decode()  # a draft
    studies.transition(drafted, "publish", author)
    page = author_client.post(close, {"status": "closed"}).content.decode()
    assert 'id="close-for-good"' in page and "cannot be reopened" in page  # asked before anything is sent

    author_client.post(close, {"status": "closed", "confirm": "1", "for_good": "1"})

    study.refresh_from_db()
    prolific = standin.studies[drafted.prolific_study_id]
    assert study.status == Project.Status.CLOSED and prolific["status"] == "COMPLETED"
    assert ProlificLink.objects.get().state == "stopped"
    assert standin.calls_to("POST", r"/api/v1/studies/\w+/transition/")[-1].body == {"action": "STOP"}
    assert 'id="close-for-good"' not in author_client.post(close, {"status": "closed"}).content.decode()


def test_a_prolific_refusal_leaves_the_dashboard_status_as_it_was(drafted, study, author, author_client, standin):
    studies.transition(drafted, "publish", author)
    standin.token = "revoked"
    page = author_client.post(f"/projects/{study.slug}/status/", {"status": "paused"}, follow=True).content.decode()
    assert "Prolific" in page and "401" in page
    study.refresh_from_db()
    assert study.status == Project.Status.PUBLISHED and ProlificLink.objects.get().state == "active"


def test_stop_asks_for_a_confirmation(drafted, study, author, author_client, standin):
    studies.transition(drafted, "publish", author)
    url = f"/recruitment/projects/{study.slug}/prolific/study/"
    page = author_client.post(url, {"action": "stop"}, follow=True).content.decode()
    assert "tick the box next to Stop" in page
    assert standin.studies[drafted.prolific_study_id]["status"] == "ACTIVE"
    author_client.post(url, {"action": "stop", "confirm": "1"})
    assert standin.studies[drafted.prolific_study_id]["status"] == "COMPLETED"


def test_drift_is_shown_and_brought_together(drafted, study, author, author_client, standin):
    studies.transition(drafted, "publish", author)
    prolific = standin.studies[drafted.prolific_study_id]
    prolific["status"], prolific["total_available_places"] = "PAUSED", 2  # changed on Prolific's own site
    page = author_client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
    assert 'id="drift"' in page and "state: Prolific says PAUSED" in page and "places: 2 on Prolific, 3 here" in page
    author_client.post(f"/recruitment/projects/{study.slug}/prolific/study/", {"action": "fix"})
    assert prolific["status"] == "ACTIVE" and prolific["total_available_places"] == 3
    assert studies.drift(ProlificLink.objects.get()) == []
    assert 'id="drift"' not in author_client.get(f"/recruitment/projects/{study.slug}/prolific/").content.decode()
