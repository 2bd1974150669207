import csv
import io
import json

import pytest

from annotation.models import Annotation, Atom, Example, Item
from dataset_io.services.exporters import write_export
from dataset_io.services.importers import ImportFileError, import_file, import_stream

pytestmark = pytest.mark.django_db


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("split", ["dev", "test"])
def test_usnli_round_trip(shared_data, make_project, tmp_path, split):
    project = make_project("unli_slider")
    source = shared_data / "u-snli" / f"{split}.csv"
    report = import_file(project, source, "usnli")
    assert report.created == report.items == 3040
    out = tmp_path / "out.csv"
    write_export(project, "usnli", out)
    published = ("id", "pre", "hyp", "nli", "unli")
    assert [{name: row[name] for name in published} for row in read_csv(out)] == read_csv(source)
    assert {row["unli_source"] for row in read_csv(out)} == {"imported"}


def test_dnli_counts_from_the_paper(shared_data, make_project):
    project = make_project("defeasible_atom")
    report = import_file(project, shared_data / "defeasible-nli" / "defeasible-snli" / "test.jsonl", "dnli")
    assert (report.created, report.skipped, report.unique_hypotheses) == (1837, 135, 203)
    assert report.skipped_reasons == {"UpdateTypeImpossible": 135}
    again = import_file(project, shared_data / "defeasible-nli" / "defeasible-snli" / "test.jsonl", "dnli")
    assert again.created == 0 and again.already_present == 1837
    assert Example.objects.filter(project=project).count() == 1837


@pytest.mark.parametrize("name", ["chaosNLI_snli.jsonl", "chaosNLI_mnli_m.jsonl", "chaosNLI_alphanli.jsonl"])
def test_chaosnli_round_trip(shared_data, make_project, tmp_path, name):
    project = make_project("nli_label", redundancy=2)
    source = shared_data / "chaosnli" / name
    report = import_file(project, source, "chaosnli")
    originals = [json.loads(line) for line in source.open()]
    assert report.created == len(originals)
    assert report.annotations == 100 * len(originals)
    assert Annotation.objects.filter(item__project=project).count() <= 3 * len(originals)
    out = tmp_path / "out.jsonl"
    write_export(project, "chaosnli", out)
    exported = [json.loads(line) for line in out.open()]
    assert [row["uid"] for row in exported] == [row["uid"] for row in originals]
    for mine, theirs in zip(exported, originals):
        assert mine["label_counter"] == theirs["label_counter"]
        assert mine["label_count"] == theirs["label_count"]
        assert mine["label_dist"] == pytest.approx(theirs["label_dist"], abs=1e-12)
        assert mine["majority_label"] == theirs["majority_label"]
        assert mine["old_label"] == theirs["old_label"]
        assert mine.get("old_labels") == theirs.get("old_labels")
        assert mine["entropy"] == pytest.approx(theirs["entropy"], abs=1e-9)
        assert mine["example"] == theirs["example"]


def test_chaosnli_votes_settle_items(shared_data, make_project):
    project = make_project("nli_label")
    import_file(project, shared_data / "chaosnli" / "chaosNLI_snli.jsonl", "chaosnli")
    assert not Item.objects.filter(project=project, claimable=True).exists()
    ties = Item.objects.filter(project=project, status=Item.Status.ADJUDICATION).count()
    assert ties == 14  # items whose 100 votes tie: an author decides


def test_snli_both_forms(shared_data, make_project):
    project = make_project("nli_label")
    original = import_file(
        project, shared_data / "snli" / "partial_original_format" / "snli_1.0_dev.partial.jsonl", "snli"
    )
    assert original.created == 1289
    example = Example.objects.filter(project=project).first()
    assert example.source_id.endswith(("e", "n", "c")) and example.source_data["sentence1_parse"]
    assert example.items.get().annotations.filter(imported=True).exists()
    simple = make_project("nli_label", slug="simple")
    report = import_file(simple, shared_data / "snli" / "snli_dev_gold_only.jsonl", "snli")
    assert report.created == 9842


def test_atoms_attach_to_examples_and_make_items(make_project, import_rows):
    project = make_project("defeasible_atom")
    import_rows(
        project,
        [
            {"id": "a", "premise": "P1", "hypothesis": "H", "update": "U1", "label": "weakener"},
            {"id": "b", "premise": "P1", "hypothesis": "H", "update": "U2", "label": "strengthener"},
        ],
    )
    report = import_rows(
        project, [{"hypothesis": "H", "atoms": ["x", {"text": "y", "effect": -1, "validity": "valid"}]}], "atoms"
    )
    assert report.atoms == 4 and report.items == 4
    assert Atom.objects.get(example__key="id:a", text="y").effect == -1
    again = import_rows(project, [{"hypothesis": "H", "atoms": ["x", "y"]}], "atoms")
    assert again.atoms == 0 and Item.objects.filter(project=project).count() == 4


