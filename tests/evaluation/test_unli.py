"""`evaluate unli` against scipy and numpy on the real U-SNLI test split."""

import csv

import numpy as np
import pandas as pd
import pytest
from django.core.management.base import CommandError
from scipy.stats import pearsonr, spearmanr

from tests.evaluation.helpers import evaluate, write_jsonl


@pytest.fixture
def gold(shared_data):
    return shared_data / "u-snli" / "test.csv"


def synthetic_predictions(gold_path, seed=0):
    """Noisy versions of the gold probabilities, clipped to [0, 1], in shuffled order."""
    frame = pd.read_csv(gold_path, dtype={"id": str})
    rng = np.random.default_rng(seed)
    predicted = np.clip(frame["unli"].to_numpy() + rng.normal(0, 0.25, len(frame)), 0, 1)
    order = rng.permutation(len(frame))
    return frame["id"].to_numpy()[order], predicted[order], frame


def test_unli_equals_scipy_and_numpy(gold, tmp_path):
    ids, predicted, frame = synthetic_predictions(gold)
    path = tmp_path / "predictions.csv"
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "prediction"])
        writer.writerows(zip(ids, (repr(float(p)) for p in predicted)))

    result = evaluate("unli", "--gold", gold, "--predictions", path)

    aligned = pd.Series(predicted, index=ids)[frame["id"]].to_numpy()
    truth = frame["unli"].to_numpy()
    assert result["n"] == len(frame) == 3040
    assert result["pearson"] == pytest.approx(pearsonr(truth, aligned).statistic, rel=1e-12)
    assert result["spearman"] == pytest.approx(spearmanr(truth, aligned).statistic, rel=1e-12)
    assert result["mse"] == pytest.approx(np.mean((truth - aligned) ** 2), rel=1e-12)
    assert 0.3 < result["pearson"] < 0.95  # noisy but informative predictions


def test_jsonl_predictions_give_the_same_scores(gold, tmp_path):
    ids, predicted, _ = synthetic_predictions(gold, seed=1)
    csv_path = tmp_path / "p.csv"
    pd.DataFrame({"id": ids, "prediction": predicted}).to_csv(csv_path, index=False, float_format="%.17g")
    jsonl_path = write_jsonl(tmp_path / "p.jsonl", [{"id": i, "prediction": float(p)} for i, p in zip(ids, predicted)])
    assert evaluate("unli", "--gold", gold, "--predictions", csv_path) == evaluate(
        "unli", "--gold", gold, "--predictions", jsonl_path
    )


def test_perfect_predictions(gold, tmp_path):
    frame = pd.read_csv(gold, dtype={"id": str})
    path = write_jsonl(tmp_path / "p.jsonl", [{"id": i, "prediction": p} for i, p in zip(frame["id"], frame["unli"])])
    result = evaluate("unli", "--gold", gold, "--predictions", path)
    assert result["pearson"] == pytest.approx(1.0) and result["spearman"] == pytest.approx(1.0)
    assert result["mse"] == 0.0


def test_missing_id_is_named(gold, tmp_path):
    frame = pd.read_csv(gold, dtype={"id": str})
    kept = frame.drop(index=17)
    path = tmp_path / "p.csv"
    kept[["id", "unli"]].rename(columns={"unli": "prediction"}).to_csv(path, index=False)
    with pytest.raises(CommandError, match=rf"no prediction for id '{frame['id'][17]}'"):
        evaluate("unli", "--gold", gold, "--predictions", path)


def test_bad_prediction_names_the_line(gold, tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("id,prediction\n3041,0.5\n3042,high\n")
    with pytest.raises(CommandError, match=r"p\.csv:3 field 'prediction'"):
        evaluate("unli", "--gold", gold, "--predictions", path)


def test_missing_file_is_a_command_error(gold, tmp_path):
    with pytest.raises(CommandError, match="No such file"):
        evaluate("unli", "--gold", gold, "--predictions", tmp_path / "absent.csv")


def test_unli_scores_refuse_what_is_not_a_probability():
    from metrics.regression import unli_scores

    assert unli_scores([0.1, 0.9, 0.5], [0.2, 0.8, 0.4])["n"] == 3
    for y_pred, message in (
        ([0.2, np.nan, 0.4], "y_pred row 1: nan"),
        ([0.2, 1.5, 0.4], "y_pred row 1: 1.5"),
        ([0.2, 0.4], "differ in length"),
    ):
        with pytest.raises(ValueError, match=message):
            unli_scores([0.1, 0.9, 0.5], y_pred)
    with pytest.raises(ValueError, match="at least 2 items"):
        unli_scores([0.1], [0.2])
