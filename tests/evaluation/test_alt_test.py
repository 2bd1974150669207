"""The alternative annotator test (Calderon, Reichart & Dror, ACL 2025): its pure functions against scipy,
statsmodels, a plain re-statement of the authors' procedure and hand-worked cases; the `alt-test` suite on
VariErr's per-annotator labels and on a study's own annotations export; bad input; the form and the API."""

import io
import json
from collections import defaultdict

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management.base import CommandError
from rest_framework.test import APIClient
from scipy.stats import ttest_1samp
from statsmodels.stats.multitest import multipletests

from evaluation.runs import get_suite
from evaluation.suites import run_alt_test
from jobs.models import Job
from metrics import alt_test as alt
from tests.conftest import IMMEDIATE_TASKS
from tests.evaluation.helpers import evaluate, evaluate_text, write_jsonl

NLI = ("entailment", "neutral", "contradiction")


# Benjamini-Yekutieli and the t-test ---------------------------------------------------------------------


def test_benjamini_yekutieli_on_a_hand_worked_example():
    # m = 5, c(5) = 1 + 1/2 + 1/3 + 1/4 + 1/5 = 137/60; p_(i) * 5 * c(5) / i, then the running minimum from
    # the largest p down: 0.001 -> 0.0114167, 0.008 -> 0.0456667, 0.039 -> 0.1484167 (lowered to the next,
    # 0.041 -> 0.1170208), 0.6 -> 1.37 capped at 1. At 0.05 the two smallest are rejected.
    adjusted, rejected = alt.benjamini_yekutieli([0.041, 0.001, 0.6, 0.008, 0.039], alpha=0.05)
    c = 137 / 60
    expected = [0.041 * 5 * c / 4, 0.001 * 5 * c, 1.0, 0.008 * 5 * c / 2, 0.041 * 5 * c / 4]
    assert adjusted == pytest.approx(expected, abs=1e-12)
    assert rejected.tolist() == [False, True, False, True, False]


def test_benjamini_yekutieli_equals_statsmodels():
    rng = np.random.default_rng(3)
    for m in (1, 2, 7, 40):
        p_values = rng.uniform(0, 0.08, m) ** rng.uniform(0.5, 2)
        for alpha in (0.05, 0.1):
            expected_rejected, expected_adjusted, _, _ = multipletests(p_values, alpha=alpha, method="fdr_by")
            adjusted, rejected = alt.benjamini_yekutieli(p_values, alpha)
            assert adjusted == pytest.approx(expected_adjusted, abs=1e-12)
            assert rejected.tolist() == expected_rejected.tolist()


def test_t_test_p_values_equal_scipy():
    rng = np.random.default_rng(0)
    sizes = [30, 31, 57, 200, 2]
    groups = np.repeat(np.arange(len(sizes)), sizes)
    differences = rng.choice([-1.0, 0.0, 1.0], size=len(groups), p=[0.3, 0.5, 0.2])
    for epsilon in (0.0, 0.1, 0.2):
        n, p_values = alt.one_sided_t_p_values(differences, groups, len(sizes), epsilon)
        assert n.tolist() == sizes
        for group in range(len(sizes)):
            expected = ttest_1samp(differences[groups == group], epsilon, alternative="less").pvalue
            assert p_values[group] == pytest.approx(expected, rel=1e-9, abs=1e-15)


def test_a_group_without_variance_is_decided_by_its_mean():
    groups = np.repeat([0, 1, 2], 4)
    differences = np.array([0.0] * 4 + [1.0] * 4 + [-1.0] * 4)
    _, p_values = alt.one_sided_t_p_values(differences, groups, 3, epsilon=0.1)
    assert p_values.tolist() == [0.0, 1.0, 0.0]


# The test itself -----------------------------------------------------------------------------------------


