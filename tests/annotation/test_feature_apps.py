"""Feature apps plug into the core and can be left out of INSTALLED_APPS: a study whose task type is not
installed is kept but served nowhere, and without the label-variation app (the core pass of make test,
tests/settings_core.py) its pages, API, settings, task types and formats are gone while the core works."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.apps import apps
from django.test import Client
from rest_framework.test import APIClient

from annotation.models import Annotation, Assignment, Project
from annotation.services import extensions
from annotation.services.assignments import claim_page
from annotation.services.study_settings import every_study_settings
from annotation.tasktypes import TASK_TYPES
from dataset_io.formats import FORMATS


def test_a_study_whose_task_type_is_not_installed_is_kept_and_served_nowhere(make_user, make_project):
    author, admin, worker = make_user("author-f", "author"), make_user("admin-f", "admin"), make_user("worker-f")
    served = make_project("nli_label", slug="served", owner=author, status=Project.Status.PUBLISHED)
    Project.objects.create(
        slug="orphan",
        title="A study of a removed app",
        task_type="removed_feature_type",
        owner=author,
        status="published",
    )
    for user in (author, admin):
        api, client = APIClient(), Client()
        api.force_login(user)
        client.force_login(user)
        listed = [project["slug"] for project in api.get("/api/v1/projects/").json()["results"]]
        assert served.slug in listed and "orphan" not in listed
        assert api.get("/api/v1/projects/orphan/").status_code == 404
        assert client.get("/projects/orphan/").status_code == 404
        assert client.get("/").status_code == 200
    client = Client()
    client.force_login(worker)
    home = client.get("/")
    assert home.status_code == 200
    assert f"/work/{served.slug}/" in home.text or served.title in home.text
    assert "/orphan/" not in home.text and "A study of a removed app" not in home.text
    assert client.get("/work/orphan/").status_code == 404
    assert Client().get("/enter/orphan/?PROLIFIC_PID=p&STUDY_ID=s&SESSION_ID=x").status_code == 404
    assert Project.objects.filter(slug="orphan").exists()  # kept, with whatever it holds


def test_an_open_page_of_a_study_whose_task_type_is_not_installed_answers_404(make_project, import_rows, worker):
    """A worker held a page when the study's app was left out (LEFT_OUT_APPS=label_variation): every way to it
    answers 404, as for the study, and nothing is stored or released (a submit through the API was a 500)."""
    project = make_project("nli_label", items_per_page=2)
    import_rows(project, [{"id": str(n), "premise": f"P{n}", "hypothesis": f"H{n}"} for n in range(4)])
    page = claim_page(project, worker)
    removed = "removed_feature_type" if "label_explanation" in TASK_TYPES else "label_explanation"
    Project.objects.filter(pk=project.pk).update(task_type=removed)
    answers = {str(claim.item_id): {"value": "e"} for claim in page.claims.all()}
    api, client = APIClient(), Client()
    api.force_login(worker)
    client.force_login(worker)
    assert api.post(f"/api/v1/assignments/{page.pk}/submit/", {"answers": answers}, format="json").status_code == 404
    assert api.get(f"/api/v1/assignments/{page.pk}/").status_code == 404
    assert api.get("/api/v1/assignments/").json()["results"] == []
    assert api.post(f"/api/v1/assignments/{page.pk}/release/").status_code == 404
    form = {f"item-{item_id}": answer["value"] for item_id, answer in answers.items()}
    assert client.post(f"/work/{project.slug}/{page.pk}/submit/", form).status_code == 404
    assert client.post(f"/work/{project.slug}/{page.pk}/release/").status_code == 404
    page.refresh_from_db()
    assert page.status == Assignment.Status.OPEN and not Annotation.objects.filter(assignment=page).exists()


@pytest.mark.skipif(apps.is_installed("label_variation"), reason="checks the product without the app")
def test_without_the_label_variation_app_nothing_of_it_is_left(make_user, make_project):
    assert not {"label_explanation", "explanation_validation"} & TASK_TYPES.keys()
    assert not {"varierr", "livenli", "taxonomy"} & FORMATS.keys()
    assert not {"reason_taxonomy", "reason_taggers"} & {setting.name for setting in every_study_settings()}
    author = make_user("author-g", "author")
    project = make_project("nli_label", slug="plain", owner=author)
    api = APIClient()
    api.force_login(author)
    for path in ("variation/", "reasons/", "own-explanations/"):
        assert api.get(f"/api/v1/projects/{project.slug}/{path}").status_code == 404
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/")
    assert page.status_code == 200
    # The dataset app's sections are there without it: a study still gets data in and out.
    assert f'action="/projects/{project.slug}/import/"' in page.text and "Download now" in page.text
    assert client.get(f"/projects/{project.slug}/report/").status_code == 200


@pytest.mark.parametrize("app", ["annotation", "dataset_io"])
def test_only_a_feature_app_can_be_left_out(app):
    """LEFT_OUT_APPS naming the core, an app others need (the dataset app) or a typo refuses to start, naming
    it, rather than run half a product."""
    result = subprocess.run(
        [sys.executable, "-c", "import config.settings"],
        env={**os.environ, "LEFT_OUT_APPS": f"label_variation, {app}", "SECRET_KEY": "k"},
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert result.returncode != 0
    assert f"LEFT_OUT_APPS may name feature apps only (label_variation), not {app}" in result.stderr


def test_a_panel_at_a_place_no_page_has_is_refused():
    with pytest.raises(ValueError, match="unknown panel place 'sidebar'; choose one of study_page_validation"):
        extensions.add_panel("sidebar", "x.html", lambda page: {})
    assert all(panel.template != "x.html" for panels in extensions.PANELS.values() for panel in panels)
