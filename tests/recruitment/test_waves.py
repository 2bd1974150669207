"""Waves: a cloned study runs on Prolific with codes of its own, and a participant is shown only a code the
study's Prolific study registered (a screen-out code with the note that returning forfeits its payment)."""

import pytest

from annotation.services.crowd import crowd
from annotation.services.projects import clone_project, update_project
from recruitment.services import studies
from tests.recruitment.conftest import SITE, TOKEN

pytestmark = pytest.mark.django_db

CODES = ("completion_code", "returned_code", "screened_out_code")


def test_a_cloned_wave_is_created_on_prolific_with_new_codes(study, author, standin):
    first = studies.create_draft(studies.link_of(study), SITE, author)
    study.refresh_from_db()
    wave_one = {name: study.options[name] for name in CODES}
    assert all(wave_one.values())
    wave_two = clone_project(study, "wave-two", author)
    assert not any(crowd.study_setting(wave_two, name) for name in CODES)
    studies.save_link(
        wave_two, author, token=TOKEN, places=2, reward_cents=150, screen_out_reward_cents=20, screen_out_slots=2
    )
    second = studies.create_draft(studies.link_of(wave_two), SITE, author)
    sent = {
        code["code_type"]: code["code"]
        for code in standin.calls_to("POST", "/api/v1/studies/")[1].body["completion_codes"]
    }
    assert set(sent.values()).isdisjoint(wave_one.values())
    assert (second.completed_code, second.returned_code, second.screened_out_code) != (
        first.completed_code,
        first.returned_code,
        first.screened_out_code,
    )
    wave_two.refresh_from_db()
    assert wave_two.options["completion_code"] == sent["COMPLETED"]


def test_a_screen_out_code_prolific_never_registered_is_not_shown(study, author, standin):
    # No screen-out reward: Prolific is sent no screen-out code, yet the study's settings name one.
    studies.save_link(study, author, screen_out_reward_cents=0)
    update_project(study, changed_by=author, screened_out_code="NEVER-SENT")
    link = studies.create_draft(studies.link_of(study), SITE, author)
    study.refresh_from_db()
    assert crowd.leaving_code(study, "prolific", screened_out=True) == link.returned_code
    # A returned code edited after creation is not Prolific's either: no code, the return button instead.
    update_project(study, changed_by=author, returned_code="EDITED-LATER")
    assert crowd.leaving_code(study, "prolific", screened_out=True) == ""
    assert crowd.leaving_code(study, "prolific") == ""


def test_a_registered_screen_out_code_comes_with_its_note_and_no_request_to_return(study, author, standin):
    link = studies.create_draft(studies.link_of(study), SITE, author)
    study.refresh_from_db()
    code = crowd.leaving_code(study, "prolific", screened_out=True)
    assert code == link.screened_out_code
    assert crowd.leaving_message(study, code) == crowd.SCREENED_OUT_MESSAGE
    assert "do not return" in crowd.SCREENED_OUT_MESSAGE
    # Someone who gives back work (not screened out) keeps the study's returned message and code.
    returned = crowd.leaving_code(study, "prolific")
    assert returned == link.returned_code
    assert crowd.leaving_message(study, returned) == crowd.study_setting(study, "returned_message")
