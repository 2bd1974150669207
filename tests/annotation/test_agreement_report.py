"""Project agreement: the service, the `agreement` command, the plots and the report page."""

import io
import json
from itertools import combinations
from statistics import median

import krippendorff
import numpy as np
import pytest
from django.core.management import CommandError, call_command
from scipy import stats

from annotation.models import Annotation, Item
from annotation.services.analysis.agreement import (
    item_mean_abs_difference,
    item_pair_agreement,
    project_agreement,
    project_report,
)
from dataset_io.services.importers import import_file
from metrics.agreement import split_half_jsd
from tests.conftest import IMMEDIATE_TASKS

pytestmark = pytest.mark.django_db


def agreement_json(slug, *args) -> dict:
    out = io.StringIO()
    call_command("agreement", slug, "--json", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def annotate(project, workers, table, raw=lambda value: {"value": value}):
    """table[w][i]: worker w's value for the project's i-th item, None where w did not annotate it."""
    items = list(project.items.order_by("id"))
    Annotation.objects.bulk_create(
        Annotation(item=items[i], worker=worker, raw=raw(value), value=value)
        for worker, row in zip(workers, table)
        for i, value in enumerate(row)
        if value is not None
    )
    for item in items:
        values = list(item.annotations.values_list("value", flat=True))
        item.aggregate = median(values) if values and project.task.agreement_level != "nominal" else None
        item.save(update_fields=["aggregate"])
    return items


def as_matrix(table) -> np.ndarray:
    return np.array([[np.nan if value is None else value for value in row] for row in table], dtype=float)


def pairs_sharing(matrix):
    for a, b in combinations(range(len(matrix)), 2):
        both = ~np.isnan(matrix[a]) & ~np.isnan(matrix[b])
        if both.sum() >= 2:
            yield matrix[a, both], matrix[b, both]


# ---------------------------------------------------------------- ChaosNLI acceptance


@pytest.fixture
def chaos_snli(make_project, shared_data):
    project = make_project("nli_label", slug="chaos-snli")
    path = shared_data / "chaosnli" / "chaosNLI_snli.jsonl"
    import_file(project, path, "chaosnli")
    label_count = np.array([json.loads(line)["label_count"] for line in path.open()])
    return project, label_count


def test_chaosnli_alpha_matches_the_krippendorff_package(chaos_snli):
    project, label_count = chaos_snli
    result = agreement_json(project.slug, "--bootstrap", "100")

    expected = krippendorff.alpha(value_counts=label_count, level_of_measurement="nominal")
    assert result["level"] == "nominal"
    assert abs(result["krippendorff_alpha"] - expected) < 1e-9
    low, high = result["krippendorff_alpha_ci"]
    assert low < result["krippendorff_alpha"] < high and high - low < 0.1
    assert (result["n_items"], result["n_annotations"], result["n_imported_votes"]) == (1514, 151400, 151400)
    assert result["n_workers"] == 0
    # Items come in file order with columns [e, n, c], so the seeded split is the metric's own.
    assert result["split_half_jsd"] == pytest.approx(split_half_jsd(label_count, seed=0), abs=1e-12)
    assert result["pairwise"] is None and "no annotator ids" in result["unavailable"]["pairwise"]
    assert result["human_baseline"] is None and "human_baseline" in result["unavailable"]


def test_agreement_command_prints_a_table_and_checks_its_input(chaos_snli):
    project, _ = chaos_snli
    out = io.StringIO()
    call_command("agreement", project.slug, "--bootstrap", "0", stdout=out)
    text = out.getvalue()
    assert "krippendorff_alpha (nominal)" in text and "split-half JSD" in text and "no annotator ids" in text
    with pytest.raises(CommandError, match="no project with the slug 'nope'"):
        call_command("agreement", "nope")
    with pytest.raises(CommandError, match="--bootstrap"):
        call_command("agreement", project.slug, "--bootstrap", "-1")


# ---------------------------------------------------------------- hand-made projects


SLIDER_VALUES = [0.9, 0.1, 0.55, 0.3, 0.8, 0.05, 0.7, 0.45, 0.2]
SLIDER_OTHER = [0.8, 0.25, 0.5, 0.35, 0.95, 0.1, 0.5, 0.4, 0.3]


@pytest.fixture
def slider(make_project, import_rows, make_user):
    """9 items; item i is annotated by workers i % 3 and (i + 1) % 3, so each pair shares 3 items."""
    project = make_project("unli_slider", slug="slider")
    import_rows(
        project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}", "label": "cne"[i % 3]} for i in range(9)]
    )
    workers = [make_user(f"w{n}") for n in range(3)]
    table = [[None] * 9 for _ in workers]
    for i in range(9):
        table[i % 3][i] = SLIDER_VALUES[i]
        table[(i + 1) % 3][i] = SLIDER_OTHER[i]
    annotate(project, workers, table, raw=lambda value: {"position": round(value * 10000)})
    return project, as_matrix(table)


