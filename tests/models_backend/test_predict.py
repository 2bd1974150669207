import csv
import json
import random

import numpy as np
import pytest
import torch
from conftest import PAIRS, build_bert_classifier, build_unli_regressor, write_pairs_jsonl
from django.core.management import CommandError, call_command
from transformers import AutoModelForSequenceClassification, AutoTokenizer


def direct_outputs(folder, pairs, activation):
    """One unbatched forward pass per pair, the reference the runner must reproduce."""
    model = AutoModelForSequenceClassification.from_pretrained(folder, local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    outputs = []
    with torch.no_grad():
        for premise, hypothesis in pairs:
            logits = model(**tokenizer(premise, hypothesis, return_tensors="pt")).logits[0]
            outputs.append(activation(logits).numpy())
    return np.array(outputs)


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_predict_matches_direct_forward_in_any_order(tiny_nli, tmp_path, batch_size):
    expected = direct_outputs(tiny_nli, PAIRS, lambda logits: torch.softmax(logits, -1))
    order = list(range(len(PAIRS)))
    random.Random(batch_size).shuffle(order)
    source = write_pairs_jsonl(tmp_path / "in.jsonl", [PAIRS[i] for i in order])
    output = tmp_path / "out.jsonl"
    call_command("predict", model=str(tiny_nli), input=str(source), output=str(output), batch_size=batch_size)
    rows = read_jsonl(output)
    assert [row["id"] for row in rows] == [f"p{i}" for i in range(len(PAIRS))]
    for position, row in enumerate(rows):
        probabilities = [row["probabilities"][name] for name in ("entailment", "neutral", "contradiction")]
        np.testing.assert_allclose(probabilities, expected[order[position]], atol=1e-4)
        assert row["label"] == ("entailment", "neutral", "contradiction")[int(np.argmax(probabilities))]


def test_regressor_csv_from_usnli_columns(tmp_path, capsys):
    folder = tmp_path / "unli"
    build_unli_regressor(folder)
    source = tmp_path / "usnli.csv"
    with source.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "pre", "hyp", "nli", "unli"])
        writer.writerows([i + 1, p, h, 1, 0.5] for i, (p, h) in enumerate(PAIRS))
    output = tmp_path / "pred.csv"
    call_command(
        "predict", model=str(folder), input=str(source), output=str(output), format="csv", batch_size=2, json=True
    )
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["rows"] == len(PAIRS) and summary["device"] == "cpu" and summary["rows_per_s"] > 0
    with output.open() as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["id", "prediction"]
    expected = direct_outputs(folder, PAIRS, torch.sigmoid)[:, 0]
    np.testing.assert_allclose([float(r["prediction"]) for r in rows], expected, atol=1e-4)
    assert [r["id"] for r in rows] == [str(i + 1) for i in range(len(PAIRS))]


def test_chaosnli_format_reorders_labels_to_enc(tmp_path):
    folder = tmp_path / "cen"
    build_bert_classifier(folder, id2label={0: "contradiction", 1: "entailment", 2: "neutral"}, seed=3)
    source = write_pairs_jsonl(tmp_path / "in.jsonl")
    output = tmp_path / "chaos.json"
    call_command("predict", model=str(folder), input=str(source), output=str(output), format="chaosnli", name="tiny")
    predictions = json.loads(output.read_text())["tiny"]
    expected = direct_outputs(folder, PAIRS, lambda logits: torch.softmax(logits, -1))[:, [1, 2, 0]]
    for i in range(len(PAIRS)):
        entry = predictions[f"p{i}"]
        assert entry["uid"] == f"p{i}"
        np.testing.assert_allclose(entry["predicted_probabilities"], expected[i], atol=1e-4)
        assert entry["predicted_label"] == ("entailment", "neutral", "contradiction")[int(np.argmax(expected[i]))]


def test_causal_lm_predictions_are_distributions(tiny_lm, tmp_path):
    source = write_pairs_jsonl(tmp_path / "in.jsonl", PAIRS[:3])
    output = tmp_path / "lm.jsonl"
    call_command("predict", model=str(tiny_lm), input=str(source), output=str(output), batch_size=4)
    rows = read_jsonl(output)
    assert len(rows) == 3
    for row in rows:
        assert set(row["probabilities"]) == {"entailment", "neutral", "contradiction"}
        assert sum(row["probabilities"].values()) == pytest.approx(1.0)


def test_bad_input_names_line_and_field(tiny_nli, tmp_path):
    source = tmp_path / "bad.jsonl"
    source.write_text('{"id": "a", "premise": "a man", "hypothesis": "a dog"}\n{"id": "b", "premise": "a man"}\n')
    with pytest.raises(CommandError, match=r"bad.jsonl:2: field 'hypothesis' is missing"):
        call_command("predict", model=str(tiny_nli), input=str(source), output=str(tmp_path / "o.jsonl"))
    with pytest.raises(CommandError, match="does not exist"):
        call_command("predict", model=str(tmp_path / "none"), input=str(source), output=str(tmp_path / "o.jsonl"))
