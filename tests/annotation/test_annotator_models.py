"""Annotator models on a project: the service on VariErr's real per-annotator NLI labels, the command, the
API and the report page."""

import io
import json

import pytest
from django.core.management import call_command

from annotation.models import Annotation, Item
from annotation.services.analysis.annotator_models import project_annotator_models
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db

# VariErr's label lists, and the project's labels (ChaosNLI's letters) in the same order.
VARIERR_LABELS = ("entailment", "neutral", "contradiction")
LABELS = ("e", "n", "c")
ITEMS = 40


def varierr_rows(shared_data, limit=ITEMS):
    """VariErr's first items: each annotator's one round-1 label (annotators who gave two labels to an item
    are left out on it) and the ChaosNLI majority of 100 labels."""
    rows = []
    with (shared_data / "varierr" / "varierr.json").open() as lines:
        for line in lines:
            record = json.loads(line)
            given: dict[int, set] = {}
            for long_name, label in zip(VARIERR_LABELS, LABELS):
                for explanation in record[long_name]:
                    given.setdefault(explanation["annotator"], set()).add(label)
            single = {annotator: labels.pop() for annotator, labels in given.items() if len(labels) == 1}
            chaos = record["chaosnli_labels"]
            majority = max(chaos, key=chaos.get)
            rows.append((record, single, majority))
            if len(rows) == limit:
                break
    return rows


@pytest.fixture
def varierr_project(make_project, make_user, import_rows, shared_data):
    """An nli_label study of VariErr items answered by its four annotators, plus a fifth worker who answers
    every item with a label the ChaosNLI majority did not pick; the first five items are adjudicated with
    the ChaosNLI majority."""
    project = make_project("nli_label", slug="varierr")
    rows = varierr_rows(shared_data)
    import_rows(project, [{"id": r["id"], "premise": r["context"], "hypothesis": r["statement"]} for r, _, _ in rows])
    annotators = [make_user(f"varierr-{n}") for n in range(4)]
    contrarian = make_user("contrarian")
    items = {item.example.source_id: item for item in project.items.select_related("example")}
    answers = []
    for record, single, majority in rows:
        item = items[record["id"]]
        for annotator, label in single.items():
            answers.append(Annotation(item=item, worker=annotators[annotator], raw={"label": label}, value=label))
        wrong = LABELS[(LABELS.index(majority) + 1) % 3]
        answers.append(Annotation(item=item, worker=contrarian, raw={"label": wrong}, value=wrong))
    Annotation.objects.bulk_create(answers)
    for record, _, majority in rows[:5]:
        Item.objects.filter(pk=items[record["id"]].pk).update(adjudicated=majority)
    return project, rows


def test_service_on_varierr(varierr_project):
    project, rows = varierr_project
    report = project_annotator_models(project)

    expected_answers = sum(len(single) + 1 for _, single, _ in rows)
    assert (report["n_items"], report["n_workers"], report["n_answers"]) == (ITEMS, 5, expected_answers)
    assert report["n_imported_votes"] == 0 and "annotator_models" not in report["unavailable"]
    reliability = {entry["worker"]: entry for entry in report["workers"]}
    for method in ("wawa", "dawid_skene", "mace", "glad"):
        worst = min(reliability, key=lambda name: reliability[name][method])
        assert worst == "contrarian", (method, reliability)
    # Majority vote per item, worked out from the answers themselves.
    by_item = {entry["example_id"]: entry for entry in report["items"]}
    items = {item.example.source_id: item.example_id for item in project.items.select_related("example")}
    for record, single, majority in rows:
        votes = [*single.values(), LABELS[(LABELS.index(majority) + 1) % 3]]
        counts = {label: votes.count(label) for label in LABELS}
        top = [label for label in LABELS if counts[label] == max(counts.values())]
        assert by_item[items[record["id"]]]["majority_vote"] == (top[0] if len(top) == 1 else None)
    assert report["gold"]["adjudicated"]["items"] == 5
    assert set(report["gold"]["adjudicated"]["accuracy"]) == set(report["methods"])
    assert "gold_gold_checks" in report["unavailable"]


