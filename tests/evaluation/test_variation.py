"""metrics.variation: VariErr's rule on hand-made items and on the released varierr.json (its error_labels
reproduced), the distributions, the validators' alpha against the `krippendorff` package and the detection
scores against scikit-learn."""

import ast
import csv
import json
import math

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import average_precision_score

from label_variation.services.variation import read_record
from metrics.variation import (
    ERROR,
    PENDING,
    SUPPORTED,
    UNDECIDED,
    Explanation,
    classify_item,
    classify_labels,
    detection_scores,
    distributions,
    explanation_lengths,
    has_variation,
    judgment_alpha,
    judgment_counts,
    peer_error_scores,
    variation_split,
)
from tests.conftest import SHARED_DATA


def explained(label, author, peers=(), own=None, item="i1", text="because the premise says so"):
    return Explanation(item, label, author, text, peer_judgments=tuple(peers), self_judgment=own)


# ---------------------------------------------------------------- the rule on hand-made items


def test_a_label_its_author_judged_nonsense_is_an_error_whatever_the_peers_say():
    verdicts = classify_item(
        {"e": [explained("e", "a", peers=(True, True, True), own=False)], "n": [explained("n", "b", own=True)]}
    )
    assert verdicts == {"e": ERROR, "n": SUPPORTED}


def test_one_confirmed_explanation_supports_the_label():
    verdicts = classify_item({"c": [explained("c", "a", own=False), explained("c", "b", peers=(False,), own=True)]})
    assert verdicts == {"c": SUPPORTED}


def test_a_missing_self_judgment_does_not_confirm_where_the_item_was_self_judged():
    # VariErr: an author who withdrew their explanation left no self-judgment; peers cannot rescue it.
    verdicts = classify_item({"e": [explained("e", "a", own=True)], "n": [explained("n", "b", peers=(True, True))]})
    assert verdicts == {"e": SUPPORTED, "n": ERROR}


def test_without_self_judgments_the_apps_peer_majority_rule_supports_when_picked():
    labels = {
        "e": [explained("e", "a", peers=(True, True, False))],
        "n": [explained("n", "b", peers=(True, False))],  # a tie is no majority
        "c": [explained("c", "c", peers=(False,)), explained("c", "d", peers=(True, True, False))],
    }
    assert classify_item(labels, peer_majority=True) == {"e": SUPPORTED, "n": ERROR, "c": SUPPORTED}
    # VariErr's rule decides nothing without self-judgments.
    assert classify_item(labels) == {"e": UNDECIDED, "n": UNDECIDED, "c": UNDECIDED}


def test_labels_waiting_for_judgments_are_undecided():
    verdicts = classify_item(
        {
            "e": [explained("e", "a")],  # nobody judged it yet
            "n": [explained("n", "b", peers=(False, False)), explained("n", "c")],  # one still unjudged
            "c": [explained("c", "d", peers=(False,))],
        },
        peer_majority=True,
    )
    assert verdicts == {"e": UNDECIDED, "n": UNDECIDED, "c": ERROR}


def test_a_label_whose_writer_can_still_self_check_is_pending_never_an_error():
    waiting = Explanation("x", "c", "b", "c", peer_judgments=(False, False), self_check_pending=True)
    labels = {"e": [explained("e", "a", peers=(True,), own=True)], "c": [waiting]}
    assert classify_item(labels) == {"e": SUPPORTED, "c": PENDING}
    assert classify_item(labels, peer_majority=True) == {"e": SUPPORTED, "c": PENDING}
    assert classify_item({"c": [waiting]}, peer_majority=True) == {"c": PENDING}  # the peers' "no" waits too
    withdrawn = Explanation("x", "c", "b", "c", peer_judgments=(False, False))
    assert classify_item({**labels, "c": [withdrawn]}) == {"e": SUPPORTED, "c": ERROR}


def test_variation_needs_two_supported_labels():
    assert has_variation({"e": SUPPORTED, "n": SUPPORTED, "c": ERROR})
    assert not has_variation({"e": SUPPORTED, "n": UNDECIDED, "c": ERROR})


def test_distributions_count_each_author_once_and_drop_error_labels():
    explanations = [
        explained("e", "a", own=True),
        explained("e", "a", own=True, text="a second reason"),
        explained("e", "b", own=True),
        explained("n", "c", own=False),
        explained("c", "a", own=True),
        explained("n", "d", item="i2", own=False),
    ]
    shares = distributions(explanations, ("e", "n", "c"))
    assert shares["i1"]["round_one"] == pytest.approx((0.5, 0.25, 0.25))
    assert shares["i1"]["validated"] == pytest.approx((2 / 3, 0.0, 1 / 3))
    assert shares["i2"] == {"round_one": (0.0, 1.0, 0.0), "validated": None}
    with pytest.raises(ValueError, match="'x'"):
        distributions([explained("x", "a")], ("e", "n", "c"))


def test_lengths_count_a_text_given_for_two_labels_once():
    lengths = explanation_lengths(
        [
            explained("e", "w1", text="one two three"),
            explained("n", "w1", text="one two three"),
            explained("c", "w2", text="one"),
        ]
    )
    assert lengths == {"explanations": 2, "mean": 2.0, "median": 2.0, "min": 1, "max": 3}
    assert explanation_lengths([])["mean"] is None


