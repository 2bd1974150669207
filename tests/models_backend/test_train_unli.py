import csv
import hashlib
import json
import random
from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import PAIRS
from django.core.management import CommandError, call_command
from safetensors.torch import load_file

from metrics.regression import unli_scores
from models_backend.dataio import PairRow
from models_backend.registry import ModelKind, inspect_checkpoint, load_model
from models_backend.runner import predict_pairs
from models_backend.training import auxiliary
from models_backend.training.unli import (
    UnliSettings,
    in_batch_hinge,
    ranking_pairs,
    train_unli,
)


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
    # The default pre-training, on the first 64 rows of the shared SNLI file (all of it takes a minute here).
    call_command(
        "train_unli",
        base=str(tiny_encoder),
        train=str(train),
        eval=str(evaluation),
        epochs=1,
        output=str(output),
        batch_size=4,
        seed=1,
        max_pretrain=64,
        json=True,
    )
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
    snli.write_text(
        "".join(
            json.dumps({"premise": p, "hypothesis": h, "label": label}) + "\n"
            for (p, h), label in zip(PAIRS, ["entailment", "neutral", "contradiction"] * 3)
        )
    )
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
        call_command(
            "train_unli", base=str(tiny_encoder), train=str(bad), eval=str(bad), epochs=1, output=str(tmp_path / "m")
        )


def test_with_baseline_prints_both_figures(tiny_encoder, usnli, tmp_path, capsys):
    train, evaluation = usnli
    options = {
        "base": str(tiny_encoder),
        "train": str(train),
        "eval": str(evaluation),
        "epochs": 1,
        "batch_size": 4,
        "no_pretrain": True,
        "with_baseline": True,
    }
    call_command("train_unli", output=str(tmp_path / "m"), **options)
    table = capsys.readouterr().out
    assert "hypothesis only" in table.splitlines()[0]
    pearson = table.splitlines()[1].split()
    assert pearson[0] == "pearson" and len(pearson) == 3
    call_command("train_unli", output=str(tmp_path / "j"), json=True, **options)
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"pearson", "spearman", "mse", "seconds"} <= set(result["baseline"])
    assert result["baseline"]["pearson"] == pytest.approx(float(pearson[2]), abs=1e-4)
    card = json.loads((tmp_path / "j" / "model_card.json").read_text())
    assert card["hypothesis_only_baseline"] == result["baseline"]
    assert not inspect_checkpoint(tmp_path / "j").hypothesis_only


def test_defaults_use_shared_snli_file_when_present(tiny_encoder, usnli, tmp_path, monkeypatch):
    train, evaluation = usnli
    shared = tmp_path / "shared"
    monkeypatch.setattr(auxiliary, "SHARED_DATA", shared)
    absent = UnliSettings()
    assert absent.pretrain_snli is None
    result = train_unli(
        tmp_path / "plain", train, evaluation, replace(absent, epochs=1, batch_size=4), base=tiny_encoder
    )
    assert result["n_pretrain"] == 0

    snli = shared / auxiliary.SNLI_FILE
    snli.parent.mkdir(parents=True)
    snli.write_text(json.dumps({"premise": "a dog runs", "hypothesis": "an animal runs", "label": "entailment"}) + "\n")
    present = UnliSettings()
    assert present.pretrain_snli == str(snli)
    result = train_unli(
        tmp_path / "pre", train, evaluation, replace(present, epochs=1, batch_size=4), base=tiny_encoder
    )
    assert result["n_pretrain"] == 1


def test_chaosnli_targets_are_expected_surrogates_and_override_snli(tmp_path):
    snli = tmp_path / "snli.jsonl"
    snli.write_text(
        "".join(json.dumps({"premise": p, "hypothesis": h, "label": "neutral"}) + "\n" for p, h in PAIRS[:2])
    )
    chaos = tmp_path / "chaos.jsonl"
    chaos.write_text(
        json.dumps(
            {
                "uid": "u1",
                "label_dist": [0.5, 0.5, 0.0],
                "example": {"uid": "u1", "premise": PAIRS[0][0], "hypothesis": PAIRS[0][1]},
            }
        )
        + "\n"
    )
    data = auxiliary.load_auxiliary(str(snli), [str(chaos)], None, max_snli=None, eval_premises={PAIRS[1][0]})
    scores = auxiliary.SURROGATE_SCORES
    assert [r.hypothesis for r in data.rows] == [PAIRS[0][1]] and data.dropped == 1
    assert data.targets == [pytest.approx(0.5 * scores["entailment"] + 0.5 * scores["neutral"])]


