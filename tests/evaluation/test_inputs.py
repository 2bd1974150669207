"""Bad evaluation inputs: one validation step for every suite, a one-line error naming file, line and field,
exit status 2, and no stored run even with --save."""

import io
import json
import re
import subprocess
import sys

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from scipy.spatial.distance import jensenshannon

from jobs.models import Job
from metrics.agreement import split_half_jsd
from metrics.distributions import floor_probabilities
from tests.conftest import REPO
from tests.evaluation.helpers import evaluate

pytestmark = pytest.mark.django_db

HUMAN = [
    {
        "uid": "a",
        "label_count": [90, 10, 0],
        "label_dist": [0.9, 0.1, 0.0],
        "entropy": 0.469,
        "majority_label": "e",
        "old_label": "n",
    },
    {
        "uid": "b",
        "label_count": [0, 0, 100],
        "label_dist": [0.0, 0.0, 1.0],
        "entropy": 0.0,
        "majority_label": "c",
        "old_label": "c",
    },
    {
        "uid": "c",
        "label_count": [20, 50, 30],
        "label_dist": [0.2, 0.5, 0.3],
        "entropy": 1.485,
        "majority_label": "n",
        "old_label": "n",
    },
]
PREDICTIONS = [
    {"id": "a", "probabilities": {"e": 0.7, "n": 0.3, "c": 0.0}},
    {"id": "b", "probabilities": {"e": 0.1, "n": 0.1, "c": 0.8}},
    {"id": "c", "probabilities": {"e": 0.2, "n": 0.6, "c": 0.2}},
]
GOLD_CSV = "id,pre,hyp,nli,unli\n1,P,H,1,0.2\n2,P,H,2,0.9\n3,P,H,0,0.05\n"
PREDICTIONS_CSV = "id,prediction\n1,0.3\n2,0.8\n3,0.1\n"
TRANSITIVITY = {"id": "t", "label_p_h": "e", "label_h_m": "e", "label_m_h": "e", "label_p_m": "e"}


def lines(rows) -> str:
    return "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows)


def changed(rows, index, **fields):
    rows = [dict(row) for row in rows]
    rows[index].update(fields)
    return rows


def chaos(human=HUMAN, predictions=PREDICTIONS):
    return "chaos", {"human": ("h.jsonl", lines(human)), "predictions": ("p.jsonl", lines(predictions))}


def unli(gold=GOLD_CSV, predictions=PREDICTIONS_CSV):
    return "unli", {"gold": ("gold.csv", gold), "predictions": ("p.csv", predictions)}


def single(suite, text, name="in.jsonl"):
    return suite, {"input": (name, text)}


