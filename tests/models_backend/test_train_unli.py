import csv
import hashlib
import json
import random

import numpy as np
import pytest
import torch
from conftest import PAIRS
from django.core.management import CommandError, call_command

from models_backend.dataio import PairRow
from models_backend.registry import ModelKind, inspect_checkpoint, load_model
from models_backend.runner import predict_pairs
from evaluation.metrics.regression import unli_scores
from models_backend.training.unli import UnliSettings, ranking_pairs, train_unli


def write_usnli(path, rows):
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "pre", "hyp", "nli", "unli"])
        for i, (premise, hypothesis, probability) in enumerate(rows):
            writer.writerow([i + 1, premise, hypothesis, 1, probability])
    return path


@pytest.fixture
def usnli(tmp_path):
    targets = [0.9, 0.1, 0.5, 0.02, 0.7, 0.3, 0.6]
    rows = [(p, h, t) for (p, h), t in zip(PAIRS, targets)]
    rows.append((PAIRS[0][0], "a woman is sleeping", 0.05))  # shares a premise with row 1
    return write_usnli(tmp_path / "train.csv", rows), write_usnli(tmp_path / "eval.csv", rows[:6])


def test_train_unli_command_writes_loadable_checkpoint_and_card(tiny_encoder, usnli, tmp_path, capsys):
    train, evaluation = usnli
    output = tmp_path / "model"
    call_command("train_unli", base=str(tiny_encoder), train=str(train), eval=str(evaluation), epochs=1,
                 output=str(output), batch_size=4, seed=1, json=True)
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"pearson", "spearman", "mse", "n_train", "n_eval", "seconds"} <= set(result)
    assert result["n_train"] == 8 and result["n_eval"] == 6 and 0 <= result["mse"] <= 1

    spec = inspect_checkpoint(output)
    assert spec.kind is ModelKind.UNLI and spec.sigmoid and not spec.hypothesis_only
    card = json.loads((output / "model_card.json").read_text())
    assert card["data"]["train"]["sha256"] == hashlib.sha256(train.read_bytes()).hexdigest()
    assert card["settings"]["epochs"] == 1 and card["eval_metrics"]["pearson"] == pytest.approx(result["pearson"])
    assert "Pearson r" in (output / "MODEL_CARD.md").read_text()

    model, tokenizer = load_model(spec, torch.device("cpu"))
    predictions = predict_pairs(spec, model, tokenizer, [p for p, _ in PAIRS[:6]], [h for _, h in PAIRS[:6]])
    assert np.all((predictions > 0) & (predictions < 1))
    with evaluation.open() as handle:
        gold = [float(row["unli"]) for row in csv.DictReader(handle)]
    assert unli_scores(np.array(gold), predictions)["pearson"] == pytest.approx(result["pearson"], abs=1e-4)


def test_rank_loss_hypothesis_only_and_snli_pretraining(tiny_encoder, usnli, tmp_path):
    train, evaluation = usnli
    snli = tmp_path / "snli.jsonl"
    snli.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "label": label}) + "\n"
                            for (p, h), label in zip(PAIRS, ["entailment", "neutral", "contradiction"] * 3)))
    settings = UnliSettings(epochs=1, batch_size=4, loss="rank", hypothesis_only=True, pretrain_snli=str(snli))
    result = train_unli(tmp_path / "rank", train, evaluation, settings, base=tiny_encoder)
    # The eval file's six premises are SNLI premises too: those rows are held out of pre-training.
    assert result["n_pretrain"] == 1 and result["n_pretrain_dropped"] == 6
    spec = inspect_checkpoint(tmp_path / "rank")
    assert spec.hypothesis_only
    model, tokenizer = load_model(spec, torch.device("cpu"))
    same_hypothesis = predict_pairs(spec, model, tokenizer, ["a man", "two dogs in the park"], ["a cat", "a cat"])
    assert same_hypothesis[0] == pytest.approx(same_hypothesis[1], abs=1e-6)


def test_ranking_pairs_order_higher_target_first():
    rows = [PairRow(str(i), premise, "h") for i, premise in enumerate(["p1", "p1", "p2", "p3"])]
    targets = [0.2, 0.8, 0.5, 0.5]
    pairs = ranking_pairs(rows, targets, cross_pairs=2, rng=random.Random(0))
    assert (1, 0) in pairs and (0, 1) not in pairs
    assert all(targets[i] > targets[j] for i, j in pairs)
    assert all(rows[i].premise != rows[j].premise for i, j in pairs if {i, j} != {0, 1})


def test_bad_probability_is_reported_with_line(tiny_encoder, tmp_path):
    bad = write_usnli(tmp_path / "bad.csv", [("a man", "a dog", 0.4), ("a cat", "a dog", 1.5)])
    with pytest.raises(CommandError, match=r"bad.csv:3: field 'unli' must lie in \[0, 1\]"):
        call_command("train_unli", base=str(tiny_encoder), train=str(bad), eval=str(bad), epochs=1,
                     output=str(tmp_path / "m"))