def test_judgment_alpha_is_krippendorffs_nominal_alpha():
    explanations = [
        explained("e", "a", peers=(True, True, False), own=True),
        explained("n", "b", peers=(False, False), own=False),
        explained("c", "c", peers=(True,), own=True),
        explained("c", "d", peers=(True, False, True)),
    ]
    counts = judgment_counts(explanations)
    assert counts.tolist() == [[1, 3], [3, 0], [0, 2], [1, 2]]
    expected = krippendorff.alpha(value_counts=counts, level_of_measurement="nominal")
    assert judgment_alpha(explanations) == pytest.approx(expected)
    assert judgment_alpha(explanations, include_self=False) == pytest.approx(
        krippendorff.alpha(
            value_counts=judgment_counts(explanations, include_self=False), level_of_measurement="nominal"
        )
    )
    assert math.isnan(judgment_alpha([explained("e", "a", peers=(True,))]))


def test_detection_scores_match_scikit_learn_with_ties():
    rng = np.random.default_rng(3)
    truth = rng.random(300) < 0.2
    scores = np.round(rng.random(300) + truth * 0.3, 1)  # many ties
    result = detection_scores(truth, scores, ks=(10, 50))
    assert result["ap"] == pytest.approx(average_precision_score(truth, scores))
    top = np.argsort(-scores, kind="stable")
    assert result["precision_at"][50] == pytest.approx(truth[top[:50]].mean())
    assert result["recall_at"][10] == pytest.approx(truth[top[:10]].sum() / truth.sum())
    with pytest.raises(ValueError, match="at least one true error"):
        detection_scores([False, False], [0.1, 0.2])


def test_peer_scores_average_per_explanation_or_pool_the_judgments():
    explanations = [explained("e", "a", peers=(True, True, True, True)), explained("e", "b", peers=(False, False))]
    assert peer_error_scores(explanations)["i1", "e"] == pytest.approx(0.5)
    assert peer_error_scores(explanations, pooled=True)["i1", "e"] == pytest.approx(1 / 3)
    assert peer_error_scores([explained("n", "a", own=True)])["i1", "n"] == 1.0


# ---------------------------------------------------------------- the released VariErr NLI file


@pytest.fixture(scope="module")
def varierr():
    records = [json.loads(line) for line in open(SHARED_DATA / "varierr" / "varierr.json")]
    explanations = [e for record in records for e in read_record("varierr", record["id"], record).explanations]
    return records, explanations


def test_the_file_holds_500_items_1933_explanations_and_7574_judgments(varierr):
    records, explanations = varierr
    assert len(records) == 500
    assert len(explanations) == 1933
    assert int(judgment_counts(explanations).sum()) == 7574
    # The paper's 7,732 is 1,933 x 4: every explanation judged by all four annotators.
    assert 1933 * 4 - 7574 == 158
    # Each peer judgment names its judge as the file does, never the explanation's own author.
    assert all(len(e.peer_judges) == len(e.peer_judgments) for e in explanations)
    assert all(f"varierr:{judge}" != e.author for e in explanations for judge in e.peer_judges)
    assert {judge for e in explanations for judge in e.peer_judges} == {"0", "1", "2", "3"}


def test_the_rule_reproduces_the_files_error_labels_exactly(varierr):
    records, explanations = varierr
    verdicts = classify_labels(explanations)
    ours = {(key, label) for key, labels in verdicts.items() for label, verdict in labels.items() if verdict == ERROR}
    theirs = {(r["id"], label[0]) for r in records for label in r["error_labels"]}
    assert len(theirs) == 129
    assert ours == theirs
    kept = {r["id"]: {label[0] for label in r["label_set_round_2"]} for r in records}
    assert {key: {lb for lb, v in labels.items() if v == SUPPORTED} for key, labels in verdicts.items()} == {
        key: labels for key, labels in kept.items() if key in verdicts
    }
    assert variation_split(verdicts) == {
        "items": 500,
        "variation": 236,
        "error": 119,
        "both": 20,
        "undecided": 0,
        "pending": 0,
    }


def test_livenli_rows_give_one_explanation_per_label_with_their_highlights():
    with open(SHARED_DATA / "livenli" / "livenli.csv", newline="") as table:
        rows = [row for row in csv.DictReader(table) if row["uid"] == "20274n"]
    for row in rows:
        for column in ("chaos_dist", "highlight_p", "highlight_h"):
            row[column] = ast.literal_eval(row[column]) if row[column] else None
    read = read_record("livenli", "20274n", {"rows": rows})
    first = [e for e in read.explanations if e.author == "livenli:w13"]
    assert [e.label for e in first] == ["e", "n"]  # "true | either"
    assert first[0].text == first[1].text == rows[0]["explanation"]
    assert first[0].premise_spans == ((70, 108),) and first[0].hypothesis_spans == ((0, 18),)
    assert read.chaosnli == {"20274n": {"c": 11, "e": 14, "n": 75}}
    assert len({e.author for e in read.explanations}) == len(rows)
    assert all(e.self_judgment is None and not e.peer_judgments for e in read.explanations)
