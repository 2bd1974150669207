"""A study evaluated from the browser (issue 52, item 1): the study page links its evaluations, the form
takes the study's checkpoints, two models are compared with paired intervals and the table downloads as
LaTeX; a refused evaluation says why on the page and stores no job."""

import pytest
from conftest import PAIRS, build_unli_regressor
from django.test import override_settings

from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_media")]
# The evaluation form's settings: small batches and few resamples.
FORM_SETTINGS = {"batch_size": "4", "precision": "auto", "seed": "0", "bootstrap": "200", "alt_test_min_items": "30"}


@pytest.fixture
def label_study(make_project, import_rows, author):
    study = make_project("nli_label", slug="labels", owner=author)
    counts = [{"e": 3, "n": 1}, {"c": 4}, {"e": 5}, {"n": 2, "c": 2}, {"e": 1, "n": 1, "c": 1}, {"n": 3}, {"c": 2}]
    import_rows(
        study,
        [
            {"uid": f"g{i}", "example": {"premise": p, "hypothesis": h}, "label_counter": counter}
            for i, ((p, h), counter) in enumerate(zip(PAIRS, counts))
        ],
        "chaosnli",
    )
    return study


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_two_models_are_compared_on_a_study_from_its_page(client, author, evaluation_models, label_study):
    client.force_login(author)
    study_page = client.get("/projects/labels/").content.decode()
    assert 'href="/evaluation/studies/labels/"' in study_page

    form = client.get("/evaluation/studies/labels/").content.decode()
    assert 'value="shared/nli-a"' in form and 'value="shared/defeasible"' not in form  # only this protocol's kinds
    response = client.post(
        "/evaluation/studies/labels/",
        {"models": ["shared/nli-a", "shared/nli-b"], **FORM_SETTINGS, "queue": "default"},
    )
    job = Job.objects.get(kind="evaluate_study")
    assert response.status_code == 302 and response["Location"] == f"/jobs/{job.pk}/"
    assert job.status == "done", job.error
    assert job.queue == "default" and job.project == label_study
    assert list(job.result["models"]) == ["nli-a", "nli-b"]
    reference = job.result["reference"]
    assert reference["sources"] == {"adjudicated": 0, "collected": 0, "imported": 5}  # two items tie
    assert "2 items left out: their labels tie for the most votes" in reference["warnings"][0]
    rows = job.result["comparison"]["rows"]
    assert {row["metric"] for row in rows} == {"jsd", "kl", "majority_acc", "old_acc"}
    assert sum(row["best"] for row in rows if row["metric"] == "jsd") == 1

    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Models compared (paired bootstrap)" in page and "Warning: only 5 items" in page
    assert "reference values imported" in page and "<svg" in page
    latex = client.get(f"/evaluation/studies/comparisons/{job.pk}.tex")
    assert latex.status_code == 200 and "attachment" in latex["Content-Disposition"]
    assert "\\begin{tabular}" in latex.content.decode() and "nli-a" in latex.content.decode()
    assert client.get(f"/evaluation/studies/comparisons/{job.pk}.pdf").status_code == 404
    assert f'href="/jobs/{job.pk}/"' in client.get("/projects/labels/").content.decode()  # the study links it


def test_a_model_whose_labels_do_not_map_is_refused_on_the_page(client, author, evaluation_models, label_study):
    client.force_login(author)
    response = client.post("/evaluation/studies/labels/", {"models": ["shared/odd-labels"], **FORM_SETTINGS})
    assert response.status_code == 400
    assert "its labels yes, no, maybe do not map to the study&#x27;s entailment" in response.content.decode()
    assert not Job.objects.exists()


def test_a_checkpoint_of_another_kind_is_not_offered_and_refused(client, author, evaluation_models, label_study):
    client.force_login(author)
    response = client.post("/evaluation/studies/labels/", {"models": ["shared/defeasible"]})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    assert not Job.objects.exists()


def test_a_study_with_nothing_settled_is_refused_on_the_page(
    client, author, evaluation_models, make_project, import_rows
):
    study = make_project("nli_label", slug="empty", owner=author)
    import_rows(study, [{"id": "a", "premise": "a man", "hypothesis": "a man is sleeping"}])
    client.force_login(author)
    response = client.post("/evaluation/studies/empty/", {"models": ["shared/nli-a"], **FORM_SETTINGS})
    assert response.status_code == 400
    assert "study empty has no settled items to evaluate against" in response.content.decode()
    assert not Job.objects.exists()


def test_another_author_reaches_neither_the_form_nor_the_downloads(client, make_user, evaluation_models, label_study):
    client.force_login(make_user("someone-else", "author"))
    assert client.get("/evaluation/studies/labels/").status_code == 404


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_the_api_starts_and_lists_a_studys_evaluations(author, evaluation_models, label_study):
    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(author)
    refused = api.post("/api/v1/projects/labels/evaluations/", {"models": ["shared/odd-labels"]}, format="json")
    assert refused.status_code == 409 and "do not map to the study's" in refused.json()["detail"]
    unknown = api.post("/api/v1/projects/labels/evaluations/", {"models": ["shared/nowhere"]}, format="json")
    assert unknown.status_code == 404 and unknown.json()["field"] == "models"
    out_of_bounds = api.post(
        "/api/v1/projects/labels/evaluations/",
        {"models": ["shared/nli-a"], "settings": {"bootstrap": 5}},
        format="json",
    )
    assert out_of_bounds.status_code == 400 and out_of_bounds.json()["field"] == "settings"
    assert not Job.objects.exists()
    started = api.post(
        "/api/v1/projects/labels/evaluations/",
        {"models": ["shared/nli-a"], "settings": {"bootstrap": 200, "batch_size": 4}},
        format="json",
    )
    assert started.status_code == 202, started.json()
    job = Job.objects.get(pk=started.json()["job"])
    assert job.status == "done" and job.params["settings"]["bootstrap"] == 200
    assert api.get("/api/v1/projects/labels/evaluations/").json()[0]["models"] == ["nli-a"]
    assert api.get(f"/api/v1/jobs/{job.pk}/").json()["result"]["models"]["nli-a"]["n"] == 5


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_a_slider_studys_hypothesis_only_baseline_from_the_page_has_a_row_of_its_own(
    client, author, evaluation_models, label_study, slider_study
):
    build_unli_regressor(evaluation_models / "unli-a", seed=3)
    build_unli_regressor(evaluation_models / "unli-h", seed=4)
    client.force_login(author)
    assert "Hypothesis-only baseline" not in client.get("/evaluation/studies/labels/").content.decode()
    assert "Hypothesis-only baseline" in client.get("/evaluation/studies/slider/").content.decode()
    settings = {"batch_size": "4", "precision": "auto", "seed": "0", "bootstrap": "200", "queue": "default"}
    client.post("/evaluation/studies/slider/", {"models": ["shared/unli-a"], "baseline": "shared/unli-h", **settings})
    job = Job.objects.get(kind="evaluate_study")
    assert job.status == "done", job.error
    baseline = job.result["hypothesis_only_baseline"]
    assert baseline["model"] == "unli-h" and baseline["n"] == len(PAIRS) and "pearson" in baseline
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert '<th scope="row">unli-h (hypothesis-only baseline)</th>' in page

    from rest_framework.test import APIClient

    api = APIClient()
    api.force_authenticate(author)
    refused = api.post(
        "/api/v1/projects/labels/evaluations/", {"models": ["shared/nli-a"], "baseline": "shared/unli-h"}, format="json"
    )
    assert refused.status_code == 409 and "only probability (UNLI) studies" in refused.json()["detail"]
    assert Job.objects.count() == 1
