"""The dataset bundle read as its users read it: unzipped, a Hugging Face dataset repository that `datasets`
loads offline config by config, whose Croissant metadata mlcroissant validates and reads record set by record
set, with its card's metadata and the details the author gave or left missing."""

import csv
import hashlib
import io
import json
import zipfile

import pytest
import yaml
from django.core.management import CommandError, call_command

from annotation.models import Project
from annotation.tasktypes import TASK_TYPES
from dataset_io.demo import load_demo
from dataset_io.formats import exportable
from dataset_io.services.bundle import write_bundle
from dataset_io.services.dataset_card import MISSING, CardError, card_details
from tests.conftest import IMMEDIATE_TASKS
from tests.dataset_io import test_datasets

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
three_way = test_datasets.three_way  # a tie, an adjudication, a worker excluded with a reason


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """`datasets` with the Hub out of reach and its caches in tmp_path: what it loads, it loads from the folder."""
    # Imported first: huggingface_hub reads HF_HUB_OFFLINE into its flag when first imported, so importing it
    # after setenv would turn the flag on before monkeypatch notes its value, and leave it on for the tests
    # that follow (the Hub push's).
    import datasets
    import huggingface_hub.constants

    for name in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    datasets.disable_progress_bars()

    def load(folder, config):
        return datasets.load_dataset(str(folder), config, split="train", cache_dir=str(tmp_path / "cache"))

    return load


def unzipped(project, tmp_path, **kwargs):
    """The bundle written and unzipped: (folder, statement, card metadata, validation)."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / f"{project.slug}.zip"
    statement = write_bundle(project, path, **kwargs)
    folder = tmp_path / project.slug
    with zipfile.ZipFile(path) as archive:
        archive.extractall(folder)
    card = (folder / "README.md").read_text()
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    return folder, statement, meta, json.loads((folder / "validation.json").read_text())


def test_every_config_of_every_task_types_bundle_loads_offline_with_the_rows_validation_counts(offline, tmp_path):
    load_demo(simulate=True)
    projects = list(Project.objects.order_by("slug"))
    assert {project.task_type for project in projects} == set(TASK_TYPES)
    details = card_details(license="cc-by-4.0", languages="en")
    for project in projects:
        # By default every format has a Parquet copy (the formats mix CSV and JSON Lines), and each a config.
        folder, statement, meta, validation = unzipped(project, tmp_path, card=details)
        files = {file["format"]: file for file in statement["files"]}
        assert set(files) == set(exportable(project.task, project.options))
        croissant = validated_croissant(folder)
        configs = {config["config_name"]: config for config in meta["configs"]}
        # A format with no rows has no config (`datasets` cannot load an empty file); every other one has.
        assert set(configs) == {fmt for fmt, file in files.items() if file["rows"]}, project.slug
        assert meta["configs"][0]["default"] is True
        for fmt, config in configs.items():
            file = files[fmt]
            assert config["data_files"] == [{"split": "train", "path": file["parquet"]}]
            loaded = offline(folder, fmt)
            counted = validation[file["name"]]["records"]
            assert validation[file["name"]]["valid"], (project.slug, fmt)
            assert len(loaded) == file["rows"] > 0, (project.slug, fmt)
            if fmt == "livenli":  # one row per explanation; a record is a uid's rows
                assert len(set(loaded["uid"])) == counted
            else:
                assert len(loaded) == counted, (project.slug, fmt)
            assert_same_records(loaded, folder / file["name"], file["columns"])
            assert croissant_records(croissant, fmt) == [dict(row) for row in loaded], (project.slug, fmt)
        assert meta["license"] == "cc-by-4.0" and meta["language"] == ["en"]
        assert meta["task_categories"][0] == "text-classification" and "natural-language-inference" in meta["task_ids"]
        assert meta["size_categories"] == ["n<1K"] and meta["pretty_name"] == project.title


def test_without_parquet_the_json_lines_formats_are_the_configs(offline, tmp_path, three_way):
    project, _ = three_way
    folder, statement, meta, validation = unzipped(project, tmp_path, parquet=False)
    assert all(file["parquet"] is None for file in statement["files"])
    jsonl = [file for file in statement["files"] if file["name"].endswith(".jsonl") and file["rows"]]
    assert [config["config_name"] for config in meta["configs"]] == [file["format"] for file in jsonl]
    for file in jsonl:
        assert config_path(meta, file["format"]) == file["name"]
        loaded = offline(folder, file["format"])
        assert len(loaded) == file["rows"] == validation[file["name"]]["records"]


def validated_croissant(folder):
    """croissant.json read by mlcroissant (which refuses a document with errors), its every file's SHA-256
    checked against the file."""
    import mlcroissant

    dataset = mlcroissant.Dataset(jsonld=folder / "croissant.json")
    described = {file.name: file.sha256 for file in dataset.metadata.distribution}
    written = {path.relative_to(folder).as_posix(): path for path in folder.rglob("*") if path.is_file()}
    assert set(described) == set(written) - {"croissant.json"}
    for name, digest in described.items():
        assert hashlib.sha256(written[name].read_bytes()).hexdigest() == digest, name
    return dataset


def croissant_records(dataset, record_set):
    """A record set's records as mlcroissant yields them, keyed by field name (its text decoded)."""
    prefix = f"{record_set}/"
    return [
        {
            key.removeprefix(prefix): value.decode() if isinstance(value, bytes) else value
            for key, value in record.items()
        }
        for record in dataset.records(record_set=record_set)
    ]