def test_exports_carry_each_workers_reliability_and_the_validator_checks_it(varierr_project):
    from dataset_io.formats import get_format
    from dataset_io.services import exporters
    from dataset_io.services.provenance import annotator_id

    project, _ = varierr_project
    report = project_annotator_models(project)
    expected = {
        annotator_id(project, entry["worker_id"]): {"wawa": entry["wawa"], "dawid_skene": entry["dawid_skene"]}
        for entry in report["workers"]
    }
    text = "".join(exporters.export(project, "annotations"))
    rows = [json.loads(line) for line in text.splitlines()]
    assert rows and all(row["worker_reliability"] == pytest.approx(expected[row["annotator"]]) for row in rows)
    records = [json.loads(line) for line in "".join(exporters.export(project, "jsonl")).splitlines()]
    answers = [answer for record in records for answer in record["nli_studio"]["annotations"]]
    assert all(answer["worker_reliability"] == pytest.approx(expected[answer["annotator"]]) for answer in answers)
    annotations = get_format("annotations")
    assert list(annotations.validate(io.StringIO(text))) == []
    broken = text.replace('"wawa": ', '"wawa": 1', 1)  # a reliability above 1
    assert [error.field for error in annotations.validate(io.StringIO(broken))][:1] == ["worker_reliability.wawa"]


def test_command_prints_the_same_as_json(varierr_project):
    project, _ = varierr_project
    out = io.StringIO()
    call_command("annotator_models", project.slug, "--json", stdout=out)
    assert json.loads(out.getvalue()) == json.loads(json.dumps(project_annotator_models(project)))
    text = io.StringIO()
    call_command("annotator_models", project.slug, stdout=text)
    assert "contrarian" in text.getvalue() and "accuracy against adjudicated (5 items)" in text.getvalue()


def test_blocked_answers_and_imported_votes_stay_out(make_project, make_user, import_rows):
    project = make_project("nli_label", slug="chaos-like")
    import_rows(
        project,
        [
            {
                "uid": "p1",
                "example": {"premise": "A dog runs.", "hypothesis": "An animal moves."},
                "label_counter": {"e": 3, "n": 1},
            },
            {
                "uid": "p2",
                "example": {"premise": "A cat sleeps.", "hypothesis": "A cat runs."},
                "label_counter": {"c": 4},
            },
        ],
        "chaosnli",
    )
    report = project_annotator_models(project)
    assert report["n_imported_votes"] == 8 and report["n_answers"] == 0
    assert "worker ids" in report["unavailable"]["imported_votes"]
    assert "two or more workers" in report["unavailable"]["annotator_models"]
    # Two workers, one of whose answers are excluded: again too few workers.
    first, second = make_user("w-a"), make_user("w-b")
    for item in project.items.all():
        Annotation.objects.create(item=item, worker=first, raw={}, value="e")
        Annotation.objects.create(item=item, worker=second, raw={}, value="n", excluded=True)
    report = project_annotator_models(project)
    assert report["n_answers"] == 2 and "got 1" in report["unavailable"]["annotator_models"]


def test_task_types_without_nominal_labels_say_so(make_project):
    report = project_annotator_models(make_project("unli_slider", slug="slider"))
    assert report["unavailable"]["annotator_models"] == "they apply to nominal labels; this task type's are not"
    assert report["workers"] == [] and report["items"] == []


def test_api_and_report_page(client, author, varierr_project, settings):
    settings.TASKS = IMMEDIATE_TASKS  # the report's figures computed when the page starts their job
    project, _ = varierr_project
    client.force_login(author)
    body = client.get(f"/api/v1/projects/{project.slug}/annotator-models/").json()
    assert body["n_workers"] == 5 and len(body["workers"]) == 5

    page = client.get(f"/projects/{project.slug}/report/")
    html = page.content.decode()
    assert page.status_code == 200 and 'id="worker-reliability"' in html
    assert html.count("/workers/") >= 5 and "Dawid-Skene" in html and "adjudicated (5 items)" in html


def test_large_projects_fit_the_fast_models_and_point_to_the_command(
    client, author, varierr_project, monkeypatch, settings
):
    settings.TASKS = IMMEDIATE_TASKS  # the report's figures computed when the page starts their job
    from annotation.services.analysis import annotator_models, report_job

    project, _ = varierr_project
    monkeypatch.setattr(annotator_models, "INTERACTIVE_ANSWERS", 10)
    monkeypatch.setattr(report_job, "JOB_MODEL_ANSWERS", 10)  # the report's job has a limit of its own
    client.force_login(author)
    body = client.get(f"/api/v1/projects/{project.slug}/annotator-models/").json()
    assert body["methods"] == ["majority_vote", "wawa", "dawid_skene"]
    assert len(body["workers"]) == 5 and all("dawid_skene" in row and "mace" not in row for row in body["workers"])
    assert "manage.py annotator_models varierr" in body["unavailable"]["slow_models"]
    html = client.get(f"/projects/{project.slug}/report/").content.decode()
    assert "manage.py annotator_models varierr" in html and "Dawid-Skene" in html and "GLAD</th>" not in html