def test_dnli_pairs_put_strengthened_above_weakened(tmp_path):
    path = tmp_path / "dnli.jsonl"
    records = [
        ("strengthener", "he holds a ball"),
        ("weakener", "he is asleep"),
        ("weakener", "he sits"),
        ("strengthener", "x", True),
    ]
    path.write_text(
        "".join(
            json.dumps(
                {
                    "Premise": "a man in the park",
                    "Hypothesis": "a man plays",
                    "Update": r[1],
                    "UpdateType": r[0],
                    "UpdateTypeImpossible": len(r) > 2,
                }
            )
            + "\n"
            for r in records
        )
    )
    rows, pairs = auxiliary.dnli_ranking(path)
    assert [r.premise for r in rows] == [
        "a man in the park he holds a ball",
        "a man in the park he is asleep",
        "a man in the park he sits",
    ]
    assert pairs == [(0, 1), (0, 2)]


def test_in_batch_hinge_is_zero_for_scores_equal_to_targets():
    gold = torch.tensor([0.9, 0.5, 0.1, 0.45])
    assert in_batch_hinge(gold.clone(), gold, margin=0.3).item() == 0.0
    inverted = in_batch_hinge(1 - gold, gold, margin=0.3)
    assert inverted.item() > 0.3
    assert (
        in_batch_hinge(gold, torch.tensor([0.5, 0.5, 0.4, 0.45]), margin=0.3).item() == 0.0
    )  # no pair far enough apart


def test_seeds_fine_tune_the_pretrained_model_once_each_and_save_their_weight_average(tiny_encoder, usnli, tmp_path):
    train, evaluation = usnli
    snli = tmp_path / "snli.jsonl"
    snli.write_text(
        "".join(
            json.dumps({"premise": f"{p} today", "hypothesis": h, "label": label}) + "\n"
            for (p, h), label in zip(PAIRS, ["entailment", "neutral", "contradiction"] * 3)
        )
    )
    settings = UnliSettings(epochs=1, batch_size=4, pretrain_snli=str(snli), seed=5, seeds=1)
    # The same model in steps: pre-training alone, then one fine-tuning from it per seed.
    train_unli(tmp_path / "pretrained", train, evaluation, replace(settings, epochs=0), base=tiny_encoder)
    for seed in (5, 6):
        train_unli(
            tmp_path / f"seed{seed}",
            train,
            evaluation,
            replace(settings.without_pretraining(), seed=seed),
            base=tmp_path / "pretrained",
        )
    result = train_unli(tmp_path / "soup", train, evaluation, replace(settings, seeds=2), base=tiny_encoder)
    assert result["n_pretrain"] > 0  # a pre-training stage ran, shared by both fine-tunings

    def weights(folder):
        return load_file(folder / "model.safetensors")

    first, second, soup = weights(tmp_path / "seed5"), weights(tmp_path / "seed6"), weights(tmp_path / "soup")
    head = "classifier.weight"
    assert not torch.allclose(first[head], second[head])  # two different fine-tunings ...
    for key, value in soup.items():  # ... and the saved model is their mean, weight by weight
        if value.is_floating_point():
            torch.testing.assert_close(value, (first[key] + second[key]) / 2, rtol=1e-5, atol=1e-6)
    assert json.loads((tmp_path / "soup" / "model_card.json").read_text())["settings"]["seeds"] == 2


def test_dropout_setting_reaches_every_dropout_layer(tiny_encoder, usnli, tmp_path):
    train, evaluation = usnli
    settings = UnliSettings(epochs=1, batch_size=4, seed=3, seeds=1).without_pretraining()
    base_rate = json.loads((tiny_encoder / "config.json").read_text())["hidden_dropout_prob"]

    def weights(name, dropout):
        train_unli(tmp_path / name, train, evaluation, replace(settings, dropout=dropout), base=tiny_encoder)
        return load_file(tmp_path / name / "model.safetensors")

    own, same_rate, none = weights("own", None), weights("same", base_rate), weights("none", 0.0)
    assert base_rate > 0
    assert all(torch.equal(own[key], same_rate[key]) for key in own)  # None keeps the base model's rate
    assert not all(torch.equal(own[key], none[key]) for key in own)  # 0 switched the layers off
