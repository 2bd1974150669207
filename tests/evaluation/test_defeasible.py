"""Critical atoms, bucket accuracies with 1/k weights, inferential consistency and clique buckets."""

import itertools

import numpy as np
import pandas as pd
import pytest
from django.core.management.base import CommandError

from metrics.defeasible import (
    bucket_accuracies,
    bucket_ids,
    critical_atoms,
    equivalent_atom_groups,
    inferential_consistency,
    maximal_cliques,
)
from tests.evaluation.helpers import evaluate, evaluate_text, write_jsonl

S, W, N = "strengthener", "weakener", "neutral"


def atoms_table(rows):
    """rows: (example, gold, valid)."""
    return pd.DataFrame(rows, columns=["example", "gold", "valid"])


def test_critical_atoms_take_the_strongest_of_the_examples_polarity():
    atoms = atoms_table(
        [
            (0, 1, True),
            (0, 2, True),
            (0, -2, True),
            (0, 2, False),  # strengthener: the valid +2 only
            (1, -1, True),
            (1, 2, True),
            (1, -1, True),
            (1, 0, True),  # weakener: tie between the two -1
            (2, 2, True),
            (2, 0, True),  # weakener without a negative atom: none
            (3, -2, False),
            (3, -1, True),  # invalid -2 does not count
        ]
    )
    mask = critical_atoms(atoms, [S, W, W, W])
    assert mask.tolist() == [False, True, False, False, True, False, True, False, False, False, False, True]


def test_bucket_weights_split_an_example_over_its_buckets():
    # example 0 (right) in buckets a and b, example 1 (wrong) in b, example 2 (right) in c,
    # example 3 has no critical atom, example 4 (wrong) names bucket b twice: one bucket, weight 1.
    table = bucket_accuracies([True, False, True, True, False], [["a", "b"], ["b"], ["c"], [], ["b", "b"]])
    assert table.loc["a"].tolist() == [0.5, 1, 1.0]
    assert table.loc["b", "support"] == 2.5 and table.loc["b", "n_examples"] == 3
    assert table.loc["b", "theta"] == pytest.approx(0.5 / 2.5)
    assert table.loc["c"].tolist() == [1.0, 1, 1.0]
    assert len(table) == 3


def test_inferential_consistency_by_hand():
    theta = [1.0, 0.2, 0.5]
    per_bucket = [1.0, 0.04 + 0.64, 0.5]
    assert inferential_consistency(theta) == pytest.approx(np.mean(per_bucket))
    assert inferential_consistency(theta, support=[0.5, 2.5, 1.0]) == pytest.approx(
        (0.5 * 1.0 + 2.5 * 0.68 + 1.0 * 0.5) / 4.0
    )
    assert inferential_consistency([0.0, 0.0]) == 1.0  # always wrong is perfectly consistent
    assert inferential_consistency([1.0]) == 1.0  # a single-example bucket adds 1
    assert inferential_consistency([]) is None


EXAMPLES = [
    {
        "id": "ex0",
        "gold_label": "strengthener",
        "predicted_label": "strengthener",
        "atoms": [
            {"text": "A", "gold": 2, "valid": True, "predicted_label": "strengthener"},
            {"text": "B", "gold": 2, "valid": True, "predicted_label": "weakener", "bucket": "x"},
            {"text": "C", "gold": 0, "valid": True, "predicted_label": "neutral"},
            {"text": "D", "gold": -1, "valid": True, "predicted_label": "weakener"},
            {"text": "E", "gold": 2, "valid": False, "predicted_label": "weakener"},
        ],
    },
    {
        "id": "ex1",
        "gold_label": "weakener",
        "predicted_label": "strengthener",
        "atoms": [
            {"text": "F", "gold": -1, "valid": True, "predicted_label": "weakener", "bucket": "x"},
            {"text": "G", "gold": 1, "valid": True, "predicted_label": "strengthener"},
        ],
    },
    {
        "id": "ex2",
        "gold_label": "weakener",
        "predicted_label": "weakener",
        "atoms": [  # no critical atom
            {"text": "H", "gold": 2, "valid": True, "predicted_label": "strengthener"},
            {"text": "I", "gold": 0, "valid": True, "predicted_label": "strengthener"},
        ],
    },
    {
        "id": "ex3",
        "gold_label": "strengthener",
        "predicted_label": "strengthener",
        "atoms": [
            {"text": "J", "gold": 1, "valid": True, "predicted_label": "strengthener", "bucket": ["x", "y"]},
        ],
    },
]


