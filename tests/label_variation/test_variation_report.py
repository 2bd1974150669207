"""The label variation report: imported VariErr records and collected label-explanation answers validated in
the linked project, read in a fixed number of queries, classified by VariErr's rule, shown on the report."""

import io
import json

import pytest
from django.test import Client

from annotation.services.assignments import claim_page, submit_page
from annotation.services.linking import send_to_validation
from annotation.services.projects import update_project
from dataset_io.services.importers import import_stream
from label_variation.services.variation import explanations, label_verdicts, report_tables, variation_report
from tests.conftest import SHARED_DATA

PREMISE = "A man in a grey suit is reading a newspaper on a crowded train."
HYPOTHESIS = "A man is going to work."


def varierr_lines(count: int) -> list[str]:
    with open(SHARED_DATA / "varierr" / "varierr.json") as lines:
        return [line for _, line in zip(range(count), lines)]


def import_varierr(project, lines: list[str]) -> list[dict]:
    """The lines imported through the varierr format; returns their records."""
    report = import_stream(project, io.StringIO("".join(lines)), "varierr")
    assert report.created == len(lines), report
    return [json.loads(line) for line in lines]


def test_imported_varierr_items_get_the_files_verdicts_and_distributions(make_project):
    project = make_project("nli_label", slug="varierr-labels")
    records = import_varierr(project, varierr_lines(60))

    report = variation_report(project)
    by_key = {item["key"]: item for item in report["items"]}
    assert len(by_key) == 60
    for record in records:
        item = by_key[f"id:{record['id']}"]
        assert {label for label, verdict in item["verdicts"].items() if verdict == "error"} == {
            label[0] for label in record["error_labels"]
        }
        chaos = record["chaosnli_labels"]
        assert item["chaosnli"] == pytest.approx([chaos.get(label, 0) / 100 for label in "enc"])
    first = by_key["id:23751e"]  # one entailment and one contradiction explanation, both confirmed
    assert first["round_one"] == pytest.approx((0.5, 0.0, 0.5))
    assert first["validated"] == first["round_one"]
    assert first["variation"] and not first["error"]

    study = report["study"]
    assert study["items"] == 60
    assert study["explanations"] == sum(
        len(r[name]) for r in records for name in ("entailment", "neutral", "contradiction")
    )
    assert study["error"] == sum(bool(r["error_labels"]) for r in records)
    assert study["variation"] == sum(len(r["label_set_round_2"]) >= 2 for r in records)
    assert study["judgments"] == sum(
        len(e["judgments"]) for r in records for name in ("entailment", "neutral", "contradiction") for e in r[name]
    )
    assert -1 <= study["alpha"] <= 1


def test_an_item_with_an_error_label_shows_the_validated_distribution_without_it(make_project):
    project = make_project("nli_label", slug="varierr-errors")
    line = next(
        line
        for line in varierr_lines(500)
        if (r := json.loads(line))["error_labels"] and len(r["label_set_round_1"]) == 2
    )
    (record,) = import_varierr(project, [line])
    item = variation_report(project)["items"][0]
    error = record["error_labels"][0][0]
    index = "enc".index(error)
    assert item["round_one"][index] > 0
    assert item["validated"][index] == 0
    assert sum(item["validated"]) == pytest.approx(1)


def test_the_reader_takes_a_fixed_number_of_queries(make_project, django_assert_num_queries):
    project = make_project("nli_label", slug="varierr-queries")
    import_varierr(project, varierr_lines(5))
    with django_assert_num_queries(1):
        assert len(explanations(project)) > 5
    import_varierr(project, varierr_lines(80)[5:])
    with django_assert_num_queries(1):
        assert len({e.item_key for e in explanations(project)}) == 80


def test_a_project_without_explanations_has_no_variation_tables(make_project):
    assert report_tables(make_project("nli_label", slug="plain")) == []


# ---------------------------------------------------------------- collected and validated


