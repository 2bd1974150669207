"""Every model job from the browser: checkpoints picked from the registry, inputs from the author's studies
or uploads, a training job on a slider study's gold, its model in the registry and evaluated on the study by
the study evaluation (the checkpoints page links its form, the checkpoint ticked), which counts where the
reference values come from; another author sees none of it. Tiny local models only; training takes seconds."""

import io
import json
import zipfile

import pytest
from conftest import PAIRS, import_usnli_pairs, write_pairs_jsonl
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings

from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("_media")]
# Tiny settings: one epoch, no surrogate pre-training (the checkbox left unticked), short pairs.
STUDY_ROWS = 2 * len(PAIRS) + 1
TINY_TRAINING = {"epochs": "1", "batch_size": "4", "max_length": "32", "lr": "0.001", "queue": "default"}


@pytest.fixture
def gold_slider_study(make_project, author):
    """A slider study whose items carry gold probabilities (imported U-SNLI rows), one pair longer than the tiny
    models' 128 positions (a trained model is run at the length it was trained with)."""
    project = make_project("unli_slider", slug="slider-gold", owner=author)
    long_pair = ("a man is sleeping " * 50, "a man is sleeping")
    import_usnli_pairs(project, PAIRS * 2 + [long_pair], lambda i: f"{(i % 7) / 7 + 0.05:.3f}")
    return project


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_an_author_trains_on_a_studys_gold_and_evaluates_it_on_the_study(
    client, author, make_user, models_dir, gold_slider_study
):
    client.force_login(author)
    page = client.get("/models/?job=train_unli").content.decode()
    assert "slider-gold" in page and "shared/tiny-encoder" in page and str(models_dir) not in page  # no server paths

    response = client.post(
        "/models/",
        {
            "job": "train_unli",
            "base": "shared/tiny-encoder",
            "train_study": "slider-gold",
            "eval_study": "slider-gold",
            **TINY_TRAINING,
        },
    )
    job = Job.objects.get(kind="train_unli")
    assert response["Location"] == f"/jobs/{job.pk}/"
    assert job.status == "done", job.error
    assert job.project == gold_slider_study and job.params["studies"] == {"train": "slider-gold", "eval": "slider-gold"}
    assert job.params["checkpoints"] == {"base": "shared/tiny-encoder"}
    assert job.params["settings"]["pretrain_snli"] is None and job.params["settings"]["epochs"] == 1
    assert [entry["role"] for entry in job.inputs] == ["train", "eval"] and job.inputs[0][
        "name"
    ] == "slider-gold-usnli.csv"
    assert job.result["n_train"] == STUDY_ROWS and -1 <= job.result["pearson"] <= 1
    # So few rows: the result and its page warn (training.recipe.MIN_TRAINING_ROWS).
    assert job.result["warning"].startswith(f"trained on only {STUDY_ROWS} rows (fewer than 1000)")
    assert 'role="alert">Warning: trained on only' in client.get(f"/jobs/{job.pk}/").content.decode()
    status = client.get(f"/jobs/{job.pk}/status/").content.decode()
    assert "started: UNLI training" in status and "steps" in status and "Download the output" in status
    archive = zipfile.ZipFile(io.BytesIO(b"".join(client.get(f"/jobs/{job.pk}/output/").streaming_content)))
    assert {"config.json", "model_card.json", "MODEL_CARD.md"} <= set(archive.namelist())

    # The registry lists the trained model with its label map and the job that made it.
    registry = client.get("/models/checkpoints/").content.decode()
    assert f"job {job.pk}: model" in registry and "0: probability" in registry and "unli" in registry
    # "Evaluate on the study" opens the study evaluation's form with the checkpoint ticked.
    assert "Evaluate on the study" in registry and '<option value="slider-gold">' in registry
    opened = client.get("/models/checkpoints/evaluate/", {"checkpoint": f"job/{job.pk}", "study": "slider-gold"})
    assert opened["Location"] == f"/evaluation/studies/slider-gold/?model=job%2F{job.pk}"
    form = client.get(opened["Location"]).content.decode()
    assert f'value="job/{job.pk}"' in form.split("checked")[0].rsplit("<input", 1)[1]
    # Five items also answered by (simulated) workers: their collected value is the study's own.
    from annotation.models import Item
    from annotation.services.simulation import simulate

    simulate(gold_slider_study, list(Item.objects.filter(project=gold_slider_study).order_by("-pk")[:5]), seed=0)
    settings = {"batch_size": "4", "precision": "auto", "seed": "0", "bootstrap": "200", "queue": "default"}
    evaluated = client.post(opened["Location"], {"models": [f"job/{job.pk}"], **settings})
    evaluation = Job.objects.get(kind="evaluate_study")
    assert evaluated["Location"] == f"/jobs/{evaluation.pk}/" and evaluation.status == "done", evaluation.error
    assert evaluation.project == gold_slider_study and evaluation.params["checkpoints"] == {"model_0": f"job/{job.pk}"}
    reference = evaluation.result["reference"]
    assert reference["items"] == STUDY_ROWS
    assert reference["sources"] == {"adjudicated": 0, "collected": 5, "imported": STUDY_ROWS - 5}
    (figures,) = evaluation.result["models"].values()
    assert figures["n"] == STUDY_ROWS and -1 <= figures["pearson"] <= 1
    result_page = client.get(f"/jobs/{evaluation.pk}/").content.decode()
    assert "reference values imported" in result_page and "reference values collected" in result_page
    assert f"#{evaluation.pk}" in client.get("/models/checkpoints/").content.decode()  # "used by"

    other = make_user("author2", "author")
    client.force_login(other)
    for url in (f"/jobs/{job.pk}/", f"/jobs/{job.pk}/status/", f"/jobs/{job.pk}/output/", f"/jobs/{evaluation.pk}/"):
        assert client.get(url).status_code == 404, url
    assert f"job/{job.pk}" not in client.get("/models/checkpoints/").content.decode()
    assert "slider-gold" not in client.get("/models/?job=train_unli").content.decode()
    refused = client.get(
        "/models/checkpoints/evaluate/", {"checkpoint": f"job/{job.pk}", "study": "slider-gold"}, follow=True
    )
    assert "Evaluate: pick one of your studies" in refused.content.decode()
    assert Job.objects.count() == 2


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_a_bad_upload_is_refused_with_its_line_and_nothing_is_stored(client, author, models_dir, tmp_path):
    client.force_login(author)
    bad = SimpleUploadedFile(
        "pairs.jsonl", b'{"id": "a", "premise": "P", "hypothesis": "H"}\n{"id": "b", "premise": "P"}\n'
    )
    response = client.post(
        "/models/",
        {
            "job": "predict",
            "model_dir": "shared/tiny-nli",
            "input_file": bad,
            "output_format": "jsonl",
            "batch_size": "4",
            "precision": "auto",
            "queue": "default",
        },
    )
    assert response.status_code == 400
    assert "pairs.jsonl:2: field &#x27;hypothesis&#x27; is missing" in response.content.decode()
    both = client.post("/models/", {"job": "predict", "model_dir": "shared/tiny-nli", "queue": "default"})
    assert "pick a study or upload a file" in both.content.decode()
    wrong_kind = client.post(
        "/models/",
        {
            "job": "predict",
            "model_dir": "shared/tiny-lm",
            "queue": "default",
            "input_file": SimpleUploadedFile("p.jsonl", b"{}"),
        },
    )
    assert "Select a valid choice" in wrong_kind.content.decode()  # an LM is offered under LM choice scoring only
    assert Job.objects.count() == 0


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_prediction_and_lm_choice_scoring_from_uploads(client, author, models_dir, tmp_path):
    client.force_login(author)
    pairs = write_pairs_jsonl(tmp_path / "in.jsonl").read_bytes()
    client.post(
        "/models/",
        {
            "job": "predict",
            "model_dir": "shared/tiny-nli",
            "input_file": SimpleUploadedFile("in.jsonl", pairs),
            "output_format": "jsonl",
            "batch_size": "4",
            "precision": "fp32",
            "queue": "default",
        },
    )
    client.post(
        "/models/",
        {
            "job": "score_choices",
            "model_dir": "shared/tiny-lm",
            "input_file": SimpleUploadedFile("in.jsonl", pairs),
            "output_format": "jsonl",
            "batch_size": "4",
            "queue": "default",
        },
    )
    predicted, scored = Job.objects.order_by("id")
    assert predicted.status == scored.status == "done", (predicted.error, scored.error)
    assert predicted.result["kind"] == "nli" and scored.result["kind"] == "causal_lm"
    for job in (predicted, scored):
        lines = [
            json.loads(line) for line in b"".join(client.get(f"/jobs/{job.pk}/output/").streaming_content).splitlines()
        ]
        assert len(lines) == len(PAIRS) and set(lines[0]["probabilities"]) == {"entailment", "neutral", "contradiction"}
    listed = client.get("/models/").content.decode()
    assert f'href="/jobs/{predicted.pk}/"' in listed and f'href="/jobs/{scored.pk}/"' in listed


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_atoms_are_generated_from_a_study_and_imported_into_a_validity_study(
    client, author, models_dir, make_project, import_rows
):
    source = make_project("nli_label", slug="pairs-study", owner=author)
    import_rows(source, [{"id": f"p{i}", "premise": p, "hypothesis": h} for i, (p, h) in enumerate(PAIRS)])
    validity = make_project("atom_validity", slug="validity", owner=author, status="draft")
    client.force_login(author)
    page = client.get("/models/?job=generate_atoms").content.decode()
    assert '<option value="validity">' in page and '<option value="pairs-study">' in page
    client.post(
        "/models/",
        {
            "job": "generate_atoms",
            "lm_dir": "shared/tiny-lm",
            "nli_dir": "shared/tiny-nli",
            "input_study": "pairs-study",
            "into_study": "validity",
            "max_new_tokens": "8",
            "queue": "default",
        },
    )
    job = Job.objects.get()
    assert job.status == "done", job.error
    assert job.project == validity and job.result["imported"]["examples"] == len(PAIRS)
    assert validity.examples.count() == len(PAIRS) and job.result["rows"] == len(PAIRS)


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_antonym_pairs_from_a_study_with_the_servers_wordnet(
    client, author, models_dir, make_project, import_rows, settings, tmp_path
):
    from test_antonyms import write_wordnet

    settings.WORDNET_DIR = write_wordnet(tmp_path / "wordnet")
    source = make_project("nli_label", slug="pairs-study", owner=author)
    import_rows(source, [{"id": f"p{i}", "premise": p, "hypothesis": h} for i, (p, h) in enumerate(PAIRS)])
    client.force_login(author)
    client.post(
        "/models/",
        {
            "job": "antonyms",
            "nli_dir": "shared/tiny-nli",
            "embedder_dir": "shared/tiny-encoder",
            "input_study": "pairs-study",
            "queue": "default",
        },
    )
    job = Job.objects.get()
    assert job.status == "done", job.error
    assert job.project == source and job.result["rows"] == len(PAIRS) and job.result["written"] >= 1
    lines = [
        json.loads(line) for line in b"".join(client.get(f"/jobs/{job.pk}/output/").streaming_content).splitlines()
    ]
    assert len(lines) == job.result["written"] and lines[0]["modified_hypothesis"] != lines[0]["hypothesis"]


