"""Repeated ids are found from 64-bit fingerprints (a big file's ids are never held whole), and reported
only when the ids themselves are equal: a fingerprint collision must not refuse a good file."""

import io
import json

import pytest

from annotation.models import Example
from dataset_io.services import import_checks
from dataset_io.services.importers import ImportFileError, import_stream

pytestmark = pytest.mark.django_db


def jsonl(ids):
    return io.StringIO(
        "".join(
            json.dumps({"id": key, "premise": f"P {n}", "hypothesis": f"H {n}", "label": "entailment"}) + "\n"
            for n, key in enumerate(ids)
        )
    )


@pytest.mark.parametrize("purpose", ["data", "gold"])  # the streamed two-pass import, and the in-memory one
def test_every_repeat_names_its_line_and_the_first_one(make_project, purpose):
    project = make_project("nli_label")
    with pytest.raises(ImportFileError) as raised:
        import_stream(project, jsonl(["a", "b", "a", "c", "a", "b"]), "jsonl", purpose=purpose)
    assert raised.value.errors == [
        (3, "id", "repeats the id of line 1"),
        (5, "id", "repeats the id of line 1"),
        (6, "id", "repeats the id of line 2"),
    ]
    assert not Example.objects.filter(project=project).exists()


@pytest.mark.parametrize("purpose", ["data", "gold"])
def test_a_fingerprint_collision_is_not_a_repeat(make_project, monkeypatch, purpose):
    monkeypatch.setattr(import_checks, "fingerprint", lambda text: 7)  # every id collides
    project = make_project("nli_label")
    with pytest.raises(ImportFileError) as raised:
        import_stream(project, jsonl(["a", "b", "c", "b"]), "jsonl", purpose=purpose)
    assert raised.value.errors == [(4, "id", "repeats the id of line 2")]
    import_stream(project, jsonl(["a", "b", "c"]), "jsonl", purpose=purpose)
    assert Example.objects.filter(project=project).count() == 3
