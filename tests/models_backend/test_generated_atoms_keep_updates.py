"""Atom generation into a validity study keeps each example's update and its type (issue 52, item 4): the
study's valid atoms go on to a defeasible study with them (annotation.services.atom_chain)."""

import json

import pytest
from conftest import PAIRS
from django.test import override_settings

from jobs.models import Job
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db
UPDATES = ["It is raining hard.", "", "She is on a stage.", "", "", "", ""]  # some rows have none
KINDS = ["weakener", "", "strengthener", "", "", "", ""]


@override_settings(TASKS=IMMEDIATE_TASKS)
def test_the_validity_studys_examples_carry_the_input_rows_updates(client, author, models_dir, make_project, tmp_path):
    from django.core.files.uploadedfile import SimpleUploadedFile

    rows = [
        {"id": f"d{i}", "premise": p, "hypothesis": h, "Update": update, "UpdateType": kind}
        for i, ((p, h), update, kind) in enumerate(zip(PAIRS, UPDATES, KINDS))
    ]
    validity = make_project("atom_validity", slug="validity", owner=author, status="draft")
    client.force_login(author)
    client.post(
        "/models/",
        {
            "job": "generate_atoms",
            "lm_dir": "shared/tiny-lm",
            "nli_dir": "shared/tiny-nli",
            "input_file": SimpleUploadedFile("pairs.jsonl", "".join(json.dumps(row) + "\n" for row in rows).encode()),
            "into_study": "validity",
            "max_new_tokens": "8",
            "queue": "default",
        },
    )
    job = Job.objects.get()
    assert job.status == "done", job.error
    stored = {e.source_id: (e.update, e.update_type, e.source_label) for e in validity.examples.all()}
    assert stored == {f"d{i}": (update, kind, kind) for i, (update, kind) in enumerate(zip(UPDATES, KINDS))}