def explain(labels: dict) -> dict:
    return {
        "labels": {
            label: {"explanation": text, "premise_spans": spans, "hypothesis_spans": []}
            for label, (text, spans) in labels.items()
        },
        "idk": False,
    }


@pytest.fixture
def validated(make_project, import_rows, make_user):
    """One pair; the writer explains e and n; three validators judge e 2-1 "makes sense" and n 1-2."""
    project = make_project(
        "label_explanation", slug="explained", redundancy=2, max_annotations=2, verdict_rule="peer_majority"
    )
    import_rows(project, [{"id": "train", "premise": PREMISE, "hypothesis": HYPOTHESIS}])
    writer = make_user("writer", "worker")
    page = claim_page(project, writer)
    (claim,) = page.claims.all()
    answer = explain(
        {
            "e": ("Reading a newspaper on a train is what commuters do.", [[11, 20]]),
            "n": ("Nothing in the sentence says where the train is going.", [[52, 57]]),
        }
    )
    submit_page(page.pk, writer, {str(claim.item_id): {"value": answer}})
    send_to_validation(project)
    project.refresh_from_db()
    validation = update_project(project.validation_project, items_per_page=2, redundancy=3, max_annotations=3)
    for number, judgments in enumerate([{"e": True, "n": False}, {"e": True, "n": True}, {"e": False, "n": False}]):
        validator = make_user(f"validator{number}", "worker")
        page = claim_page(validation, validator)
        submit_page(
            page.pk,
            validator,
            {
                str(c.item_id): {"value": {"makes_sense": judgments[c.item.example.origin_target]}}
                for c in page.claims.select_related("item__example")
            },
        )
    # Closed: the writer can no longer self-check, so the peers' majority (the rule picked) decides.
    return update_project(project, status="closed"), writer


def test_collected_explanations_carry_their_validators_votes(validated, django_assert_num_queries):
    project, writer = validated
    with django_assert_num_queries(4):  # imported records, answers, validators' votes, self-judgments
        collected = {e.label: e for e in explanations(project)}
    assert set(collected) == {"e", "n"}
    assert collected["e"].author == f"worker:{writer.id}"
    assert sorted(collected["e"].peer_judgments) == [False, True, True]
    assert collected["e"].self_judgment is None
    assert collected["e"].premise_spans == ((11, 20),)
    assert list(label_verdicts(project).values()) == [{"e": "supported", "n": "error"}]


def test_the_report_page_shows_the_variation_of_a_validated_study(validated, author, django_assert_max_num_queries):
    project, _ = validated
    report = variation_report(project)
    (item,) = report["items"]
    assert item["round_one"] == pytest.approx((0.5, 0.5, 0.0))
    assert item["validated"] == pytest.approx((1.0, 0.0, 0.0))
    assert item["chaosnli"] is None
    assert report["study"]["error"] == 1 and report["study"]["variation"] == 0
    assert report["study"]["judgments"] == 6

    client = Client()
    client.force_login(author)
    page = client.get(f"/projects/{project.slug}/report/").content.decode()
    assert "Label variation: the study" in page
    assert "Items with a label judged an error" in page
    assert "0.50 / 0.50 / 0.00" in page and "1.00 / 0.00 / 0.00" in page


def test_imported_livenli_items_show_round_one_and_chaosnli_and_wait_for_judgments(make_project):
    project = make_project("label_explanation", slug="livenli-study")
    with open(SHARED_DATA / "livenli" / "livenli.csv", newline="") as table:
        import_stream(project, table, "livenli")
    report = variation_report(project)
    study = report["study"]
    assert (study["items"], study["explanations"]) == (122, 1653)
    assert study["lengths"]["explanations"] == 1405  # a row explaining two labels counts once
    assert (study["undecided"], study["error"], study["variation"], study["judgments"]) == (122, 0, 0, 0)
    assert sum(item["chaosnli"] is not None for item in report["items"]) == 50
    sultan = next(item for item in report["items"] if item["chaosnli"] == pytest.approx((0.14, 0.75, 0.11)))
    assert sum(sultan["round_one"]) == pytest.approx(1)
