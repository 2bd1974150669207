"""A taxonomy file re-imported keeps every round (issue 53, item 4): an export carries the rounds tagged in
its study under nli_studio (round, reasons, worker_tags), and importing it keeps them, so the new study reads,
reports and exports round 1 and round 2 alike, from the real TACL 2022 files and from a study's own export.
A carried round that breaks the release's rules is refused with its line and field, storing nothing."""

import io
import json

import pytest

from dataset_io.formats import ExportOptions
from dataset_io.formats.base import STUDIO_KEY
from dataset_io.services import exporters
from dataset_io.services.importers import ImportFileError, import_file, import_stream
from dataset_io.services.validation import validate
from label_variation.services import reasons

pytestmark = pytest.mark.django_db
EVERYTHING = ExportOptions(include_gold=True, include_unanswered=True)
RELEASES = (
    "nli-disagreement-taxonomy/taxonomy_round1_release.jsonl",
    "nli-disagreement-taxonomy/taxonomy_round2_release.jsonl",
)


def exported(project) -> list[dict]:
    text = "".join(exporters.export(project, "taxonomy", EVERYTHING))
    report = validate(lambda: io.BytesIO(text.encode()), "taxonomy")
    assert report.valid, report.as_dict(limit=5)
    return [json.loads(line) for line in text.splitlines()]


def imported_again(records: list[dict], make_project, slug: str):
    project = make_project("nli_label", slug=slug)
    import_stream(project, io.StringIO("".join(json.dumps(record) + "\n" for record in records)), "taxonomy")
    return project


def without_ids(records: list[dict]) -> list[dict]:
    """The records without what names the study's own rows (its item ids)."""
    return [{**record, STUDIO_KEY: {k: v for k, v in record[STUDIO_KEY].items() if k != "item"}} for record in records]


def rounds_of(project) -> dict[str, dict[int, frozenset | None]]:
    """{premise: {round: its result}} as the study's reasons report reads them."""
    return {
        entry.premise: {number: tags.final for number, tags in entry.rounds.items()}
        for entry in reasons.tagged_items(project)
    }


def test_the_real_files_tagged_again_in_the_study_come_back_with_every_round(shared_data, make_project, author):
    project = make_project("nli_label", slug="taxonomy-rounds")
    for path in RELEASES:
        import_file(project, shared_data / path, "taxonomy")
    round_one_row = project.items.filter(example__source_data__has_key="a2").order_by("id").first()
    released_first = project.items.exclude(example__source_data__has_key="a2").order_by("id").first()
    # A release row of round 1 gets a round 2 here; one of round 2 gets its round 1 tagged again.
    reasons.tag_item(released_first, author, ["Lexical", "Probabilistic"], round_number=2)
    reasons.tag_item(round_one_row, author, ["Coreference"], round_number=1)
    first = exported(project)
    assert len(first) == 510
    again = imported_again(first, make_project, "taxonomy-rounds-again")
    assert again.items.count() == 510
    assert without_ids(exported(again)) == without_ids(first)  # every record, every round, identical
    rounds = rounds_of(again)
    assert rounds == rounds_of(project)
    assert rounds[released_first.example.premise] == {
        1: frozenset(released_first.example.source_data["a1"]),
        2: frozenset({"Lexical", "Probabilistic"}),
    }
    assert sorted(rounds[round_one_row.example.premise]) == [1, 2]
    assert rounds[round_one_row.example.premise][1] == frozenset({"Coreference"})


def test_a_studys_own_export_reimported_keeps_round_one(make_project, import_rows, author, make_user):
    project = make_project("nli_label", slug="tagged-here")
    import_rows(project, [{"id": f"p{n}", "premise": f"Premise {n}", "hypothesis": f"Hypothesis {n}"} for n in (1, 2)])
    one, two = project.items.order_by("id")
    second_tagger = make_user("second", "admin")
    reasons.tag_item(one, author, ["Lexical", "Probabilistic"], round_number=1)
    reasons.tag_item(one, author, ["Lexical"], round_number=2)
    reasons.tag_item(one, second_tagger, ["Lexical", "Temporal"], round_number=2)
    reasons.tag_item(two, author, ["Coreference"], round_number=1)
    first = exported(project)
    assert first[0][STUDIO_KEY]["reasons"]["1"] == {"a1": ["Lexical", "Probabilistic"]}
    again = imported_again(first, make_project, "tagged-here-again")
    rounds = rounds_of(again)
    assert rounds == rounds_of(project)
    assert rounds["Premise 1"] == {1: frozenset({"Lexical", "Probabilistic"}), 2: frozenset({"Lexical"})}
    assert without_ids(exported(again)) == without_ids(first)
    # The report counts each round of the re-imported study as the first study's report did.
    before, after = reasons.reasons_report(project), reasons.reasons_report(again)
    assert after["rounds"] == before["rounds"] and [r["round"] for r in after["rounds"]] == [1, 2]
    assert [(r["tag"], r["items"]) for r in after["reasons"]] == [(r["tag"], r["items"]) for r in before["reasons"]]


@pytest.mark.parametrize(
    "carried, field, message",
    [
        ({"reasons": {"2": {"a1": ["Lexical"], "a2": ["Lexical"]}}}, "nli_studio.reasons[2].reconciliation", "lacks"),
        (
            {"reasons": {"2": {"a1": ["Lexical"], "a2": ["Temporal"], "reconciliation": None, "agg": ["Lexical"]}}},
            "nli_studio.reasons[2].agg",
            "the tags in both a1 and a2",
        ),
        ({"reasons": {"7": {"a1": ["Lexical"]}}}, "nli_studio.reasons", ""),
        ({"reasons": {"1": {"a1": "Lexical"}}}, "nli_studio.reasons[1].a1", ""),
        ({"round": 0}, "nli_studio.round", ""),
    ],
)
def test_a_carried_round_that_breaks_the_rules_is_refused_with_its_line(make_project, carried, field, message):
    project = make_project("nli_label", slug="bad-rounds")
    good = {"pairID": "1e", "premise": "A premise.", "hypothesis": "A hypothesis.", "a1": ["Lexical"]}
    text = json.dumps(good) + "\n" + json.dumps({**good, "pairID": "2e", STUDIO_KEY: carried}) + "\n"
    with pytest.raises(ImportFileError) as refused:
        import_stream(project, io.StringIO(text), "taxonomy")
    assert [(line, name) for line, name, _ in refused.value.errors] == [(2, field)]
    assert message in refused.value.errors[0][2]
    assert not project.examples.exists()