def test_generic_csv_with_mapping(make_project):
    project = make_project("nli_label")
    data = "pair,s1,s2,gold\n1,A dog runs.,An animal moves.,entailment\n2,A cat sleeps.,A cat runs.,contradiction\n"
    report = import_stream(
        project, io.StringIO(data), "csv", {"id": "pair", "premise": "s1", "hypothesis": "s2", "label": "gold"}
    )
    assert report.created == 2
    assert Example.objects.get(project=project, source_id="2").source_label == "c"  # through the vocabulary


BAD_FILES = [
    ("usnli", "id,pre,hyp,nli,unli\n1,P,H,0,0.5\n2,P,H,0,1.5\n", 3, "unli"),
    ("usnli", "id,pre,hyp,nli,unli\n1,P,H,7,0.5\n", 2, "nli"),
    ("usnli", "id,pre,hyp,nli\n1,P,H,0\n", 1, "unli"),
    ("usnli", "id,pre,hyp,nli,unli\n1,P,,0,0.5\n", 2, "hyp"),
    ("usnli", "id,pre,hyp,nli,unli\n1,P,H,0,0.5\n1,P,H2,0,0.5\n", 3, "id"),
    (
        "chaosnli",
        '{"uid": "u1", "label_counter": {"e": 3}, "example": {"premise": "P", "hypothesis": "H"}}\n{"uid": "u2", "label_counter": {"x": 3}, "example": {"premise": "P", "hypothesis": "H"}}\n',
        2,
        "label_counter.x",
    ),
    ("chaosnli", '{"uid": "u1", "label_counter": {"e": 3}, "example": {"premise": "P"}}\n', 1, "example.hypothesis"),
    (
        "dnli",
        '{"Premise": "P", "Hypothesis": "H", "Update": "U", "UpdateType": "weakener", "UpdateTypeImpossible": false}\n{"Premise": "P", "Hypothesis": "H", "Update": "U", "UpdateType": "sideways", "UpdateTypeImpossible": false}\n',
        2,
        "UpdateType",
    ),
    ("dnli", '{"Premise": "P", "Hypothesis": "H", "Update": "U", "UpdateType": "weakener"}\nnot json\n', 2, "(json)"),
    (
        "snli",
        '{"premise": "P", "hypothesis": "H", "label": "entailment"}\n{"premise": "P", "hypothesis": "H2", "label": "maybe"}\n',
        2,
        "label",
    ),
    (
        "snli",
        '{"sentence1": "P", "sentence2": "H", "gold_label": "neutral"}\n{"sentence1": "P", "gold_label": "neutral"}\n',
        2,
        "sentence2",
    ),
    ("jsonl", '{"premise": "P", "hypothesis": "H"}\n[1, 2]\n', 2, "(json)"),
    ("csv", "premise,hypothesis\nP,H\nP2,H2,extra\n", 3, "(csv)"),
]


@pytest.mark.parametrize("fmt, text, line, field", BAD_FILES)
def test_a_bad_row_names_line_and_field_and_imports_nothing(make_project, fmt, text, line, field):
    project = make_project({"chaosnli": "nli_label", "dnli": "defeasible_atom"}.get(fmt, "unli_slider"))
    with pytest.raises(ImportFileError) as error:
        import_stream(project, io.StringIO(text), fmt)
    assert (line, field) == error.value.errors[0][:2]
    assert f"line {line}, field {field!r}" in str(error.value)
    assert not Example.objects.exists() and not Item.objects.exists() and not Annotation.objects.exists()


def test_atoms_for_unknown_example_import_nothing(make_project, import_rows):
    project = make_project("atom_validity")
    import_rows(project, [{"id": "a", "premise": "P", "hypothesis": "H"}])
    with pytest.raises(ImportFileError) as error:
        import_rows(project, [{"example_id": "a", "atoms": ["x"]}, {"example_id": "zzz", "atoms": ["y"]}], "atoms")
    assert error.value.errors[0][:2] == (2, "example_id")
    assert not Atom.objects.exists()


def test_atoms_bad_effect_is_named(make_project, import_rows):
    project = make_project("atom_validity")
    import_rows(project, [{"id": "a", "premise": "P", "hypothesis": "H"}])
    with pytest.raises(ImportFileError) as error:
        import_rows(project, [{"example_id": "a", "atoms": ["x", {"text": "y", "effect": 5}]}], "atoms")
    assert error.value.errors[0][:2] == (1, "atoms[1].effect")
