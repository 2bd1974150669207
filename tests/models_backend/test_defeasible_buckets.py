"""`evaluate defeasible --nli-model`: buckets of equivalent critical atoms built with local models."""

import json

import pytest
from conftest import build_bert_classifier, force_label
from django.core.management import call_command

from evaluation.suites import run_defeasible
from models_backend.pipelines.equivalence import nli_entailment, sentence_embedder

ROWS = [
    {
        "id": "e0",
        "gold_label": "strengthener",
        "predicted_label": "strengthener",
        "atoms": [{"text": "a man plays", "gold": 2, "valid": True, "predicted_label": "strengthener"}],
    },
    {
        "id": "e1",
        "gold_label": "strengthener",
        "predicted_label": "weakener",
        "atoms": [{"text": "a man plays", "gold": 2, "valid": True, "predicted_label": "strengthener"}],
    },
    {
        "id": "e2",
        "gold_label": "weakener",
        "predicted_label": "weakener",
        "atoms": [{"text": "the dog sleeps", "gold": -1, "valid": True, "predicted_label": "weakener"}],
    },
]


@pytest.fixture(scope="module")
def classifiers(tmp_path_factory):
    always = {}
    for name, index in (("entails", 0), ("contradicts", 2)):
        folder = tmp_path_factory.mktemp(name)
        build_bert_classifier(folder)
        force_label(folder, index)
        always[name] = folder
    return always


def evaluate(capsys, *args):
    call_command("evaluate", "defeasible", *args, "--json")
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.django_db
def test_buckets_from_models(tmp_path, classifiers, tiny_encoder, capsys):
    path = tmp_path / "d.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ROWS))
    apart = evaluate(
        capsys, "--input", str(path), "--nli-model", str(classifiers["contradicts"]), "--embedder", str(tiny_encoder)
    )
    # Nothing entails anything: identical texts share a bucket, different texts never do.
    assert sorted(b["support"] for b in apart["buckets"]) == [1.0, 2.0]
    assert apart["inferential_consistency"] == pytest.approx((0.5**2 + 1.0**2) / 2 + (0.5**2 + 0.0**2) / 2)
    together = evaluate(
        capsys, "--input", str(path), "--nli-model", str(classifiers["entails"]), "--embedder", str(tiny_encoder)
    )
    embed = sentence_embedder(tiny_encoder)
    similar = float((embed(["a man plays"]) @ embed(["the dog sleeps"]).T)[0, 0]) >= 0.75
    assert len(together["buckets"]) == (1 if similar else 2)
    direct = run_defeasible(path, embed=embed, entails=nli_entailment(classifiers["entails"]))
    assert direct["inferential_consistency"] == together["inferential_consistency"]