def test_the_retired_evaluation_against_gold_is_no_form_but_its_finished_jobs_still_show(client, author):
    """Evaluations against gold became study evaluations: /models/ offers no such form any more, a finished
    one's page still shows its figures, and one still queued fails saying where the evaluation went."""
    from jobs.kinds import JobError, get_kind

    client.force_login(author)
    assert client.get("/models/?job=evaluate").status_code == 404
    assert "Evaluate against gold" not in client.get("/models/").content.decode()
    old = Job.objects.create(
        kind="evaluate_model", status=Job.Status.DONE, result={"pearson": 0.61234, "n": 26}, created_by=author
    )
    page = client.get(f"/jobs/{old.pk}/").content.decode()
    assert "<code>pearson</code></th><td>0.6123</td>" in page and "(retired)" in page
    with pytest.raises(JobError, match="now study evaluations"):
        get_kind("evaluate_model").run(old, lambda done, total: None)


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_a_prediction_job_runs_at_the_precision_picked_in_the_form(client, author, models_dir, tmp_path):
    from models_backend.devices import cpu_has_bf16

    precision = "bf16-linear" if cpu_has_bf16() else "int8"
    client.force_login(author)
    pairs = write_pairs_jsonl(tmp_path / "in.jsonl").read_bytes()
    client.post(
        "/models/",
        {
            "job": "predict",
            "model_dir": "shared/tiny-nli",
            "input_file": SimpleUploadedFile("in.jsonl", pairs),
            "output_format": "jsonl",
            "batch_size": "4",
            "precision": precision,
            "queue": "default",
        },
    )
    refused = client.post(
        "/models/",
        {
            "job": "predict",
            "model_dir": "shared/tiny-nli",
            "output_format": "jsonl",
            "input_file": SimpleUploadedFile("in.jsonl", pairs),
            "batch_size": "4",
            "precision": "fp8",
            "queue": "default",
        },
    )
    assert "Select a valid choice. fp8 is not one of the available choices." in refused.content.decode()
    job = Job.objects.get()
    assert job.status == "done", job.error
    assert job.result["precision"] == precision