def test_defeasible_suite_by_hand(tmp_path):
    path = write_jsonl(tmp_path / "d.jsonl", EXAMPLES)
    result = evaluate("defeasible", "--input", path)
    assert result["atom_labels"] == "ternary"  # a neutral atom prediction was seen
    assert result["n"] == 4 and result["n_without_critical_atoms"] == 1
    assert result["full_accuracy"] == pytest.approx(3 / 4)
    assert result["n_valid_atoms"] == 9
    assert result["atom_accuracy"] == pytest.approx(7 / 9)
    assert result["n_critical_atoms"] == 4  # A and B (tie), F, J
    assert result["critical_atom_accuracy"] == pytest.approx(3 / 4)
    assert result["p_full_correct_given_critical_correct"] == pytest.approx(1 / 2)  # ex1 wrong, ex3 right
    assert result["p_full_correct_given_critical_wrong"] == 1.0  # ex0 right
    # Buckets: "A" (ex0, weight 1/2, right), "x" (ex0 1/2 right, ex1 1 wrong, ex3 1/2 right), "y" (ex3 1/2).
    buckets = {b["bucket"]: b for b in result["buckets"]}
    assert set(buckets) == {"A", "x", "y"}
    assert buckets["x"]["support"] == 2.0 and buckets["x"]["theta"] == 0.5
    assert result["n_single_example_buckets"] == 2
    assert result["bucket_mean"] == "unweighted"
    assert result["inferential_consistency"] == pytest.approx((1 + 0.5 + 1) / 3)

    weighted = evaluate("defeasible", "--input", path, "--weighted")
    assert weighted["bucket_mean"] == "weighted by support"
    assert weighted["inferential_consistency"] == pytest.approx((0.5 * 1 + 2 * 0.5 + 0.5 * 1) / 3)

    binary = evaluate("defeasible", "--input", path, "--atom-labels", "binary")
    assert binary["n_scored_atoms"] == 7 and binary["atom_accuracy"] == pytest.approx(6 / 7)


def test_binary_models_are_detected(tmp_path):
    rows = [
        {
            "id": "1",
            "gold_label": "strengthener",
            "predicted_label": "weakener",
            "atoms": [
                {"text": "a", "gold": 0, "valid": True, "predicted_label": "weakener"},
                {"text": "b", "gold": 1, "valid": True, "predicted_label": "strengthener"},
            ],
        }
    ]
    result = evaluate("defeasible", "--input", write_jsonl(tmp_path / "d.jsonl", rows))
    assert result["atom_labels"] == "binary" and result["atom_accuracy"] == 1.0
    assert result["inferential_consistency"] == 1.0 and result["n_buckets"] == 1
    assert result["p_full_correct_given_critical_correct"] == 0.0
    assert result["p_full_correct_given_critical_wrong"] is None


def test_no_critical_atom_anywhere(tmp_path):
    rows = [
        {
            "id": "1",
            "gold_label": "weakener",
            "predicted_label": "weakener",
            "atoms": [{"text": "a", "gold": 1, "valid": True, "predicted_label": "strengthener"}],
        }
    ]
    result = evaluate("defeasible", "--input", write_jsonl(tmp_path / "d.jsonl", rows))
    assert result["n_critical_atoms"] == 0 and result["n_buckets"] == 0
    assert result["critical_atom_accuracy"] is None and result["inferential_consistency"] is None
    assert result["full_accuracy"] == 1.0
    assert "inferential_consistency" in evaluate_text("defeasible", "--input", tmp_path / "d.jsonl")


def test_out_of_range_gold_names_the_atom(tmp_path):
    rows = [
        {
            "id": "1",
            "gold_label": "weakener",
            "predicted_label": "weakener",
            "atoms": [
                {"text": "a", "gold": 1, "valid": True, "predicted_label": "strengthener"},
                {"text": "b", "gold": 3, "valid": True, "predicted_label": "strengthener"},
            ],
        }
    ]
    with pytest.raises(CommandError, match=r"d\.jsonl:1 field 'atoms\[1\]\.gold'"):
        evaluate("defeasible", "--input", write_jsonl(tmp_path / "d.jsonl", rows))


def brute_force_cliques(neighbours):
    nodes = list(neighbours)
    cliques = [
        set(c)
        for size in range(1, len(nodes) + 1)
        for c in itertools.combinations(nodes, size)
        if all(b in neighbours[a] for a, b in itertools.combinations(c, 2))
    ]
    return {frozenset(c) for c in cliques if not any(c < other for other in cliques)}


@pytest.mark.parametrize("seed", range(5))
def test_maximal_cliques_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 9
    upper = np.triu(rng.random((n, n)) < 0.5, k=1)
    adjacency = upper | upper.T
    neighbours = {i: set(np.flatnonzero(adjacency[i]).tolist()) for i in range(n)}
    assert set(maximal_cliques(neighbours)) == brute_force_cliques(neighbours)


def test_equivalent_atoms_need_similarity_and_entailment_both_ways():
    vectors = {
        "The man is tall.": [1.0, 0.0, 0.0],
        "The man is not short.": [0.9, 0.1, 0.0],  # similar to the first, mutual entailment
        "The person is tall.": [0.95, 0.0, 0.05],  # similar to both, but only entailed one way
        "The dog is brown.": [0.0, 1.0, 0.0],  # not similar to anything
    }
    one_way = {("The man is tall.", "The person is tall."), ("The man is not short.", "The person is tall.")}

    def embed(texts):
        return np.array([vectors[t] for t in texts])

    def entails(premises, hypotheses):
        tall = {"The man is tall.", "The man is not short."}
        return np.array([(p in tall and h in tall) or (p, h) in one_way for p, h in zip(premises, hypotheses)])

    groups = equivalent_atom_groups([*list(vectors), "The man is tall."], embed, entails)
    assert groups == [["The dog is brown."], ["The man is not short.", "The man is tall."], ["The person is tall."]]
    assert bucket_ids(groups)["The man is tall."] == ["b1"]

    dissimilar = equivalent_atom_groups(list(vectors), embed, entails, threshold=0.999)
    assert len(dissimilar) == 4
