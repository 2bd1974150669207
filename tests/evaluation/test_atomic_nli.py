"""Logical consistency rules between full and atom labels, by hand."""

import pytest
from django.core.management.base import CommandError

from metrics.atomic_nli import induced_label, is_consistent, logical_consistency
from tests.evaluation.helpers import evaluate, write_jsonl

E, N, C = "entailment", "neutral", "contradiction"


@pytest.mark.parametrize(
    "full, atoms, expected",
    [
        (E, [E, E], True),
        (E, [E, N], False),
        (E, [C], False),
        (C, [E, C], True),
        (C, [E, N], False),
        (N, [E, N], True),
        (N, [N, C], False),  # a contradicted atom rules out neutral
        (N, [E, E], False),  # neutral needs a neutral atom
        (N, [N], True),
    ],
)
def test_consistency_rules(full, atoms, expected):
    assert is_consistent(full, atoms) is expected


@pytest.mark.parametrize(
    "atoms, expected",
    [
        ([E, E], E),
        ([E, N], N),
        ([N, C], C),
        ([E, C, N], C),
        ([N], N),
    ],
)
def test_induced_label(atoms, expected):
    assert induced_label(atoms) == expected


def test_empty_atoms_are_rejected_by_the_rules():
    with pytest.raises(ValueError):
        is_consistent(E, [])
    with pytest.raises(ValueError):
        induced_label([])


def test_report_by_hand():
    gold = [E, N, C, C, N]
    predicted = [E, N, N, C, E]
    atoms = [
        [E, E],  # predicted E, consistent, correct; induced E (right)
        [E, C],  # predicted N, inconsistent, correct; induced C (wrong)
        [N],  # predicted N, consistent, incorrect; induced N (wrong)
        [],  # no admitted atom: accuracy only
        [E, N],  # predicted E, inconsistent, incorrect; induced N (right)
    ]
    report = logical_consistency(gold, predicted, atoms)
    assert report["n"] == 5 and report["n_scored"] == 4 and report["n_without_atoms"] == 1
    assert report["accuracy"] == pytest.approx(3 / 5)
    assert report["accuracy_scored"] == pytest.approx(2 / 4)
    assert report["consistency"] == pytest.approx(2 / 4)
    assert report["consistency_correct"] == pytest.approx(1 / 2)
    assert report["consistency_incorrect"] == pytest.approx(1 / 2)
    assert report["consistency_by_label"] == {E: pytest.approx(1 / 2), N: pytest.approx(1 / 2), C: None}
    assert report["induced_accuracy"] == pytest.approx(2 / 4)


def test_command_reads_the_documented_format(tmp_path):
    rows = [
        {
            "id": "1",
            "gold_label": "entailment",
            "predicted_label": "e",
            "atoms": [
                {"text": "A man exists.", "entailed_by_hypothesis": True, "predicted_label": "entailment"},
                {"text": "The man is tall.", "entailed_by_hypothesis": False},  # not admitted: ignored
            ],
        },
        {
            "id": "2",
            "gold_label": "contradiction",
            "predicted_label": "contradiction",
            "atoms": [
                {"text": "A dog runs.", "entailed_by_hypothesis": True, "predicted_label": "neutral"},
            ],
        },
    ]
    result = evaluate("nli-atoms", "--input", write_jsonl(tmp_path / "atoms.jsonl", rows))
    assert result["accuracy"] == 1.0
    assert result["consistency"] == 0.5
    assert result["consistency_by_label"]["contradiction"] == 0.0
    assert result["induced_accuracy"] == 0.5


def test_admitted_atom_without_label_names_the_field(tmp_path):
    rows = [
        {"id": "1", "gold_label": "e", "predicted_label": "e", "atoms": [{"text": "x", "entailed_by_hypothesis": True}]}
    ]
    with pytest.raises(CommandError, match=r"atoms\.jsonl:1 field 'atoms\[0\]\.predicted_label'"):
        evaluate("nli-atoms", "--input", write_jsonl(tmp_path / "atoms.jsonl", rows))