def test_listing_the_checkpoints_again_writes_nothing(models_dir, author):
    """Each listing records this host's models folder; once recorded, a listing only reads (no write per model
    on every page view), and a model taken out of the folder leaves the registry."""
    import shutil

    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from models_backend import catalog
    from models_backend.models import StoredCheckpoint

    first = {checkpoint.key for checkpoint in catalog.checkpoints(author)}
    assert {"shared/tiny-encoder", "shared/tiny-nli", "shared/tiny-lm"} <= first
    with CaptureQueriesContext(connection) as queries:
        assert {checkpoint.key for checkpoint in catalog.checkpoints(author)} == first
    writes = [q["sql"] for q in queries.captured_queries if not q["sql"].lstrip().upper().startswith("SELECT")]
    assert writes == []
    shutil.rmtree(models_dir / "tiny-lm")
    assert "shared/tiny-lm" not in {checkpoint.key for checkpoint in catalog.checkpoints(author)}
    assert not StoredCheckpoint.objects.filter(key="shared/tiny-lm").exists()


def test_a_training_on_enough_rows_carries_no_warning():
    from models_backend.training.recipe import MIN_TRAINING_ROWS, few_rows_warning

    assert few_rows_warning(MIN_TRAINING_ROWS) is None
    assert "only 999 rows" in few_rows_warning(MIN_TRAINING_ROWS - 1)
