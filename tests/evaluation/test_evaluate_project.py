"""`evaluate unli --project` scores predictions against a project's final labels, adjudication included."""

import json

import numpy as np
import pytest
from django.core.management import call_command
from scipy import stats

from annotation.models import Item
from annotation.services.analysis.adjudication import adjudicate
from dataset_io.services.importers import import_file

pytestmark = pytest.mark.django_db


def test_unli_against_a_project_uses_adjudicated_labels(shared_data, make_project, author, tmp_path, capsys):
    project = make_project("unli_slider", slug="usnli-dev")
    import_file(project, shared_data / "u-snli" / "test.csv", "usnli")
    first = Item.objects.filter(project=project).order_by("id").first()
    adjudicate(first.id, author, 0.5, "checked by hand")
    rng = np.random.default_rng(0)
    gold = {}
    for item in Item.objects.filter(project=project).select_related("example"):
        gold[item.example.source_id] = float(
            item.final_value if item.final_value is not None else item.example.source_probability
        )
    ids = list(gold)
    predictions = {i: min(1.0, max(0.0, gold[i] + rng.normal(0, 0.2))) for i in ids}
    path = tmp_path / "pred.csv"
    path.write_text("id,prediction\n" + "".join(f"{i},{predictions[i]}\n" for i in ids))
    call_command("evaluate", "unli", "--project", project.slug, "--predictions", str(path), "--json")
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    truth = np.array([gold[i] for i in ids])
    guess = np.array([predictions[i] for i in ids])
    assert result["n"] == 3040
    assert result["pearson"] == pytest.approx(stats.pearsonr(truth, guess).statistic, abs=1e-12)
    assert result["mse"] == pytest.approx(float(np.mean((truth - guess) ** 2)), abs=1e-12)
    assert gold[first.example.source_id] == 0.5