def test_slider_figures_match_scipy_and_the_krippendorff_package(slider):
    project, matrix = slider
    result = project_agreement(project, bootstrap=200, seed=3)

    assert result["level"] == "interval"
    assert result["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=matrix, level_of_measurement="interval"), abs=1e-12
    )
    shared = list(pairs_sharing(matrix))
    assert len(shared) == 3
    pairwise = result["pairwise"]
    assert pairwise["statistic"] == "pearson" and pairwise["pairs"] == 3
    assert pairwise["value"] == pytest.approx(np.mean([stats.pearsonr(a, b).statistic for a, b in shared]))
    assert pairwise["spearman"] == pytest.approx(np.mean([stats.spearmanr(a, b).statistic for a, b in shared]))
    assert pairwise["ci"][0] <= pairwise["ci"][1]
    # Two annotations per item: whichever is held out, its squared error against the other is the same.
    baseline = result["human_baseline"]
    assert baseline["items"] == 9 and baseline["aggregate"] == "median"
    assert baseline["mse"] == pytest.approx(np.mean((np.array(SLIDER_VALUES) - np.array(SLIDER_OTHER)) ** 2))
    assert result["split_half_jsd"] is None
    assert (result["n_items"], result["n_items_pairable"], result["n_annotations"], result["n_workers"]) == (
        9,
        9,
        18,
        3,
    )
    assert project_agreement(project, bootstrap=200, seed=3) == result

    limited = project_agreement(project, bootstrap=200, seed=3, max_resampled_values=9 * 199)
    assert (
        limited["pairwise"]["ci"] is None
        and "9 values shared by annotator pairs x 200 resamples" in limited["unavailable"]["pairwise_ci"]
    )
    assert limited["krippendorff_alpha_ci"] == result["krippendorff_alpha_ci"]


@pytest.fixture
def defeasible(make_project, import_rows, make_user):
    """3 examples x 3 atoms, every atom labelled -2..+2 by the same 3 workers."""
    project = make_project("defeasible_atom", slug="defeasible")
    import_rows(
        project,
        [
            {"Premise": f"P{n}", "Hypothesis": f"H{n}", "Update": f"U{n}", "UpdateType": kind}
            for n, kind in enumerate(["weakener", "strengthener", "weakener"])
        ],
        "dnli",
    )
    import_rows(project, [{"hypothesis": f"H{n}", "atoms": [f"a{n}{k}" for k in range(3)]} for n in range(3)], "atoms")
    workers = [make_user(f"d{n}") for n in range(3)]
    table = [
        [-2, -1, 0, 2, 1, 1, -1, 0, -2],
        [-1, -1, 1, 2, 2, 0, -2, 0, -1],
        [-2, 0, 0, 1, 2, 1, -1, 1, -2],
    ]
    annotate(project, workers, table)
    return project, as_matrix(table)