BAD_INPUTS = {
    "NaN probability": (
        chaos(
            predictions=[PREDICTIONS[0], '{"id": "b", "probabilities": {"e": NaN, "n": 0.2, "c": 0.8}}', PREDICTIONS[2]]
        ),
        r"p\.jsonl:2 field '\(json\)': not valid JSON: 'probabilities\.e' is NaN, not a finite number",
    ),
    "NaN human label_dist": (
        chaos(human=[HUMAN[0], json.dumps(HUMAN[1]).replace("[0.0, 0.0, 1.0]", "[0.0, NaN, 1.0]"), HUMAN[2]]),
        r"h\.jsonl:2 field '\(json\)': not valid JSON: 'label_dist\[1\]' is NaN, not a finite number",
    ),
    "negative probability": (
        chaos(predictions=changed(PREDICTIONS, 0, probabilities={"e": -0.1, "n": 1.1, "c": 0.0})),
        r"p\.jsonl:1 field 'probabilities\.e': -0\.1 is not a probability in \[0, 1\]",
    ),
    "row not summing to 1": (
        chaos(predictions=changed(PREDICTIONS, 1, probabilities={"e": 0.1, "n": 0.1, "c": 0.7})),
        r"p\.jsonl:2 field 'probabilities': probabilities sums to 0\.9, not 1 \(--renormalise",
    ),
    "all-zero row": (
        chaos(predictions=changed(PREDICTIONS, 2, probabilities={"e": 0, "n": 0, "c": 0})),
        r"p\.jsonl:3 field 'probabilities': every probability is 0",
    ),
    "string probability": (
        chaos(predictions=changed(PREDICTIONS, 1, probabilities={"e": "0.1", "n": 0.1, "c": 0.8})),
        r"p\.jsonl:2 field 'probabilities\.e': '0\.1' is not a number",
    ),
    "null probability": (
        (
            "chaos",
            {
                "human": ("h.jsonl", lines(HUMAN)),
                "predictions": (
                    "p.json",
                    lines(
                        [
                            {
                                "m": {
                                    "a": {"predicted_probabilities": [0.7, 0.3, 0.0]},
                                    "b": {"predicted_probabilities": [None, 0.2, 0.8]},
                                    "c": {"predicted_probabilities": [0.2, 0.6, 0.2]},
                                }
                            }
                        ]
                    ),
                ),
            },
        ),
        r"p\.json:1 field 'm\.b\.predicted_probabilities\[0\]': None is not a number",
    ),
    "label_dist of the wrong length": (
        chaos(human=changed(HUMAN, 2, label_dist=[0.2, 0.8])),
        r"h\.jsonl:3 field 'label_dist': expected a list of 3 values \(one per label\), got 2 values",
    ),
    "votes that do not match label_dist": (
        chaos(human=changed(HUMAN, 0, label_dist=[0.8, 0.2, 0.0])),
        r"h\.jsonl:1 field 'label_dist': \[0\.8, 0\.2, 0\.0\] does not match label_count",
    ),
    "item without votes": (
        chaos(human=changed(HUMAN, 1, label_count=[0, 0, 0])),
        r"h\.jsonl:2 field 'label_count': no votes",
    ),
    "prediction file that is not UTF-8": (
        (
            "chaos",
            {
                "human": ("h.jsonl", lines(HUMAN)),
                "predictions": ("p.jsonl", lines(PREDICTIONS[:1]).encode() + b'{"id": "b\xff"}\n'),
            },
        ),
        r"p\.jsonl:2 field '\(file\)': is not UTF-8 text \(byte 70\)",
    ),
    "UNLI prediction above 1": (
        unli(predictions="id,prediction\n1,0.3\n2,1.5\n3,0.1\n"),
        r"p\.csv:3 field 'prediction': 1\.5 is not a probability in \[0, 1\]",
    ),
    "UNLI prediction that is NaN": (
        unli(predictions="id,prediction\n1,nan\n2,0.5\n3,0.1\n"),
        r"p\.csv:2 field 'prediction': 'nan' is not a number",
    ),
    "UNLI gold without prediction": (
        unli(predictions="id,prediction\n1,0.3\n3,0.1\n"),
        r"gold\.csv:3 field 'id': no prediction for id '2' in .*p\.csv \(1 gold ids missing\)",
    ),
    "empty UNLI gold file": (unli(gold=""), r"gold\.csv:1 field 'id': the file is empty; expected the column"),
    "UNLI gold file with a header only": (unli(gold="id,pre,hyp,nli,unli\n"), r"gold\.csv: the file holds no rows"),
    "one UNLI item": (
        unli(gold="id,pre,hyp,nli,unli\n1,P,H,1,0.2\n"),
        r"gold\.csv:2 field 'unli': only 1 item; Pearson and Spearman need at least 2",
    ),
    # Files that read but leave a metric nothing to compute.
    "UNLI gold that never varies": (
        unli(gold="id,pre,hyp,nli,unli\n1,P,H,1,0.2\n2,P,H,2,0.2\n3,P,H,0,0.2\n"),
        r"gold\.csv:4 field 'unli': every gold probability is 0\.2; Pearson and Spearman need values that vary",
    ),
    "UNLI predictions that never vary": (
        unli(predictions="id,prediction\n1,0.5\n2,0.5\n3,0.5\n"),
        r"p\.csv field 'prediction': every prediction for the gold ids is 0\.5; Pearson and Spearman need values",
    ),
    "defeasible records without atoms": (
        single(
            "defeasible",
            lines([{"id": str(i), "gold_label": "weakener", "predicted_label": "weakener", "atoms": []} for i in "ab"]),
        ),
        r"in\.jsonl:2 field 'atoms': no record has a valid atom: the atom metrics need at least one",
    ),
    "nli-atoms records without an entailed atom": (
        single(
            "nli-atoms",
            lines(
                [
                    {"id": "a", "gold_label": "e", "predicted_label": "e", "atoms": []},
                    {
                        "id": "b",
                        "gold_label": "n",
                        "predicted_label": "e",
                        "atoms": [{"entailed_by_hypothesis": False}],
                    },
                ]
            ),
        ),
        r"in\.jsonl:2 field 'atoms': no record has an atom entailed by the hypothesis: logical consistency needs",
    ),
    "ChaosNLI predictions of no model": (
        chaos(predictions=["{}"]),
        r"p\.jsonl:1: expected \{model name: \{uid: prediction\}\} or rows with 'probabilities'",
    ),
    "empty defeasible file": (single("defeasible", ""), r"in\.jsonl: the file holds no rows"),
    "empty nli-atoms file": (single("nli-atoms", "\n"), r"in\.jsonl: the file holds no rows"),
    "empty transitivity file": (single("transitivity", ""), r"in\.jsonl: the file holds no rows"),
    "transitivity label": (
        single("transitivity", lines([TRANSITIVITY, dict(TRANSITIVITY, id="u", label_p_m="maybe")])),
        r"in\.jsonl:2 field 'label_p_m': 'maybe' is not an NLI label",
    ),
    "empty epistemic file": (
        ("epistemic", {"input": ("rows.jsonl", ""), "predictions": ("p.jsonl", lines([{"index": 0, "label": "e"}]))}),
        r"rows\.jsonl: the file holds no rows",
    ),
}