def config_path(meta, name):
    return next(config["data_files"][0]["path"] for config in meta["configs"] if config["config_name"] == name)


def assert_same_records(loaded, text_file, columns):
    """The rows `datasets` read from a Parquet copy are the text file's records: a JSON Lines record's fields
    (a column kept as JSON text decoded; a struct's keys other records brought in are null), a CSV row's
    cells as written."""
    kinds = {column["name"]: column["type"] for column in columns}
    with open(text_file, encoding="utf-8", newline="") as stream:
        if text_file.suffix == ".csv":
            records = list(csv.DictReader(stream))
        else:
            records = [json.loads(line) for line in stream if line.strip()]
    assert len(records) == len(loaded)
    for record, row in zip(records, loaded):
        assert set(row) == set(kinds)
        for name, kind in kinds.items():
            value = row[name]
            if text_file.suffix == ".csv":
                assert cell(value) == record.get(name, ""), (text_file.name, name)
            elif kind == "json":
                assert (None if value is None else json.loads(value)) == record.get(name), (text_file.name, name)
            else:
                assert without_nulls(value) == without_nulls(record.get(name)), (text_file.name, name)


def cell(value):
    if value is None:
        return ""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def without_nulls(value):
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def test_the_card_says_what_the_author_gave_and_marks_what_is_missing(three_way, tmp_path):
    project, _ = three_way
    _, _, meta, _ = unzipped(project, tmp_path)
    card = (tmp_path / project.slug / "README.md").read_text()
    assert meta["license"] == "unknown" and "language" not in meta and "source_datasets" not in meta
    assert meta["annotations_creators"] == ["crowdsourced"]
    assert f"{MISSING} license" in card and "description, citation, language, source datasets" in card
    # The body is the data statement: its exclusions and its files' fields.
    assert "failed attention checks" in card and "| `label_counter` |" in card

    given = card_details(
        license="MIT-0",  # an SPDX id the Hub does not list: `other`, named and linked
        description="Three-way NLI labels from a small crowd.",
        citation="@misc{three, title={Three}}",
        languages="en, de",
        source_datasets=["extended|snli"],
    )
    _, _, meta, _ = unzipped(project, tmp_path / "given", card=given)
    card = (tmp_path / "given" / project.slug / "README.md").read_text()
    assert (meta["license"], meta["license_name"]) == ("other", "mit-0")
    assert meta["license_link"] == "https://spdx.org/licenses/MIT-0.html"
    assert meta["language"] == ["en", "de"] and meta["source_datasets"] == ["extended|snli"]
    assert "Three-way NLI labels from a small crowd." in card and "@misc{three, title={Three}}" in card
    assert MISSING not in card
    assert card_details(license="Apache-2.0").license == "apache-2.0"  # an SPDX id the Hub lists: its own id


@pytest.mark.parametrize(
    "details, field",
    [
        ({"license": "free for all"}, "license"),
        ({"license": "MIT OR Apache-2.0"}, "license"),
        ({"license": "LicenseRef-ours"}, "license"),  # no page on spdx.org to link the card to
        ({"languages": "English"}, "language"),
        ({"source_datasets": "snli"}, "source_datasets"),
    ],
)
def test_a_card_detail_the_hub_would_refuse_names_its_field_and_writes_nothing(three_way, tmp_path, details, field):
    project, _ = three_way
    with pytest.raises(CardError) as refused:
        card_details(**details)
    assert refused.value.field == field
    out = tmp_path / "bundle.zip"
    option = {"license": "--license", "language": "--language", "source_datasets": "--source-datasets"}[field]
    value = next(iter(details.values()))
    with pytest.raises(CommandError, match=f"^{field}: "):
        call_command(
            "export_dataset", project.slug, "--bundle", "--output", str(out), option, value, stdout=io.StringIO()
        )
    assert not out.exists()


