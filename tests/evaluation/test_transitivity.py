"""Transitive self-consistency rules, by hand."""

import pytest
from django.core.management.base import CommandError

from metrics.transitivity import transitivity_scores
from tests.evaluation.helpers import evaluate, write_jsonl


def rows_of(labels):
    return [
        {
            "id": str(i),
            "premise": "p",
            "hypothesis": "h",
            "modified_hypothesis": "m",
            "label_p_h": p_h,
            "label_h_m": h_m,
            "label_m_h": m_h,
            "label_p_m": p_m,
        }
        for i, (p_h, h_m, m_h, p_m) in enumerate(labels)
    ]


LABELS = [
    # p_h  h_m  m_h  p_m
    ("E", "E", "E", "E"),  # rule 1 holds
    ("E", "E", "E", "N"),  # rule 1 violated
    ("E", "C", "C", "C"),  # rule 2 holds
    ("E", "C", "C", "E"),  # rule 2 violated
    ("E", "C", "C", "N"),  # rule 2 violated
    ("N", "E", "E", "C"),  # rule 3 violated
    ("N", "E", "E", "N"),  # rule 3 holds
    ("N", "C", "C", "C"),  # rule 4 holds
    ("C", "E", "E", "E"),  # kept, but no rule starts from C(P,H)
    ("E", "E", "N", "C"),  # not mutual: dropped
    ("N", "N", "N", "E"),  # mutual neutral: dropped
    ("E", "C", "E", "N"),  # labels disagree: dropped
]


def test_rates_by_hand():
    columns = list(zip(*LABELS))
    result = transitivity_scores(*columns)
    assert result["n"] == 12
    assert result["mutual_entailment_rate"] == pytest.approx(5 / 12)
    assert result["mutual_contradiction_rate"] == pytest.approx(4 / 12)
    assert result["counts"]["kept"] == 9
    assert result["inconsistency_rate"] == {
        "rule1": pytest.approx(1 / 2),
        "rule2": pytest.approx(2 / 3),
        "rule3": pytest.approx(1 / 2),
        "rule4": 0.0,
    }
    assert result["counts"]["rule2"] == {"applicable": 3, "violations": 2}


def test_rule_without_qualifying_rows_is_null(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", rows_of([("E", "E", "E", "E"), ("e", "entailment", "E", "neutral")]))
    result = evaluate("transitivity", "--input", path)
    assert result["inconsistency_rate"] == {"rule1": 0.5, "rule2": None, "rule3": None, "rule4": None}
    assert result["mutual_entailment_rate"] == 1.0 and result["mutual_contradiction_rate"] == 0.0


def test_command_matches_the_metric(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", rows_of(LABELS))
    assert evaluate("transitivity", "--input", path) == transitivity_scores(*zip(*LABELS))


def test_bad_label_names_line_and_field(tmp_path):
    rows = rows_of(LABELS[:3])
    rows[2]["label_p_m"] = "maybe"
    with pytest.raises(CommandError, match=r"t\.jsonl:3 field 'label_p_m'"):
        evaluate("transitivity", "--input", write_jsonl(tmp_path / "t.jsonl", rows))