def test_defeasible_figures_match_scipy_and_the_krippendorff_package(defeasible):
    project, matrix = defeasible
    result = project_agreement(project, bootstrap=100)

    assert result["level"] == "ordinal" and result["n_items"] == 9
    expected_alpha = krippendorff.alpha(
        reliability_data=matrix, level_of_measurement="ordinal", value_domain=[-2, -1, 0, 1, 2]
    )
    assert result["krippendorff_alpha"] == pytest.approx(expected_alpha, abs=1e-12)
    assert result["pairwise"]["statistic"] == "kendall_tau"
    expected_tau = np.mean([stats.kendalltau(a, b).statistic for a, b in pairs_sharing(matrix)])
    assert result["pairwise"]["value"] == pytest.approx(expected_tau)
    # One held-out label per atom against the median of the other two: the MSE lies between the best and
    # the worst choice of held-out labels.
    errors = np.array(
        [[(matrix[w, i] - np.median(np.delete(matrix[:, i], w))) ** 2 for w in range(3)] for i in range(9)]
    )
    assert errors.min(axis=1).mean() <= result["human_baseline"]["mse"] <= errors.max(axis=1).mean()


def test_nominal_worker_labels_give_cohen_kappa(make_project, import_rows, make_user):
    project = make_project("nli_label", slug="labels")
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(11)])
    first = list("eencnnceec")
    second = list("encccnceen")
    # The last item is a gold check: quality control, not data, so none of the figures counts it.
    items = annotate(project, [make_user("a"), make_user("b")], [[*first, "e"], [*second, "c"]])
    Item.objects.filter(pk=items[-1].pk).update(is_gold=True)
    result = project_agreement(project, bootstrap=50)
    assert (result["n_items"], result["n_annotations"]) == (10, 20)

    observed = np.mean([x == y for x, y in zip(first, second)])
    chance = sum(first.count(label) * second.count(label) for label in "enc") / 100
    assert result["pairwise"]["statistic"] == "cohen_kappa"
    assert result["pairwise"]["value"] == pytest.approx((observed - chance) / (1 - chance))
    codes = np.array([["enc".index(label) for label in row] for row in (first, second)], dtype=float)
    assert result["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal"), abs=1e-12
    )
    assert result["split_half_jsd"] is not None
    assert "numeric scale" in result["unavailable"]["human_baseline"]


def test_imported_votes_and_worker_labels_share_alpha_but_not_pairs(make_project, import_rows, make_user):
    project = make_project("nli_label", slug="mixed")
    import_rows(
        project,
        [
            {"uid": "u1", "example": {"premise": "P", "hypothesis": "H1"}, "label_counter": {"e": 3, "n": 1}},
            {"uid": "u2", "example": {"premise": "P", "hypothesis": "H2"}, "label_counter": {"c": 4}},
        ],
        "chaosnli",
    )
    import_rows(project, [{"id": f"x{i}", "premise": "P", "hypothesis": f"X{i}"} for i in range(3)])
    workers = [make_user("a"), make_user("b")]
    # The first two items hold the imported votes; workers label the other three.
    annotate(project, workers, [[None, None, "e", "n", "c"], [None, None, "e", "c", "c"]])
    result = project_agreement(project, bootstrap=0)

    counts = [[3, 1, 0], [0, 0, 4], [2, 0, 0], [0, 1, 1], [0, 0, 2]]
    assert result["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(value_counts=counts, level_of_measurement="nominal"), abs=1e-12
    )
    assert result["krippendorff_alpha_ci"] is None
    assert result["n_annotations"] == 14 and result["n_imported_votes"] == 8 and result["n_workers"] == 2
    assert result["pairwise"]["statistic"] == "cohen_kappa"