def test_the_command_writes_the_card_from_its_options(three_way, tmp_path):
    project, _ = three_way
    out = tmp_path / "bundle.zip"
    stdout = io.StringIO()
    call_command(
        "export_dataset",
        project.slug,
        "--bundle",
        "--output",
        str(out),
        "--license",
        "cc-by-sa-4.0",
        "--pretty-name",
        "Three ways",
        "--language",
        "en",
        "--json",
        stdout=stdout,
    )
    result = json.loads(stdout.getvalue().strip().splitlines()[-1])
    # Small files, but the formats mix CSV and JSON Lines: Parquet copies, so that every format is a config.
    assert result["valid"] and all(file["parquet"] for file in result["files"])
    with zipfile.ZipFile(out) as archive:
        meta = yaml.safe_load(archive.read("README.md").decode().split("---\n")[1])
    assert (meta["license"], meta["pretty_name"], meta["language"]) == ("cc-by-sa-4.0", "Three ways", ["en"])
    with_rows = [file["parquet"] for file in result["files"] if file["rows"]]
    assert [config["data_files"][0]["path"] for config in meta["configs"]] == with_rows


def test_the_bundle_page_takes_the_cards_details_and_refuses_a_bad_one_naming_it(three_way, author, settings, tmp_path):
    from django.test import Client
    from rest_framework.test import APIClient

    from jobs import files
    from jobs.models import Job

    settings.TASKS = IMMEDIATE_TASKS
    settings.MEDIA_ROOT = tmp_path / "media"
    project, _ = three_way
    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/").content.decode()
    assert 'id="bundle-card"' in page and 'name="license"' in page and "load_dataset(" in page

    refused = client.post(
        f"/projects/{project.slug}/exports/", {"format": "bundle", "license": "free for all"}, follow=True
    )
    assert "Not exported: license: &#x27;free for all&#x27; is neither" in refused.content.decode()
    assert not Job.objects.filter(kind="bundle").exists()

    form = {"format": "bundle", "license": "CC-BY-4.0", "description": "Labels.", "language": "en", "parquet": "no"}
    started = client.post(f"/projects/{project.slug}/exports/", form)
    job = Job.objects.get(kind="bundle")
    assert started["Location"] == f"/jobs/{job.pk}/" and job.status == "done", job.error
    assert job.params["card"]["license"] == "cc-by-4.0" and job.params["parquet"] is False
    with zipfile.ZipFile(io.BytesIO(b"".join(files.read_chunks(job.output)))) as archive:
        card = archive.read("README.md").decode()
        assert not any(name.endswith(".parquet") for name in archive.namelist())
    meta = yaml.safe_load(card.split("---\n")[1])
    assert (meta["license"], meta["language"]) == ("cc-by-4.0", ["en"]) and "Labels." in card

    api = APIClient()
    api.force_login(author)
    answer = api.post(f"/api/projects/{project.slug}/bundle/?license=cc-by-4.0&language=English")
    assert answer.status_code == 400 and answer.json()["field"] == "language"
    assert Job.objects.filter(kind="bundle").count() == 1
    # An SPDX id the Hub does not list keeps its name and link through the job's parameters.
    answer = api.post(f"/api/projects/{project.slug}/bundle/?license=mit-0&parquet=no")
    job = Job.objects.get(pk=answer.json()["job"])
    assert answer.status_code == 202 and job.status == "done", job.error
    with zipfile.ZipFile(io.BytesIO(b"".join(files.read_chunks(job.output)))) as archive:
        meta = yaml.safe_load(archive.read("README.md").decode().split("---\n")[1])
    assert (meta["license"], meta["license_name"]) == ("other", "mit-0")
    assert meta["license_link"] == "https://spdx.org/licenses/MIT-0.html"


def test_a_parquet_copy_types_a_column_only_where_every_value_reads_back_as_written(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from dataset_io.services.tables import JSON_TEXT, write_parquet

    table = tmp_path / "t.csv"
    table.write_text('id,unli,answers,tie,note\n007,0.50,1,true,"two\nlines"\n12,0.25,2,,\n', encoding="utf-8")
    found = write_parquet(lambda: open(table, "rb"), "csv", tmp_path / "t.parquet")
    assert found.columns == {
        "id": pa.string(),  # 007 would read back as 7
        "unli": pa.string(),  # 0.50 would read back as 0.5
        "answers": pa.int64(),
        "tie": pa.bool_(),
        "note": pa.string(),
    }
    assert pq.read_table(tmp_path / "t.parquet").to_pylist() == [
        {"id": "007", "unli": "0.50", "answers": 1, "tie": True, "note": "two\nlines"},
        {"id": "12", "unli": "0.25", "answers": 2, "tie": None, "note": ""},
    ]
    lines = tmp_path / "t.jsonl"
    records = [{"n": 1, "any": "e", "votes": ["e"], "never": None}, {"n": 0.5, "any": {"label": "n"}, "votes": []}]
    lines.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    found = write_parquet(lambda: open(lines, "rb"), "jsonl", tmp_path / "l.parquet")
    assert found.columns == {"n": pa.float64(), "any": JSON_TEXT, "votes": JSON_TEXT, "never": pa.string()}
    assert pq.read_table(tmp_path / "l.parquet").to_pylist() == [
        {"n": 1.0, "any": '"e"', "votes": '["e"]', "never": None},
        {"n": 0.5, "any": '{"label": "n"}', "votes": "[]", "never": None},
    ]
