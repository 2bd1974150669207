"""Refusals before money moves: a study whose audience takes no Prolific arrivals, or pays below Prolific's
minimum, is neither created nor published (nothing sent); below the recommended rate needs a confirmation;
an entry link naming another Prolific study is turned away."""

import pytest
from django.test import Client

from annotation.models import CrowdSession
from annotation.services.crowd import crowd
from annotation.services.projects import update_project
from recruitment.services import studies
from tests.recruitment.conftest import SITE

pytestmark = pytest.mark.django_db


def test_an_audience_without_prolific_is_refused_before_anything_is_sent(study, author, standin):
    for audience in ("mturk", "members"):
        update_project(study, changed_by=author, audience=audience)
        with pytest.raises(studies.RecruitmentError, match="audience: this study takes no Prolific arrivals"):
            studies.create_draft(studies.link_of(study), SITE, author)
    assert standin.calls == [] and studies.link_of(study).prolific_study_id == ""
    update_project(study, changed_by=author, audience="prolific")
    link = studies.create_draft(studies.link_of(study), SITE, author)
    update_project(study, changed_by=author, audience="mturk")
    link.project.refresh_from_db()
    with pytest.raises(studies.RecruitmentError, match="audience"):
        studies.transition(link, "publish", author)
    assert not standin.calls_to("POST", r"/api/v1/studies/\w+/transition/")


def test_pay_below_the_minimum_is_refused_and_below_the_recommended_rate_needs_a_confirmation(study, author, standin):
    studies.save_link(study, author, reward_cents=20, estimated_minutes=60, screen_out_reward_cents=0)
    with pytest.raises(
        studies.RecruitmentError, match=r"20 for 60 minutes is £0\.20 an hour, below Prolific's minimum"
    ):
        studies.create_draft(studies.link_of(study), SITE, author, confirm_low_pay=True)
    studies.save_link(study, author, reward_cents=700)  # £7.00 an hour: above the minimum, below £9.00
    with pytest.raises(studies.LowPay, match=r"below the £9\.00 Prolific recommends"):
        studies.create_draft(studies.link_of(study), SITE, author)
    assert standin.calls == []
    link = studies.create_draft(studies.link_of(study), SITE, author, confirm_low_pay=True)
    with pytest.raises(studies.LowPay):
        studies.transition(link, "publish", author)
    studies.transition(link, "publish", author, confirm_low_pay=True)
    assert standin.studies[link.prolific_study_id]["status"] == "ACTIVE"


def test_the_page_says_why_and_sends_nothing(study, author, standin):
    studies.save_link(study, author, reward_cents=700, estimated_minutes=60, screen_out_reward_cents=0)
    client = Client()
    client.force_login(author)
    url = f"/recruitment/projects/{study.slug}/prolific/study/"
    page = client.post(url, {"action": "create"}, follow=True).content.decode()
    assert "below the £9.00 Prolific recommends" in page and standin.calls == []
    client.post(url, {"action": "create", "confirm_low_pay": "1"})
    assert len(standin.studies) == 1


def test_an_entry_link_naming_another_prolific_study_is_turned_away(study, author, standin):
    link = studies.create_draft(studies.link_of(study), SITE, author)
    params = {"PROLIFIC_PID": "PWRONG", "SESSION_ID": "se-1"}
    with pytest.raises(crowd.EntryError, match=r"STUDY_ID: this link belongs to another Prolific study \(OTHER\)"):
        crowd.enter(study, {**params, "STUDY_ID": "OTHER"})
    response = Client().get(f"/enter/{study.slug}/", {**params, "STUDY_ID": "OTHER"})
    assert response.status_code == 400 and "STUDY_ID" in response.content.decode()
    assert not CrowdSession.objects.exists()
    assert crowd.enter(study, {**params, "STUDY_ID": link.prolific_study_id}).participant_id == "PWRONG"


def test_prescreening_chosen_on_the_page_is_sent_with_the_study(study, author, standin):
    client = Client()
    client.force_login(author)
    base = f"/recruitment/projects/{study.slug}/prolific/"
    client.post(
        base + "link/", {"name": "Wave two", "minimum_approval_rate": "95", "blocked_studies": "study1\nstudy2"}
    )
    page = client.get(base).content.decode()
    assert 'value="95"' in page and "study1\nstudy2" in page
    refused = client.post(base + "link/", {"blocked_studies": "not an id!"}, follow=True).content.decode()
    assert "blocked_studies: Prolific study ids" in refused
    studies.create_draft(studies.link_of(study), SITE, author)
    filters = standin.calls_to("POST", "/api/v1/studies/")[-1].body["filters"]
    assert {"filter_id": "approval_rate", "selected_range": {"lower": 95, "upper": 100}} in filters
    assert {"filter_id": "previous_studies_blocklist", "selected_values": ["study1", "study2"]} in filters
