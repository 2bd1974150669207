"""Epistemic closure filters: generation on real SNLI dev, labels from the table, and scoring."""

import json
import re
from collections import Counter

import pytest
from django.core.management.base import CommandError

from evaluation.generators.epistemic import (
    FACTIVE_VERBS,
    NAMES,
    NON_FACTIVE_VERBS,
    TEMPLATES,
    apply_filter,
    embedded,
    is_full_sentence,
)
from tests.conftest import SHARED_DATA
from tests.evaluation.helpers import evaluate, write_jsonl

E, N, C = "entailment", "neutral", "contradiction"
EXPECTED_LABEL = {
    ("control", E): E,
    ("control", N): N,
    ("control", C): C,
    ("single_agent", E): E,
    ("single_agent", N): N,
    ("single_agent", C): C,
    ("anaphora", E): E,
    ("anaphora", N): N,
    ("anaphora", C): C,
    ("multi_agent_factive", E): N,
    ("multi_agent_factive", N): N,
    ("multi_agent_factive", C): C,
    ("multi_agent_non_factive", E): N,
    ("multi_agent_non_factive", N): N,
    ("multi_agent_non_factive", C): N,
}
SUBJECT = r"(?P<{0}>[A-Z][a-z]+) (?P<{1}>[a-z]+) that (?P<{2}>.+)"


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    output = tmp_path_factory.mktemp("epistemic") / "epistemic.jsonl"
    summary = evaluate(
        "epistemic",
        "--generate",
        "--snli",
        SHARED_DATA / "snli" / "snli_dev_gold_only.jsonl",
        "--per-template",
        300,
        "--seed",
        13,
        "--output",
        output,
    )
    rows = [json.loads(line) for line in output.read_text().splitlines()]
    return summary, rows, output


def test_300_rows_per_cell_with_labels_from_the_table(generated):
    summary, rows, _ = generated
    assert summary["n"] == len(rows) == 15 * 300
    cells = Counter((row["template"], row["original_label"]) for row in rows)
    assert cells == dict.fromkeys(EXPECTED_LABEL, 300)
    for row in rows:
        assert set(row) == {"id", "premise", "hypothesis", "label", "original_label", "template"}
        assert row["label"] == EXPECTED_LABEL[row["template"], row["original_label"]]
    assert len({row["id"] for row in rows}) == len(rows)


def test_rows_follow_their_template(generated):
    _, rows, _ = generated
    premise_form = re.compile(SUBJECT.format("name", "verb", "x"))
    hypothesis_form = re.compile(SUBJECT.format("subject", "verb2", "y"))
    for row in rows:
        if row["template"] == "control":
            assert is_full_sentence(row["premise"]) and is_full_sentence(row["hypothesis"])
            continue
        p, h = premise_form.fullmatch(row["premise"]), hypothesis_form.fullmatch(row["hypothesis"])
        assert p and h, row
        assert p["name"] in NAMES and p["verb"] == h["verb2"]
        assert p["x"][0].islower() or p["x"].split()[0] == "I" or p["x"].split()[0].isupper()
        if row["template"] == "single_agent":
            assert h["subject"] == p["name"]
        elif row["template"] == "anaphora":
            assert h["subject"] == NAMES[p["name"]].capitalize()
        else:
            assert h["subject"] in NAMES and h["subject"] != p["name"]
            verbs = FACTIVE_VERBS if row["template"] == "multi_agent_factive" else NON_FACTIVE_VERBS
            assert p["verb"] in verbs


def test_names_are_gender_balanced():
    assert len(NAMES) == 20 and Counter(NAMES.values()) == {"she": 10, "he": 10}


@pytest.mark.parametrize(
    "text, expected",
    [
        ("A man is sleeping on a bench.", True),
        ("Two dogs have fun in the snow.", True),
        ("Two dogs running in the snow.", False),  # participle fragment
        ("A man about to be hit by a ball.", False),  # "to be" is not finite
        ("a man is sleeping.", False),  # no capital
        ("A man is sleeping", False),  # no final period
        ("A man is here. He sleeps.", False),  # two sentences
        ("Is the man sleeping?", False),
    ],
)
def test_full_sentence_heuristic(text, expected):
    assert is_full_sentence(text) is expected


def test_embedding_lowercases_the_first_letter_only():
    assert embedded("A Dog runs.") == "a Dog runs."
    assert embedded("I am here.") == "I am here."
    assert embedded("NASA is launching a rocket.") == "NASA is launching a rocket."


def test_filters_are_seeded():
    import random

    first = [apply_filter(t, "A man is here.", "A person is here.", random.Random(5)) for t in TEMPLATES]
    again = [apply_filter(t, "A man is here.", "A person is here.", random.Random(5)) for t in TEMPLATES]
    assert first == again and first[0] == ("A man is here.", "A person is here.")


def test_score_per_template_and_label(generated, tmp_path):
    _, rows, output = generated
    # A model that ignores the filters and predicts the original label.
    predictions = write_jsonl(tmp_path / "p.jsonl", [{"id": r["id"], "label": r["original_label"]} for r in rows])
    result = evaluate("epistemic", "--score", "--input", output, "--predictions", predictions)
    assert result["n"] == 4500
    cells = {(c["template"], c["original_label"]): c for c in result["cells"]}
    for (template, original), label in EXPECTED_LABEL.items():
        assert cells[template, original]["n"] == 300
        assert cells[template, original]["accuracy"] == (1.0 if label == original else 0.0)
    assert result["accuracy"] == pytest.approx(12 / 15)
    by_template = {t["template"]: t["accuracy"] for t in result["by_template"]}
    assert by_template["multi_agent_non_factive"] == pytest.approx(1 / 3)


def test_score_by_index_and_missing_prediction(generated, tmp_path):
    _, rows, output = generated
    by_index = write_jsonl(tmp_path / "p.jsonl", [{"index": i, "label": r["label"]} for i, r in enumerate(rows)])
    assert evaluate("epistemic", "--score", "--input", output, "--predictions", by_index)["accuracy"] == 1.0
    partial = write_jsonl(tmp_path / "q.jsonl", [{"id": r["id"], "label": "e"} for r in rows[1:]])
    with pytest.raises(CommandError, match=f"no prediction for id '{rows[0]['id']}'"):
        evaluate("epistemic", "--score", "--input", output, "--predictions", partial)


def test_too_few_sentences_is_an_error(tmp_path):
    snli = write_jsonl(
        tmp_path / "snli.jsonl",
        [
            {"premise": "A man is here.", "hypothesis": "A person is here.", "label": "entailment"},
        ],
    )
    with pytest.raises(CommandError, match="only 1 full-sentence pairs labelled entailment"):
        evaluate("epistemic", "--generate", "--snli", snli, "--per-template", 2, "--output", tmp_path / "o.jsonl")


def test_generate_needs_its_paths():
    with pytest.raises(CommandError, match="--snli and --output"):
        evaluate("epistemic", "--generate")
