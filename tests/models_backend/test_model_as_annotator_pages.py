"""The model as an annotator (issue 52, item 3): a finished study evaluation places each model among the
study's annotators, on its result page, in the API's result and, flagged, on the study's report; the model's
answers never become answers: the exports and the report's human figures are the same after it."""

import json
import re

import pytest
from conftest import PAIRS, build_unli_regressor
from django.core.management import call_command
from django.test import override_settings

from annotation.models import Annotation
from annotation.services.analysis.agreement import project_agreement
from annotation.services.simulation import simulate
from dataset_io.services.exporters import write_export
from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_media")]


@pytest.fixture
def answered_study(make_project, import_rows, author):
    study = make_project("nli_label", slug="answered", owner=author)
    import_rows(study, [{"id": f"a{i}", "premise": p, "hypothesis": h} for i, (p, h) in enumerate(PAIRS)])
    simulate(study, list(study.items.order_by("id")), seed=4)
    return study


def exports(project, folder):
    """Every export a study's answers leave by, as bytes."""
    texts = {}
    for fmt in ("annotations", "chaosnli", "jsonl"):
        path = folder / f"{fmt}.out"
        write_export(project, fmt, path)
        texts[fmt] = path.read_bytes()
    return texts


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_a_model_is_placed_among_the_annotators_and_never_becomes_one(
    client, author, evaluation_models, answered_study, tmp_path, capsys
):
    (tmp_path / "before").mkdir()
    before = exports(answered_study, tmp_path / "before")
    answers_before = Annotation.objects.count()
    figures_before = project_agreement(answered_study, bootstrap=50)

    client.force_login(author)
    response = client.post(
        "/evaluation/studies/answered/",
        {
            "models": ["shared/nli-a"],
            "batch_size": "4",
            "precision": "auto",
            "seed": "0",
            "bootstrap": "100",
            "alt_test_min_items": "30",
            "queue": "default",
        },
    )
    assert response.status_code == 302, re.findall(r"error[^>]*>([^<]+)", response.content.decode())
    job = Job.objects.get(kind="evaluate_study")
    assert job.status == "done", job.error
    place = job.result["as_annotator"]["nli-a"]
    workers = Annotation.objects.filter(item__project=answered_study).values("worker").distinct().count()
    assert place["ranked"] == workers and 0 <= place["better_than"] <= workers
    assert place["rank"] == 1 + workers - place["better_than"] - sum(
        a["score"] == place["model"]["score"] for a in place["annotators"]
    )
    assert place["model"]["items"] == job.result["reference"]["items"]  # scored on the evaluated items
    # The alt-test is the suite's own on the evaluated items (the tied one left out), unavailable here as there.
    alt_test = job.result["models"]["nli-a"]["alt_test"]["unavailable"]
    assert place["alt_test"] == {"unavailable": alt_test} and "no annotator has 30 items" in alt_test

    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "The model as an annotator" in page and "model, not a person" in page
    assert f"better than {place['better_than']} of {workers} annotators" in page
    assert client.get(f"/api/v1/jobs/{job.pk}/").json()["result"]["as_annotator"]["nli-a"] == place

    report = client.get("/projects/answered/report/").content.decode()
    assert 'id="model-as-annotator-h"' in report and "model, not a person" in report
    assert f'href="/jobs/{job.pk}/"' in report

    # The command line places the model by the same implementation.
    capsys.readouterr()
    call_command("evaluate_study", "answered", model=[str(evaluation_models / "nli-a")], bootstrap=100, json=True)
    from_command = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["as_annotator"]["nli-a"]
    assert from_command == place

    (tmp_path / "after").mkdir()
    assert exports(answered_study, tmp_path / "after") == before
    assert Annotation.objects.count() == answers_before
    assert project_agreement(answered_study, bootstrap=50) == figures_before


def test_the_report_shows_no_model_section_before_an_evaluation(client, author, answered_study):
    client.force_login(author)
    report = client.get("/projects/answered/report/").content.decode()
    assert "model-as-annotator-h" not in report


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_a_slider_model_is_scored_by_its_distance_to_the_annotators_median(
    client, author, evaluation_models, slider_study
):
    import csv
    import io
    import statistics
    import zipfile

    build_unli_regressor(evaluation_models / "unli-a", seed=3)
    simulate(slider_study, list(slider_study.items.order_by("id")), seed=5)

    client.force_login(author)
    settings = {"batch_size": "4", "precision": "auto", "seed": "0", "bootstrap": "100", "queue": "default"}
    client.post("/evaluation/studies/slider/", {"models": ["shared/unli-a"], **settings})
    job = Job.objects.get(kind="evaluate_study")
    assert job.status == "done", job.error
    place = job.result["as_annotator"]["unli-a"]
    assert place["higher_is_better"] is False and "median" in place["measure"]
    assert "slider" in place["alt_test"]["unavailable"]

    # By hand: the model's probability against the median of each item's worker answers.
    download = client.get(f"/api/v1/jobs/{job.pk}/output/")
    with zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))) as archive:
        text = archive.read("unli-a/predictions.csv").decode()
    predicted = {row["id"]: float(row["prediction"]) for row in csv.DictReader(io.StringIO(text))}
    answers: dict[str, list[float]] = {}
    for key, value in Annotation.objects.filter(item__project=slider_study).values_list(
        "item__example__source_id", "value"
    ):
        answers.setdefault(key, []).append(float(value))
    distances = [abs(predicted[key] - statistics.median(values)) for key, values in answers.items() if len(values) > 1]
    assert place["model"] == {"items": len(distances), "score": pytest.approx(sum(distances) / len(distances))}
    assert "lower is better" in client.get(f"/jobs/{job.pk}/").content.decode()


def test_the_alt_test_verdict_beside_the_placement_is_the_suites(evaluation_models, answered_study, tmp_path):
    from evaluation.study_evaluation.as_annotator import as_annotator_rows
    from evaluation.study_evaluation.protocols import Settings
    from evaluation.study_evaluation.scoring import evaluate_folders

    settings = Settings(bootstrap=100, alt_test_min_items=4)  # below the paper's 30: 7 items to test on
    result = evaluate_folders(answered_study, [evaluation_models / "nli-a"], tmp_path / "out", settings)
    suite, verdict = result["models"]["nli-a"]["alt_test"], result["as_annotator"]["nli-a"]["alt_test"]
    assert verdict == {
        "passed": suite["passed"],
        "winning_rate": suite["winning_rate"],
        "epsilon": suite["epsilon"],
        "advantage_probability": suite["advantage_probability"],
        "annotators_tested": len(suite["annotators"]),
        "annotators_too_few_items": len(suite["too_few_items"]),
    }
    (row,) = as_annotator_rows(result)
    assert row["alt_test"].startswith(("passed: winning rate", "not passed: winning rate"))