def paper_procedure(items, annotators, labels, model_rows, epsilon, alpha, min_items):
    """The authors' procedure restated with dicts and loops: (winning rate, advantage probability, p-values
    by annotator). Alignment: 1 - total variation distance to the others' label distribution."""
    by_item = defaultdict(dict)
    for item, annotator, label in zip(items, annotators, labels):
        by_item[item][annotator] = label
    p_values, advantages = {}, []
    for held_out in sorted(set(annotators)):
        model_wins, human_wins = [], []
        for item, answers in by_item.items():
            if held_out not in answers or len(answers) < 2:
                continue
            others = np.zeros(model_rows.shape[1])
            for annotator, label in answers.items():
                if annotator != held_out:
                    others[label] += 1
            others /= others.sum()
            human = others[answers[held_out]]
            model = 1 - np.abs(model_rows[item] - others).sum() / 2
            model_wins.append(model >= human - 1e-9)
            human_wins.append(human >= model - 1e-9)
        if len(model_wins) < min_items:
            continue
        differences = np.array(human_wins, dtype=float) - np.array(model_wins, dtype=float)
        p_values[held_out] = ttest_1samp(differences, epsilon, alternative="less").pvalue
        advantages.append(np.mean(model_wins))
    ordered = sorted(p_values.items(), key=lambda pair: pair[1])
    m, c = len(ordered), sum(1 / i for i in range(1, len(ordered) + 1))
    passing = [rank for rank, (_, p) in enumerate(ordered, start=1) if p <= rank * alpha / (m * c)]
    rejected = max(passing, default=0)
    return rejected / m, float(np.mean(advantages)), p_values