def test_too_few_annotations_leave_every_figure_empty_with_a_reason(make_project, import_rows, make_user):
    project = make_project("unli_slider", slug="sparse")
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(3)])
    annotate(project, [make_user("a")], [[0.2, 0.4, None]])
    result = agreement_json(project.slug)

    assert (result["n_items"], result["n_items_pairable"]) == (2, 0)
    assert result["krippendorff_alpha"] is None and result["pairwise"] is None and result["human_baseline"] is None
    assert set(result["unavailable"]) == {"krippendorff_alpha", "pairwise", "human_baseline", "split_half_jsd"}


# ---------------------------------------------------------------- per-item agreement and plots


def test_per_item_agreement_helpers():
    assert item_pair_agreement([[2, 0, 0], [1, 1, 0], [3, 1, 0], [1, 0, 0]]).tolist() == [1.0, 0.0, 0.5]
    values = np.array([[0.0, 1.0, 0.5], [1.0, 1.0, np.nan], [0.5, np.nan, np.nan]])
    # Item 0: pairs differ by 1, 0.5, 0.5; item 1: 0; item 2 has a single value.
    assert item_mean_abs_difference(values) == pytest.approx([2 / 3, 0.0])


def test_plots_are_svg_and_escape_text():
    from annotation.services.analysis.agreement import agreement_histogram_svg
    from annotation.tasktypes.defeasible_atom import atom_effect_strips_svg
    from annotation.tasktypes.unli_slider import slider_by_label_svg

    svg = slider_by_label_svg(
        [0.9, 0.8, 0.1, 0.5, 0.4], ["entailment", "entailment", "contradiction", "neutral", "<script>"]
    )
    assert svg.startswith("<svg") and "entailment" in svg and "<script>" not in svg

    frame = {"example": [1, 1, 2], "effect": [-2, 1, 2], "update_type": ["weakener", "weakener", "strengthener"]}
    import pandas as pd

    assert atom_effect_strips_svg(pd.DataFrame(frame)).startswith("<svg")
    histogram = agreement_histogram_svg([0.5, 1.0, 1.0], "share of <b>pairs</b>")
    assert "items" in histogram and "&lt;b&gt;pairs&lt;/b&gt;" in histogram and "<b>" not in histogram
    assert histogram == agreement_histogram_svg([0.5, 1.0, 1.0], "share of <b>pairs</b>")  # the same text each time


def test_defeasible_report_draws_the_atom_strips(defeasible):
    project, _ = defeasible
    report = project_report(project, bootstrap=0)
    titles = [plot["title"] for plot in report["plots"]]
    assert titles == ["Atom effects per example", "Agreement per item"]
    assert all(plot["svg"].startswith("<svg") for plot in report["plots"])


# ---------------------------------------------------------------- the report page


def test_report_page_shows_figures_and_plots_to_the_owner_only(client, slider, make_user, settings):
    settings.TASKS = IMMEDIATE_TASKS  # the report's figures computed when the page starts their job
    project, _ = slider
    url = f"/projects/{project.slug}/report/"
    assert client.get(url).status_code == 302  # anonymous: to the login page

    client.force_login(project.owner)
    page = client.get(url)
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count("<svg") == 2 and "Krippendorff&#x27;s alpha (interval)" in html and "Pearson r" in html

    # A worker may see the published project but not its report; another author may not see it at all.
    for name, role, expected in (("someone", "worker", 403), ("other-author", "author", 404)):
        client.force_login(make_user(name, role))
        assert client.get(url).status_code == expected
    client.force_login(make_user("boss", "admin"))
    assert client.get(url).status_code == 200


def test_report_page_empty_states(client, make_project, import_rows, settings):
    settings.TASKS = IMMEDIATE_TASKS  # the report's figures computed when the page starts their job
    project = make_project("unli_slider", slug="empty")
    import_rows(project, [{"id": "1", "premise": "<i>P</i>", "hypothesis": "H", "label": "e"}])
    client.force_login(project.owner)
    html = client.get(f"/projects/{project.slug}/report/").content.decode()
    assert "Too few annotations" in html and "No item has two or more annotations yet." in html
    assert "<svg" not in html