def write(tmp_path, files) -> list[str]:
    """The files of a case on disk, as `evaluate` options."""
    options = []
    for role, (name, content) in files.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        options += [f"--{role}", str(path)]
    return options


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_is_one_line_naming_the_place_exit_2_and_stores_nothing(case, tmp_path):
    (suite, files), message = BAD_INPUTS[case]
    options = write(tmp_path, files)
    if suite == "epistemic":
        options.append("--score")
    for save in ([], ["--save"]):
        with pytest.raises(CommandError) as error:
            call_command("evaluate", suite, *options, *save, stdout=io.StringIO())
        text = str(error.value)
        assert error.value.returncode == 2, text
        assert "\n" not in text and "Traceback" not in text
        assert re.search(message, text), text
    assert Job.objects.count() == 0


def test_the_exit_status_of_the_command_is_2(tmp_path):
    (suite, files), _ = BAD_INPUTS["UNLI prediction above 1"]
    done = subprocess.run(
        [sys.executable, "manage.py", "evaluate", suite, *write(tmp_path, files)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"CommandError: {tmp_path / 'p.csv'}:3 field 'prediction': 1.5 is not a probability in [0, 1]"
    ]


def test_renormalise_rescales_rows_and_counts_them(tmp_path):
    predictions = changed(PREDICTIONS, 1, probabilities={"e": 0.1, "n": 0.1, "c": 0.7})
    options = write(tmp_path, chaos(predictions=predictions)[1])
    result = evaluate("chaos", *options, "--renormalise")
    assert result["renormalised_rows"] == 1
    model = floor_probabilities(np.array([[0.7, 0.3, 0.0], np.array([0.1, 0.1, 0.7]) / 0.9, [0.2, 0.6, 0.2]]))
    human = np.array([row["label_dist"] for row in HUMAN])
    assert result["jsd"] == pytest.approx(np.mean(jensenshannon(human, model, axis=1)), rel=1e-12)
    clean = evaluate("chaos", *write(tmp_path, chaos()[1]), "--renormalise")
    assert clean["renormalised_rows"] == 0


def test_items_with_fewer_than_two_votes_are_left_out_of_the_split_half_and_counted(tmp_path):
    human = changed(HUMAN, 1, label_count=[0, 0, 1])
    result = evaluate("chaos", *write(tmp_path, chaos(human=human)[1]))
    assert (result["n"], result["human_split_jsd_items"], result["human_split_jsd_excluded_items"]) == (3, 2, 1)
    counts = [row["label_count"] for row in human]
    assert result["human_split_jsd"] == split_half_jsd(counts, seed=0)
    assert result["human_split_jsd"] == split_half_jsd([counts[0], counts[2]], seed=0)


def test_a_chaos_file_with_one_vote_per_item_has_no_split_half(tmp_path):
    human = [dict(row, label_count=[0, 0, 1], label_dist=[0.0, 0.0, 1.0]) for row in HUMAN]
    result = evaluate("chaos", *write(tmp_path, chaos(human=human)[1]))
    assert result["human_split_jsd"] is None and result["human_split_jsd_excluded_items"] == 3