def simulated_study(seed, n_items=120, n_annotators=6, model_noise=0.3):
    """Annotators who give an item's true label 70% of the time and each label an item with probability
    0.6; a model that gives the true label with probability 1 - model_noise, as one-hot or soft rows."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    items, annotators, labels = [], [], []
    for item in range(n_items):
        for annotator in range(n_annotators):
            if rng.random() < 0.6:
                items.append(item)
                annotators.append(annotator)
                labels.append(truth[item] if rng.random() < 0.7 else rng.integers(0, 3))
    guesses = np.where(rng.random(n_items) < 1 - model_noise, truth, rng.integers(0, 3, n_items))
    soft = 0.6 * np.eye(3)[guesses] + 0.4 * rng.dirichlet(np.ones(3), n_items)
    return np.array(items), np.array(annotators), np.array(labels), np.eye(3)[guesses], soft


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("rows", ["one_hot", "soft"])
def test_the_vectorised_test_equals_the_procedure_written_out(seed, rows):
    items, annotators, labels, one_hot, soft = simulated_study(seed)
    model = one_hot if rows == "one_hot" else soft
    result = alt.alt_test(items, annotators, labels, model, epsilon=0.1, alpha=0.05, min_items=30)
    winning_rate, advantage, p_values = paper_procedure(items, annotators, labels, model, 0.1, 0.05, 30)
    assert result["winning_rate"] == winning_rate
    assert result["advantage_probability"] == pytest.approx(advantage, abs=1e-12)
    assert {row["index"]: row["p_value"] for row in result["annotators"]} == pytest.approx(p_values, abs=1e-12)


# Items 0-3 labelled by annotators 0, 1, 2: e e e / e e n / n n n / c c e; the majority is e, e, n, c.
HAND_ITEMS = np.repeat(np.arange(4), 3)
HAND_ANNOTATORS = np.tile(np.arange(3), 4)
HAND_LABELS = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 0])
MAJORITY = np.eye(3)[[0, 0, 1, 2]]


def test_a_model_that_gives_the_majority_label_wins_on_a_hand_worked_case():
    result = alt.alt_test(HAND_ITEMS, HAND_ANNOTATORS, HAND_LABELS, MAJORITY, epsilon=0.1, min_items=2)
    rows = {row["index"]: row for row in result["annotators"]}
    # Annotator 2 held out: item 0 others e, e: both 1, a tie; item 1 others e, e: the model's e scores 1,
    # the annotator's n 0; item 2 a tie; item 3 others c, c: the model's c 1, the annotator's e 0.
    # d = W_human - W_model = 0, -1, 0, -1: mean -0.5, standard error 0.5774 / 2, t = -0.6 / 0.28868.
    assert (rows[2]["model_wins"], rows[2]["human_wins"]) == (1.0, 0.5)
    assert rows[2]["p_value"] == pytest.approx(ttest_1samp([0, -1, 0, -1], 0.1, alternative="less").pvalue)
    # Annotators 0 and 1 tie with the model on every item: d = 0 throughout, below epsilon with no variance.
    assert (rows[0]["model_wins"], rows[0]["human_wins"], rows[0]["p_value"]) == (1.0, 1.0, 0.0)
    # With 4 items annotator 2's p (0.0646) stays above its Benjamini-Yekutieli threshold, 0.05 / (3 * 11/6) =
    # 0.027, after the two zeros: two of three rejected, and the model passes.
    assert rows[2]["p_value"] == pytest.approx(0.0646, abs=1e-4) and not rows[2]["rejected"]
    assert (
        result["winning_rate"] == pytest.approx(2 / 3) and result["passed"] and result["advantage_probability"] == 1.0
    )


def test_a_model_that_always_disagrees_fails():
    contrary = np.eye(3)[(MAJORITY.argmax(axis=1) + 1) % 3]
    result = alt.alt_test(HAND_ITEMS, HAND_ANNOTATORS, HAND_LABELS, contrary, epsilon=0.1, min_items=2)
    assert result["winning_rate"] == 0.0 and not result["passed"]
    assert all(row["p_value"] > 0.5 for row in result["annotators"])


def test_probabilities_that_match_the_others_spread_beat_a_label():
    # Items 0 and 1: annotator 0 said e, annotator 1 said n. Held out, each scores 0 (the other gave the
    # other label); the model's (0.5, 0.5, 0) is 0.5 from the remaining one-hot row in total variation.
    items, annotators, labels = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1]), np.array([0, 1, 0, 1])
    result = alt.alt_test(items, annotators, labels, [[0.5, 0.5, 0.0]] * 2, epsilon=0.1, min_items=2)
    assert [(row["model_wins"], row["human_wins"], row["p_value"]) for row in result["annotators"]] == [
        (1.0, 0.0, 0.0)
    ] * 2
    assert result["passed"]


def test_annotators_with_too_few_shared_items_are_listed_and_not_tested():
    items, annotators, labels, one_hot, _ = simulated_study(5)
    items, annotators, labels = (
        np.append(values, extra) for values, extra in zip((items, annotators, labels), (0, 6, 1))
    )
    result = alt.alt_test(items, annotators, labels, one_hot, min_items=30)
    assert {"index": 6, "items": 1} in result["too_few_items"]
    assert 6 not in {row["index"] for row in result["annotators"]}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"model": [[0.5, 0.6, 0.0]] * 4}, r"model row 0: sums to 1.1"),
        ({"model": [[np.nan, 0.5, 0.5]] * 4}, r"model row 0: nan is not a probability"),
        ({"labels": HAND_LABELS[:-1]}, r"inputs differ in length"),
        ({"labels": np.where(HAND_LABELS == 2, 3, HAND_LABELS)}, r"labels must lie below 3"),
        ({"annotators": np.zeros(12, dtype=int)}, r"an annotator labels an item twice"),
        ({"items": np.arange(12), "model": np.resize(MAJORITY, (12, 3))}, r"no item has 2 or more annotators"),
        ({"min_items": 5}, r"no annotator has 5 items shared with another annotator \(most: 4\)"),
        ({"epsilon": 1.0}, r"epsilon must lie in \[0, 1\)"),
    ],
)
def test_bad_input_is_a_value_error_naming_it(changes, message):
    arguments = {"items": HAND_ITEMS, "annotators": HAND_ANNOTATORS, "labels": HAND_LABELS, "model": MAJORITY}
    with pytest.raises(ValueError, match=message):
        alt.alt_test(**{**arguments, "min_items": 2, **changes})


def test_the_suite_settings_default_to_the_metric_defaults():
    settings = get_suite("alt-test").settings.clean({})
    assert (settings["epsilon"], settings["alpha"], settings["min_items"]) == (alt.CROWD_EPSILON, 0.05, alt.MIN_ITEMS)


# The suite on real per-annotator labels ----------------------------------------------------------------


@pytest.fixture
def varierr_labels(shared_data, tmp_path):
    """VariErr's round-1 labels, one row per (item, annotator) who gave a single label (500 MNLI items,
    4 annotators; an annotator who gave two labels to an item is left out on that item)."""
    rows = []
    for line in (shared_data / "varierr" / "varierr.json").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        given = defaultdict(set)
        for label in NLI:
            for explanation in item[label]:
                given[explanation["annotator"]].add(label)
        rows += [
            {"id": item["id"], "annotator": f"varierr-{annotator}", "label": labels.pop()}
            for annotator, labels in sorted(given.items())
            if len(labels) == 1
        ]
    return write_jsonl(tmp_path / "varierr_labels.jsonl", rows)


@pytest.fixture
def chaos_majority(shared_data, tmp_path):
    """ChaosNLI's 100-vote majority label of every MNLI item as a model's predictions (JSONL rows)."""
    rows = []
    for line in (shared_data / "chaosnli" / "chaosNLI_mnli_m.jsonl").read_text(encoding="utf-8").splitlines():
        item = json.loads(line)
        rows.append(
            {"id": item["uid"], "probabilities": {item["majority_label"]: 1.0}, "label": item["majority_label"]}
        )
    return write_jsonl(tmp_path / "chaos_majority.jsonl", rows)


def test_the_hundred_vote_majority_passes_against_varierr_annotators(varierr_labels, chaos_majority):
    result = evaluate("alt-test", "--annotations", varierr_labels, "--predictions", chaos_majority)
    assert [row["annotator"] for row in result["annotators"]] == [f"varierr-{n}" for n in (0, 2, 1, 3)]
    assert all(row["items"] >= 400 and row["rejected"] for row in result["annotators"])
    assert result["winning_rate"] == 1.0 and result["passed"] and result["epsilon"] == 0.1
    assert result == run_alt_test(varierr_labels, chaos_majority)


def test_the_random_baseline_fails_against_varierr_annotators(varierr_labels, shared_data):
    random_baseline = shared_data / "chaosnli" / "prediction_samples" / "mnli_random_baseline.json"
    for alignment in ("label", "distribution"):
        result = evaluate(
            "alt-test", "--annotations", varierr_labels, "--predictions", random_baseline, "--alignment", alignment
        )
        assert result["winning_rate"] < 0.5 and not result["passed"] and result["alignment"] == alignment
    text = evaluate_text("alt-test", "--annotations", varierr_labels, "--predictions", random_baseline)
    assert "annotators:" in text and "model_wins  human_wins  p_value  p_adjusted  rejected" in text


# A study's own export ------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_studys_annotations_export_feeds_the_test(shared_data, make_project, make_user, author, tmp_path):
    from annotation.services import quality
    from annotation.services.assignments import claim_page, submit_page
    from dataset_io.services import exporters
    from dataset_io.services.importers import import_stream

    chaos = [json.loads(line) for line in (shared_data / "chaosnli" / "chaosNLI_mnli_m.jsonl").open()][:12]
    project = make_project("nli_label", items_per_page=12, redundancy=3, max_annotations=3)
    rows = [
        {"id": item["uid"], "premise": item["example"]["premise"], "hypothesis": item["example"]["hypothesis"]}
        for item in chaos
    ]
    import_stream(project, io.StringIO("".join(json.dumps(row) + "\n" for row in rows)), "jsonl")
    rng = np.random.default_rng(7)

    def answer(worker):
        page = claim_page(project, worker)
        votes = {c.item_id: c.item.example.source_id for c in page.claims.select_related("item__example")}
        by_uid = {item["uid"]: item for item in chaos}
        submit_page(
            page.pk,
            worker,
            {
                str(item_id): {"value": str(rng.choice(["e", "n", "c"], p=by_uid[uid]["label_dist"])), "seconds": 2.0}
                for item_id, uid in votes.items()
            },
        )

    blocked = make_user("speeder")
    answer(blocked)
    quality.block(project, blocked, author, exclude_answers=True, reason="too fast")
    for n in range(3):
        answer(make_user(f"crowd{n}"))
    export = tmp_path / "annotations.jsonl"
    export.write_text("".join(exporters.export(project, "annotations")), encoding="utf-8")
    majority = write_jsonl(
        tmp_path / "majority.jsonl",
        [{"id": item["uid"], "probabilities": {item["majority_label"]: 1.0}} for item in chaos],
    )
    result = evaluate("alt-test", "--annotations", export, "--predictions", majority, "--min-items", 10)
    assert result["skipped_rows"] == {"imported": 0, "excluded": 12, "gold_checks": 0}
    assert len(result["annotators"]) == 3 and all(row["items"] == 12 for row in result["annotators"])
    assert result["items_compared"] == 12 and result["annotations_tested"] == 36


# Bad input: exit 2 naming file, line and field --------------------------------------------------------


def labels_file(tmp_path, rows):
    return write_jsonl(tmp_path / "labels.jsonl", rows)


def predictions_file(tmp_path, ids):
    return write_jsonl(tmp_path / "predictions.jsonl", [{"id": i, "probabilities": {"e": 1.0}} for i in ids])


def three_annotators(n_items):
    return [{"id": str(i), "annotator": a, "label": "e"} for i in range(n_items) for a in ("a", "b", "c")]


@pytest.mark.parametrize(
    "rows, ids, message",
    [
        (
            three_annotators(3),
            ["0", "1"],
            r"labels.jsonl:7 field 'id': no prediction for id '2' in .*predictions.jsonl \(1 items missing\)",
        ),
        (
            [{"id": str(i), "annotator": "a", "label": "e"} for i in range(3)],
            ["0", "1", "2"],
            "labels.jsonl field 'id': no item has 2 or more annotators",
        ),
        (
            three_annotators(3),
            ["0", "1", "2"],
            r"labels.jsonl field 'annotator': no annotator has 30 items shared with another annotator \(most: 3, 'a'\)",
        ),
        (
            [*three_annotators(1), {"id": "0", "annotator": "a", "label": "n"}],
            ["0"],
            r"labels.jsonl:4 field 'annotator': repeats \('0', 'a'\) of line 1",
        ),
        (
            [{"id": "0", "annotator": "a", "label": "maybe"}],
            ["0"],
            "labels.jsonl:1 field 'label': 'maybe' is not an NLI label",
        ),
        (
            [{"id": "0", "annotator": "a", "value": "e", "atom": "A man"}],
            ["0"],
            "labels.jsonl:1 field 'atom': per-atom answers",
        ),
        ([{"id": "0", "label": "e"}], ["0"], "labels.jsonl:1 field 'annotator': missing"),
        (
            [{"id": "0", "annotator": None, "imported": True, "value": "e", "count": 3}],
            ["0"],
            r"labels.jsonl: every row was left out \(1 imported\)",
        ),
    ],
)
def test_bad_labels_exit_2_naming_the_place(tmp_path, rows, ids, message):
    with pytest.raises(CommandError, match=message) as raised:
        evaluate(
            "alt-test", "--annotations", labels_file(tmp_path, rows), "--predictions", predictions_file(tmp_path, ids)
        )
    assert raised.value.returncode == 2


def test_bad_predictions_exit_2_naming_the_place(tmp_path):
    predictions = write_jsonl(tmp_path / "predictions.jsonl", [{"id": "0", "probabilities": {"e": 0.7, "n": 0.7}}])
    with pytest.raises(
        CommandError, match=r"predictions.jsonl:1 field 'probabilities': probabilities sums to 1.4"
    ) as raised:
        evaluate("alt-test", "--annotations", labels_file(tmp_path, three_annotators(1)), "--predictions", predictions)
    assert raised.value.returncode == 2


# The web form and the API ------------------------------------------------------------------------------


@pytest.fixture
def _inline_tasks(settings, tmp_path):
    settings.TASKS = IMMEDIATE_TASKS
    settings.MEDIA_ROOT = tmp_path / "media"


def upload(path) -> SimpleUploadedFile:
    return SimpleUploadedFile(path.name, path.read_bytes())


@pytest.mark.django_db
def test_the_form_and_the_api_run_the_suite(_inline_tasks, client, varierr_labels, chaos_majority, author):
    client.force_login(author)
    response = client.post(
        "/evaluation/new/",
        {
            "suite": "alt-test",
            "gold": upload(varierr_labels),
            "predictions": upload(chaos_majority),
            "epsilon": "0.2",
            "atom_labels": "auto",
            "alignment": "label",
        },
    )
    run = Job.objects.get()
    assert response.status_code == 302 and run.status == "done", run.error
    assert run.result == run_alt_test(varierr_labels, chaos_majority, epsilon=0.2)
    page = client.get(f"/jobs/{run.pk}/").content.decode()
    assert "varierr-3" in page and "winning_rate" in page

    api = APIClient()
    api.force_authenticate(author)
    created = api.post(
        "/api/evaluation/runs/",
        {
            "suite": "alt-test",
            "gold": upload(varierr_labels),
            "predictions": upload(chaos_majority),
            "alignment": "distribution",
        },
        format="multipart",  # a choice setting as its text (JSON text, '"distribution"', is read too)
    )
    assert created.status_code == 201, created.content
    results = api.get(f"/api/evaluation/runs/{created.json()['id']}/results/").json()
    assert results == run_alt_test(varierr_labels, chaos_majority, alignment="distribution")


@pytest.mark.django_db
def test_the_api_refuses_a_setting_out_of_bounds_with_400_and_bad_labels_with_409_storing_nothing(
    _inline_tasks, tmp_path, author
):
    api = APIClient()
    api.force_authenticate(author)
    refused = api.post(
        "/api/evaluation/runs/",
        {
            "suite": "alt-test",
            "gold": upload(labels_file(tmp_path, three_annotators(3))),
            "predictions": upload(predictions_file(tmp_path, ["0", "1", "2"])),
            "min_items": "3",
            "epsilon": "1.5",
        },
        format="multipart",
    )
    assert refused.status_code == 400 and "epsilon" in json.dumps(refused.json())
    missing = api.post(
        "/api/evaluation/runs/",
        {
            "suite": "alt-test",
            "gold": upload(labels_file(tmp_path, three_annotators(3))),
            "predictions": upload(predictions_file(tmp_path, ["0"])),
            "min_items": "3",
        },
        format="multipart",
    )
    assert missing.status_code == 409 and "labels.jsonl:4 field 'id': no prediction for id '1'" in json.dumps(
        missing.json()
    )
    assert not Job.objects.exists()
