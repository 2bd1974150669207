"""The task-type contract from outside: a throw-away plug-in (tests/tasktype_plugin: a module and a template,
nothing else) is registered and a study of it goes through import, claim, submit, settings, agreement, report
and export with no file of the app changed. The system checks hold every registered type to the contract."""

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from annotation.models import Annotation, Project
from annotation.services.projects import update_project
from annotation.tasktypes import TASK_TYPES, register, unregister
from common.schema import SettingError
from dataset_io.formats import exportable
from tests.conftest import IMMEDIATE_TASKS
from tests.tasktype_plugin.likert import LikertRating

PLUGIN_TEMPLATES = Path(__file__).resolve().parents[1] / "tasktype_plugin" / "templates"
ROWS = [
    {"id": f"r{number}", "premise": f"A person walks a dog in park {number}.", "hypothesis": "Someone is outside."}
    for number in range(6)
]

pytestmark = pytest.mark.django_db


@pytest.fixture
def plugin(settings):
    settings.TEMPLATES = [{**settings.TEMPLATES[0], "DIRS": [*settings.TEMPLATES[0]["DIRS"], PLUGIN_TEMPLATES]}]
    task = register(LikertRating())
    yield task
    unregister(task.name)


def api_for(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(user)
    return client


def contract_errors() -> list:
    from annotation.apps import task_type_contract

    return task_type_contract()


def test_a_plugin_task_type_runs_a_study_end_to_end(plugin, author, make_user, settings):
    settings.TASKS = IMMEDIATE_TASKS  # the report's figures computed when the page starts their job
    assert contract_errors() == []
    api = api_for(author)
    created = api.post(
        "/api/projects/",
        {
            "slug": "likert",
            "task_type": "likert_rating",
            "status": "published",
            "redundancy": 2,
            "items_per_page": 3,
            "options": {"points": 7},
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    upload = SimpleUploadedFile("rows.jsonl", "".join(json.dumps(row) + "\n" for row in ROWS).encode())
    imported = api.post("/api/projects/likert/import/", {"format": "jsonl", "file": upload}, format="multipart")
    assert imported.status_code == 200 and imported.json()["created"] == 6, imported.content

    preview = signed_in(author).get("/projects/likert/preview/").content.decode()
    assert preview.count('type="radio"') == 3 * 7 and "7 Certainly true" in preview  # the plug-in's template
    assert "on a scale of 7 points" in preview

    # Two workers rate every item: the same (settled), one step apart (an even split: a tie for the author),
    # or 7 and 1 (one more answer is asked for).
    ratings = {"w1": [7, 7, 7, 7, 7, 7], "w2": [7, 7, 6, 1, 1, 1]}
    position = {
        item: number
        for number, item in enumerate(
            Project.objects.get(slug="likert").items.order_by("id").values_list("id", flat=True)
        )
    }
    for username, values in ratings.items():
        worker = api_for(make_user(username))
        seen = worker.get("/api/projects/likert/").json()
        assert seen["options"]["points"] == 7  # the scale is worker-visible
        while (claim := worker.post("/api/projects/likert/claim/")).status_code == 201:
            page = claim.json()
            answers = {str(item["id"]): {"value": values[position[item["id"]]]} for item in page["items"]}
            refused = worker.post(
                f"/api/assignments/{page['id']}/submit/",
                {"answers": {key: {"value": 8} for key in answers}},
                format="json",
            )
            assert refused.status_code == 409 and "must be from 1 to 7" in refused.json()["detail"]
            submitted = worker.post(f"/api/assignments/{page['id']}/submit/", {"answers": answers}, format="json")
            assert submitted.status_code == 200, submitted.content

    project = Project.objects.get(slug="likert")
    assert (
        list(project.items.order_by("id").values_list("status", flat=True))
        == ["done", "done", "adjudication"] + ["open"] * 3
    )
    with pytest.raises(SettingError, match="points: cannot change once the project has answers"):
        update_project(project, points=5)  # the setting says it gives answers their meaning

    answer = api.get("/api/projects/likert/agreement/").json()  # the report job's figures, run in this request
    assert answer["status"] == "current"
    figures = answer["figures"]
    assert figures["level"] == "ordinal" and figures["n_annotations"] == 12 and figures["n_workers"] == 2
    assert figures["krippendorff_alpha"] is not None and figures["human_baseline"]["aggregate"] == "median"
    report = signed_in(author).get("/projects/likert/report/")
    assert report.status_code == 200
    assert (
        "two annotators&#x27; ratings" in report.content.decode()
        or "two annotators' ratings" in report.content.decode()
    )

    assert {"jsonl", "annotations"} <= set(exportable(project.task, project.options))
    exported = api.get("/api/projects/likert/export/?as=jsonl")
    records = [json.loads(line) for line in b"".join(exported.streaming_content).decode().splitlines()]
    aggregates = [record["nli_studio"]["aggregate"] for record in records]
    assert [(a["value"], a["method"], a["tie"]) for a in aggregates[:3]] == [(7, "median", False)] * 2 + [
        (None, "median", True)
    ]
    assert Annotation.objects.filter(item__project=project).count() == 12


def signed_in(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def test_the_system_checks_name_each_broken_part_of_a_plugin(plugin):
    from django.core.management import call_command
    from django.core.management.base import SystemCheckError

    from common.schema import Setting

    call_command("check")  # the registered types, the plug-in included, keep the contract

    class Broken(LikertRating):
        name = "broken_rating"  # no template of that name
        has_demo = True  # but no demo()
        settings = (Setting("points", "int", 5, "another points"), Setting("title", "str", "", "a clash"))

        def example_answers(self, options):
            return [0]  # off its own scale

    register(Broken())
    try:
        found = {(error.id, error.msg.split(":")[1].strip()[:30]) for error in contract_errors()}
        assert {error_id for error_id, _ in found} == {
            "tasktypes.E001",
            "tasktypes.E004",
            "tasktypes.E005",
            "tasktypes.E006",
        }, found
        messages = " | ".join(error.msg for error in contract_errors())
        assert "annotation/tasks/broken_rating.html does not exist" in messages
        assert "'points' is declared differently by task type 'likert_rating'" in messages
        assert "'title' has the name of a setting every study has" in messages
        assert "demo() gives no demo study" in messages
        with pytest.raises(SystemCheckError, match="broken_rating"):
            call_command("check")
    finally:
        unregister("broken_rating")


def test_a_second_task_type_under_a_registered_name_is_refused(plugin):
    with pytest.raises(ValueError, match="'likert_rating' is registered already"):
        register(LikertRating())
    assert list(TASK_TYPES).count("likert_rating") == 1
