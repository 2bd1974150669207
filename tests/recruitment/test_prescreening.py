"""Prescreening by country and language: chosen on the Prolific page as names of a fixed list, sent as the
choice ids Prolific's filter list gives; bad input names its field and saves nothing, and the stand-in refuses
unknown filters and malformed values."""

import httpx
import pytest
from django.test import Client

from recruitment.prescreening import PrescreeningError, parse
from recruitment.services import studies
from tests.recruitment.conftest import SITE, TOKEN

pytestmark = pytest.mark.django_db


def test_names_are_read_in_any_case_once_each_and_unknown_ones_are_named():
    assert parse("countries", " united kingdom, Ireland,,United Kingdom ") == ["United Kingdom", "Ireland"]
    assert parse("fluent_languages", "") == []
    with pytest.raises(PrescreeningError, match="first_languages: 'Klingon' is not in Prolific's list"):
        parse("first_languages", "English, Klingon")


def test_place_and_language_chosen_on_the_page_go_out_as_prolifics_choice_ids(study, author, standin):
    client = Client()
    client.force_login(author)
    base = f"/recruitment/projects/{study.slug}/prolific/"
    client.post(
        base + "link/",
        {"countries": "united kingdom, Ireland", "first_languages": "English", "fluent_languages": "French, german"},
    )
    link = studies.link_of(study)
    assert link.countries == ["United Kingdom", "Ireland"] and link.fluent_languages == ["French", "German"]
    page = client.get(base).content.decode()
    assert 'value="United Kingdom, Ireland"' in page and 'value="French, German"' in page

    refused = client.post(base + "link/", {"countries": "Atlantis", "places": "9"}, follow=True).content.decode()
    assert "countries: &#x27;Atlantis&#x27; is not in Prolific&#x27;s list" in refused
    link.refresh_from_db()
    assert link.countries == ["United Kingdom", "Ireland"] and link.places == 3  # nothing of it saved

    studies.create_draft(link, SITE, author)
    filters = standin.calls_to("POST", "/api/v1/studies/")[-1].body["filters"]
    assert {"filter_id": "current-country-of-residence", "selected_values": ["0", "3"]} in filters
    assert {"filter_id": "first-language", "selected_values": ["0"]} in filters
    assert {"filter_id": "fluent-languages", "selected_values": ["1", "2"]} in filters
    assert standin.studies[link.prolific_study_id]["filters"] == filters
    with pytest.raises(studies.RecruitmentError, match="countries: the Prolific study was created with its filters"):
        studies.save_link(study, author, countries=["Canada"], places=5)
    link.refresh_from_db()
    assert link.countries == ["United Kingdom", "Ireland"] and link.places == 3
    studies.save_link(study, author, countries=["United Kingdom", "Ireland"], places=5)  # unchanged: taken


def test_a_name_prolific_does_not_offer_stops_the_creation(study, author, standin):
    link = studies.save_link(study, author, countries=["Iceland"])  # on our list, not among the stand-in's choices
    with pytest.raises(studies.RecruitmentError, match="countries: Prolific's filter current-country-of-residence"):
        studies.create_draft(link, SITE, author)
    assert not standin.calls_to("POST", "/api/v1/studies/") and studies.link_of(study).prolific_study_id == ""


def test_a_saved_value_off_the_list_is_refused_by_the_service(study, author):
    with pytest.raises(studies.RecruitmentError, match="fluent_languages: names from Prolific's list"):
        studies.save_link(study, author, fluent_languages="English")  # a string, not a list
    assert studies.link_of(study).fluent_languages == []


@pytest.mark.parametrize(
    "bad_filter",
    [
        {"filter_id": "country-of-dreams", "selected_values": ["0"]},
        {"filter_id": "current-country-of-residence", "selected_values": ["99"]},
        {"filter_id": "current-country-of-residence", "selected_values": "0"},
        {"filter_id": "fluent-languages", "selected_values": []},
        {"filter_id": "first-language", "selected_values": [0]},
        {"filter_id": "first-language"},
    ],
)
def test_the_standin_refuses_unknown_filters_and_malformed_values(study, standin, bad_filter):
    body = studies.study_payload(studies.link_of(study), SITE)
    body["completion_codes"] = [{"code": "C1", "code_type": "COMPLETED", "actions": [{"action": "MANUALLY_REVIEW"}]}]
    body["filters"] = [bad_filter]
    answer = httpx.post(standin.url + "/api/v1/studies/", json=body, headers={"Authorization": f"Token {TOKEN}"})
    assert answer.status_code == 400 and "filters" in answer.text
    assert standin.studies == {}
    body["filters"] = [{"filter_id": "first-language", "selected_values": ["0"]}]
    good = httpx.post(standin.url + "/api/v1/studies/", json=body, headers={"Authorization": f"Token {TOKEN}"})
    assert good.status_code == 201


def test_the_dry_run_shows_the_names_where_prolifics_choice_ids_go_and_sends_nothing(study, author, standin):
    link = studies.save_link(study, author, countries=["United Kingdom"], first_languages=["English"])
    recorded = studies.dry_run(link, SITE)
    assert [(request.method, request.url) for request in recorded][:2] == [
        ("GET", standin.url + "/api/v1/filters/"),
        ("POST", standin.url + "/api/v1/studies/"),
    ]
    filters = recorded[1].body["filters"]
    assert {"filter_id": "current-country-of-residence", "selected_values": ["United Kingdom"]} in filters
    assert {"filter_id": "first-language", "selected_values": ["English"]} in filters
    assert standin.calls == []
