"""Import -> export -> import gives the same study: examples (texts, ids, labels, probabilities, the columns
their rows carried), items (atoms, coherence groups), imported votes and gold checks, for every format that
round-trips and every task type it fits; generated data (hypothesis) and every real file in ../shared/data.
Each export also validates against its format. And every format goes in and out through each entry, the
command line, the API and the page: a file the app exported (from the real files, the label-variation app's
three whole) is imported and exported again the same, and validated by the command line. On SQLite and on
PostgreSQL."""

import csv
import io
import json
from collections import Counter

import pytest
from django.core.management import call_command
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from annotation.models import Annotation, Project
from common.vocabulary import LONG_NAMES, snli_gold_label
from dataset_io.formats import FORMATS, ExportOptions
from dataset_io.formats.base import STUDIO_KEY
from dataset_io.services import exporters
from dataset_io.services.importers import import_file, import_stream
from dataset_io.services.validation import validate
from tests.conftest import LABEL_VARIATION, case
from tests.security.db import rolled_back

pytestmark = pytest.mark.django_db
BOTH_DATABASES = pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
EVERYTHING = ExportOptions(include_gold=True, include_unanswered=True)
EXAMPLES = settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


def study_state(project: Project):
    """What a round trip must keep, in the study's own order. A row without an id is known by the key the
    study gave it, which its export writes as its id."""
    examples = [
        (
            e.source_id or e.key,
            e.premise,
            e.hypothesis,
            e.update,
            e.update_type,
            e.source_label,
            e.source_probability,
            e.source_format,
            e.source_data,
        )
        for e in project.examples.order_by("position", "id")
    ]
    votes: dict[int, Counter] = {}
    for item_id, value, count in Annotation.objects.filter(item__project=project, imported=True).values_list(
        "item_id", "value", "count"
    ):
        votes.setdefault(item_id, Counter())[value] += count
    items = sorted(
        (
            item.example.source_id or item.example.key,
            item.atom.text if item.atom else "",
            (item.atom.order, item.atom.validity, item.atom.effect) if item.atom else None,
            item.is_gold,
            json.dumps(item.gold),
            item.coherence_group,
            sorted(votes.get(item.id, Counter()).items()),
        )
        for item in project.items.select_related("example", "atom")
    )
    return examples, items


def exported(project, fmt) -> str:
    text = "".join(exporters.export(project, fmt, EVERYTHING))
    report = validate(lambda: io.BytesIO(text.encode()), fmt)
    assert report.valid, report.as_dict(limit=5)
    return text


def assert_round_trip(project, fmt, make_project, slug="again"):
    text = exported(project, fmt)
    again = make_project(project.task_type, slug=slug, **{k: v for k, v in project.options.items() if k == "labels"})
    import_stream(again, io.StringIO(text), fmt)
    again.refresh_from_db()
    assert study_state(again) == study_state(project)
    exported(again, fmt)  # and the new study's export validates too
    return again


# ---------------------------------------------------------------- generated data

TEXT = st.text(alphabet=st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=30).filter(str.strip)
IDS = st.lists(st.text(alphabet="abcdefgh0123456789-", min_size=1, max_size=8), min_size=2, max_size=6, unique=True)
PROBABILITY = st.one_of(st.sampled_from(["0", "1", "0.0", "0.5", "1.0"]), st.floats(0, 1).map(lambda p: f"{p:.6g}"))
NLI_LABEL = st.sampled_from(["e", "n", "c", "entailment", "Neutral", "contradiction"])
EXTRA = st.dictionaries(st.sampled_from(["note", "source", "round", "genre"]), TEXT, max_size=2)


def csv_text(rows: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue()


def jsonl_text(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


@st.composite
def usnli_files(draw):
    ids = draw(IDS)
    extra = draw(st.sampled_from([[], ["source"], ["source", "round"]]))
    rows = [
        {
            "id": uid,
            "pre": draw(TEXT),
            "hyp": f"{draw(TEXT)} {uid}",
            "nli": draw(st.sampled_from("012")),
            "unli": draw(PROBABILITY),
            **{name: draw(TEXT) for name in extra},
        }
        for uid in ids
    ]
    gold = len(rows) // 2
    return [("data", csv_text(rows[gold:]))] + ([("gold", csv_text(rows[:gold]))] if gold else [])


@st.composite
def chaosnli_files(draw):
    rows = []
    for uid in draw(IDS):
        counter = draw(st.dictionaries(st.sampled_from("enc"), st.integers(1, 100), min_size=1, max_size=3))
        row = {
            "uid": uid,
            "label_counter": counter,
            "example": {"uid": uid, "premise": draw(TEXT), "hypothesis": f"{draw(TEXT)} {uid}", "source": "generated"},
        }
        if draw(st.booleans()):
            row["old_label"] = draw(st.sampled_from("enc"))
        if draw(st.booleans()):
            best = max(counter.values())
            row["majority_label"] = draw(st.sampled_from(sorted(k for k, v in counter.items() if v == best)))
        if draw(st.booleans()):
            row["old_labels"] = draw(st.lists(st.sampled_from(list(LONG_NAMES.values())), min_size=1, max_size=5))
        rows.append(row)
    gold = [dict(row, old_label=draw(st.sampled_from("enc"))) for row in rows[: len(rows) // 2]]
    return [("data", jsonl_text(rows[len(rows) // 2 :]))] + ([("gold", jsonl_text(gold))] if gold else [])


@st.composite
def snli_files(draw):
    rows = []
    for uid in draw(IDS):
        if draw(st.booleans()):
            votes = draw(st.lists(st.sampled_from(list(LONG_NAMES.values())), min_size=1, max_size=5))
            gold = LONG_NAMES.get(snli_gold_label([vote[0] for vote in votes]), "-")
            rows.append(
                {
                    "annotator_labels": votes,
                    "gold_label": gold,
                    "pairID": uid,
                    "sentence1": draw(TEXT),
                    "sentence2": f"{draw(TEXT)} {uid}",
                    "captionID": f"{uid}#0",
                    "sentence1_parse": "(ROOT)",
                }
            )
        else:
            rows.append(
                {
                    "premise": draw(TEXT),
                    "hypothesis": f"{draw(TEXT)} {uid}",
                    "label": draw(st.sampled_from(list(LONG_NAMES.values()))),
                }
            )
    gold = [
        {
            "premise": f"gold {row.get('premise', row.get('sentence1'))}",
            "hypothesis": "gold hypothesis",
            "label": draw(st.sampled_from(list(LONG_NAMES.values()))),
        }
        for row in rows[:1]
    ]
    return [("data", jsonl_text(rows)), ("gold", jsonl_text(gold))]


LONG = ("entailment", "neutral", "contradiction")
LIVENLI_ANSWER = {"e": "true", "n": "either", "c": "false"}


@st.composite
def varierr_files(draw):
    rows = []
    for uid in draw(IDS):
        lists = {
            name: [
                {
                    "annotator": draw(st.integers(0, 3)),
                    "id": f"{uid}-{name}-{number}",
                    "judgments": [
                        {"annotator": judge, "makes_sense": draw(st.booleans())}
                        for judge in draw(st.lists(st.integers(0, 3), max_size=4, unique=True))
                    ],
                    "label_correction": draw(st.booleans()),
                    "reason": draw(TEXT),
                    "self_corrected": draw(st.booleans()),
                }
                for number in range(1, draw(st.integers(0, 2)) + 1)
            ]
            for name in LONG
        }
        given = [name for name in LONG if lists[name]]
        errors = draw(st.lists(st.sampled_from(given), unique=True)) if given else []
        kept = [name for name in given if name not in errors]
        rows.append(
            {
                "id": uid,
                "context": draw(TEXT),
                "statement": f"{draw(TEXT)} {uid}",
                **lists,
                "idk": draw(st.lists(st.integers(0, 3), unique=True, max_size=2)),
                "label_count_round_1": {name: float(len(lists[name])) if lists[name] else None for name in LONG},
                "label_count_round_2": {name: 1.0 if name in kept else None for name in LONG},
                "label_set_round_1": given,
                "label_set_round_2": kept,
                "error_labels": errors,
                "has_ambiguity": len(kept) > 1,
                "chaosnli_labels": draw(st.dictionaries(st.sampled_from("enc"), st.integers(1, 100), max_size=3)),
            }
        )
    return [("data", jsonl_text(rows))]


@st.composite
def livenli_files(draw):
    import numpy

    rows = []
    for uid in draw(IDS):
        premise, hypothesis = draw(TEXT), f"{draw(TEXT)} {uid}"
        counts = draw(st.dictionaries(st.sampled_from("cen"), st.integers(1, 100), max_size=3))
        shared = {
            "uid": uid,
            "premise": premise,
            "hypothesis": hypothesis,
            "chaos_dist": str(counts) if counts else "",
            "mnli_labels": draw(st.sampled_from(["['neutral', 'entailment', 'neutral']", "contradiction"])),
            "taxonomy": draw(st.sampled_from(["prob", "coref,lexical", ""])),
        }
        own = []
        for number in range(draw(st.integers(1, 3))):
            labels = draw(st.lists(st.sampled_from("enc"), min_size=1, max_size=3, unique=True))
            start = draw(st.integers(0, len(premise) - 1))
            end = draw(st.integers(start + 1, len(premise)))
            highlight = {
                "entities": [{"endIndex": end, "startIndex": start, "text": premise[start:end], "type": "highlight"}],
                "relationships": [],
            }
            own.append(
                {
                    "worker_id": f"w{number}",
                    "multilabel": " | ".join(LIVENLI_ANSWER[label] for label in "enc" if label in labels),
                    "explanation": draw(TEXT),
                    "highlight_p": str(highlight),
                    "highlight_h": str({"entities": [], "relationships": []}),
                    "dist": [labels.count(label) / len(labels) for label in "enc"],
                    "within_label_variation": draw(st.sampled_from(["", "prob"])),
                }
            )
        mean = [sum(row["dist"][index] for row in own) / len(own) for index in range(3)]
        for row in own:
            rows.append(
                {
                    **shared,
                    **row,
                    "dist": str(numpy.array(row["dist"])),
                    "agg_dist": str(numpy.array(mean)),
                }
            )
    return [("data", csv_text(rows))]


@st.composite
def taxonomy_files(draw):
    tags = st.lists(
        st.sampled_from(["Lexical", "Probabilistic", "Interrogative.", "N/A"]), min_size=1, max_size=2, unique=True
    )
    rows = []
    for uid in draw(IDS):
        row = {"pairID": uid, "premise": draw(TEXT), "hypothesis": f"{draw(TEXT)} {uid}", "a1": draw(tags)}
        if draw(st.booleans()):
            row["a2"] = draw(tags)
            row["reconciliation"] = draw(st.one_of(st.none(), tags))
            both = [tag for tag in row["a1"] if tag in row["a2"]]
            row["agg"] = row["reconciliation"] if row["reconciliation"] is not None else both
        rows.append(row)
    return [("data", jsonl_text(rows))]


def atom_strategy(task_type):
    if task_type == "atom_validity":
        return st.fixed_dictionaries({"text": TEXT, "validity": st.sampled_from(["valid", "invalid", "unknown"])})
    return st.fixed_dictionaries({"text": TEXT, "effect": st.sampled_from([-2, -1, 0, 1, 2, None])})


@st.composite
def atoms_files(draw, task_type):
    labels = ["strengthener", "weakener"] + (["e", "n", "c"] if task_type == "atom_validity" else [])
    lines, gold = [], []
    for uid in draw(IDS):
        atoms = draw(st.lists(atom_strategy(task_type), min_size=1, max_size=3, unique_by=lambda a: a["text"].strip()))
        line = {
            "id": uid,
            "premise": draw(TEXT),
            "hypothesis": draw(TEXT),
            "update": draw(st.sampled_from(["", "U"])),
            "label": draw(st.sampled_from(labels)),
            "atoms": atoms,
            **draw(EXTRA),
        }
        lines.append(line)
        reference = {"validity": "valid"} if task_type == "atom_validity" else {"effect": 1}
        gold.append({"example_id": uid, "atoms": [{"text": f"gold atom {uid}", **reference}]})
    return [("data", jsonl_text(lines)), ("gold", jsonl_text(gold[:1]))]


@st.composite
def generic_files(draw, task_type):
    rows = []
    for uid in draw(st.one_of(IDS, st.lists(st.just(""), min_size=2, max_size=4))):
        row = {"premise": draw(TEXT), "hypothesis": draw(TEXT), **draw(EXTRA)}
        if uid:
            row["id"] = uid
        if draw(st.booleans()):
            row["group"] = draw(st.sampled_from(["g1", "g2"]))
        if task_type == "nli_label" and draw(st.booleans()):
            row["label"] = draw(NLI_LABEL)
        if task_type == "unli_slider":
            row["label"] = draw(st.sampled_from(["e", "n", "c"]))
            row["probability"] = draw(PROBABILITY)
        if task_type in ("atom_validity", "defeasible_atom"):
            row["update"] = draw(TEXT)
            row["label"] = draw(st.sampled_from(["strengthener", "weakener"]))
        rows.append(row)
    files = [("data", jsonl_text(rows))]
    if task_type in ("nli_label", "unli_slider"):
        reference = {"label": "e"} if task_type == "nli_label" else {"probability": "0.25"}
        files.append(("gold", jsonl_text([{"id": "gold-1", "premise": "gold P", "hypothesis": "gold H", **reference}])))
    if task_type in ("atom_validity", "defeasible_atom"):
        atoms = [
            {
                "example_id": row["id"],
                "atoms": [
                    a["text"]
                    for a in draw(
                        st.lists(
                            atom_strategy(task_type), min_size=1, max_size=2, unique_by=lambda a: a["text"].strip()
                        )
                    )
                ],
            }
            for row in rows
            if "id" in row
        ]
        if not atoms:  # rows without ids: atoms by hypothesis text
            atoms = [{"hypothesis": row["hypothesis"], "atoms": [f"atom of {row['hypothesis']}"]} for row in rows]
        files.append(("data-atoms", jsonl_text(atoms)))
    return files


CASES = {
    ("usnli", "unli_slider"): usnli_files(),
    ("chaosnli", "nli_label"): chaosnli_files(),
    ("snli", "nli_label"): snli_files(),
    ("varierr", "nli_label"): varierr_files(),
    ("livenli", "nli_label"): livenli_files(),
    ("taxonomy", "nli_label"): taxonomy_files(),
    ("atoms", "atom_validity"): atoms_files("atom_validity"),
    ("atoms", "defeasible_atom"): atoms_files("defeasible_atom"),
    **{
        ("jsonl", task_type): generic_files(task_type)
        for task_type in ("nli_label", "unli_slider", "atom_validity", "defeasible_atom", "hypothesis_writing")
    },
}


def test_every_format_that_round_trips_is_covered():
    absent = LABEL_VARIATION - FORMATS.keys()  # the app's formats, where it is not installed
    covered = {fmt for fmt, _ in CASES}
    assert covered - absent == {name for name, fmt in FORMATS.items() if fmt.round_trips}


@BOTH_DATABASES
@pytest.mark.parametrize("fmt, task_type", [case(*values) for values in CASES])
def test_generated_studies_round_trip(make_project, database, fmt, task_type):
    @EXAMPLES
    @given(CASES[fmt, task_type])
    def run(files):
        with rolled_back():
            project = make_project(task_type, slug="first")
            for purpose, text in files:
                file_format = "atoms" if purpose == "data-atoms" else fmt
                import_stream(project, io.StringIO(text), file_format, purpose="gold" if purpose == "gold" else "data")
            project.refresh_from_db()
            assert_round_trip(project, fmt, make_project)

    run()


# ---------------------------------------------------------------- the real files


# (file, the format it is imported in, the format exported and imported again, task type). delta-NLI files
# export as what their study collects (dnli is a writing study's export), so they travel in the complete jsonl
# and atoms exports.
REAL = [
    ("u-snli/dev.csv", "usnli", "usnli", "unli_slider"),
    ("u-snli/test.csv", "usnli", "usnli", "unli_slider"),
    ("u-snli/dev.csv", "usnli", "jsonl", "nli_label"),
    ("chaosnli/chaosNLI_snli.jsonl", "chaosnli", "chaosnli", "nli_label"),
    ("chaosnli/chaosNLI_mnli_m.jsonl", "chaosnli", "chaosnli", "nli_label"),
    ("chaosnli/chaosNLI_alphanli.jsonl", "chaosnli", "chaosnli", "nli_label"),
    ("chaosnli/chaosNLI_mnli_m.jsonl", "chaosnli", "jsonl", "nli_label"),
    ("snli/snli_dev_gold_only.jsonl", "snli", "snli", "nli_label"),
    ("snli/partial_original_format/snli_1.0_dev.partial.jsonl", "snli", "snli", "nli_label"),
    ("snli/partial_original_format/snli_1.0_test.partial.jsonl", "snli", "snli", "nli_label"),
    ("defeasible-nli/defeasible-snli/test.jsonl", "dnli", "jsonl", "defeasible_atom"),
    ("defeasible-nli/defeasible-snli/dev.jsonl", "dnli", "atoms", "atom_validity"),
    ("defeasible-nli/defeasible-atomic/dev.jsonl", "dnli", "jsonl", "hypothesis_writing"),
]


@BOTH_DATABASES
@pytest.mark.parametrize("path, import_format, fmt, task_type", REAL)
def test_real_files_round_trip(shared_data, make_project, database, path, import_format, fmt, task_type):
    project = make_project(task_type, slug="first")
    import_file(project, shared_data / path, import_format)
    if project.task.per_atom:  # atoms of every example, so that each has an item to export
        lines = [
            {"example_id": e.key, "atoms": [f"{e.hypothesis} (atom)", "Something happens."]}
            for e in project.examples.all()
        ]
        import_stream(project, io.StringIO(jsonl_text(lines)), "atoms")
    project.refresh_from_db()
    again = assert_round_trip(project, fmt, make_project)
    assert again.examples.count() == project.examples.count() > 700


# ---------------------------------------------------------------- through every entry: the command, the API, the page

VARIERR = "varierr/varierr.json"
LIVENLI = "livenli/livenli.csv"
TAXONOMY = (
    "nli-disagreement-taxonomy/taxonomy_round1_release.jsonl",
    "nli-disagreement-taxonomy/taxonomy_round2_release.jsonl",
)
ENTRIES = ("command", "api", "page")
# format -> (the task type of its studies, the real files its first study imports, with their format). The
# core formats' studies import the first SLICE records of a real file (each was round-tripped whole above); the
# label-variation app's, its three real files whole.
SLICE = 200
THROUGH_ENTRIES = {
    "usnli": ("unli_slider", [("u-snli/dev.csv", "usnli")]),
    "chaosnli": ("nli_label", [("chaosnli/chaosNLI_mnli_m.jsonl", "chaosnli")]),
    "snli": ("nli_label", [("snli/partial_original_format/snli_1.0_dev.partial.jsonl", "snli")]),
    "atoms": ("atom_validity", [("defeasible-nli/defeasible-snli/dev.jsonl", "dnli")]),
    "jsonl": ("nli_label", [("u-snli/dev.csv", "usnli")]),
    "csv": ("nli_label", [("u-snli/dev.csv", "usnli")]),
    "varierr": ("nli_label", [(VARIERR, "varierr")]),
    "livenli": ("label_explanation", [(LIVENLI, "livenli")]),
    "taxonomy": ("nli_label", [(path, "taxonomy") for path in TAXONOMY]),
}
EVERYTHING_PARAMS = {"include_gold": "1", "include_unanswered": "1"}


def test_every_format_is_covered_through_every_entry():
    absent = LABEL_VARIATION - FORMATS.keys()  # the app's formats, where it is not installed
    assert (THROUGH_ENTRIES.keys() | {"dnli", "annotations"}) - absent == FORMATS.keys()


def sliced(path, tmp_path, records: int):
    """The file's header (CSV) and its first `records` lines."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    head = 1 if path.suffix == ".csv" else 0
    out = tmp_path / f"slice-{path.name}"
    out.write_text("".join(lines[: head + records]), encoding="utf-8")
    return out


def first_study(fmt, shared_data, tmp_path, make_project):
    task_type, files = THROUGH_ENTRIES[fmt]
    project = make_project(task_type, slug="first")
    for path, import_format in files:
        whole = import_format in LABEL_VARIATION
        import_file(
            project, shared_data / path if whole else sliced(shared_data / path, tmp_path, SLICE), import_format
        )
    if project.task.per_atom:
        lines = [{"example_id": e.key, "atoms": [f"{e.hypothesis} (atom)"]} for e in project.examples.all()]
        import_stream(project, io.StringIO(jsonl_text(lines)), "atoms")
    project.refresh_from_db()
    return project


def import_through(entry, project, path, fmt, author):
    if entry == "command":
        call_command("import_items", project.slug, str(path), "--format", fmt, "--json", stdout=io.StringIO())
    elif entry == "api":
        api = APIClient()
        api.force_login(author)
        with open(path, "rb") as upload:
            answer = api.post(
                f"/api/v1/projects/{project.slug}/import/", {"format": fmt, "file": upload}, format="multipart"
            )
        assert answer.status_code == 200, answer.json()
    else:
        client = Client()
        client.force_login(author)
        with open(path, "rb") as upload:
            staged = client.post(f"/projects/{project.slug}/import/", {"format": fmt, "file": upload})
        assert staged.status_code == 302 and "/import/" in staged["Location"], staged
        done = client.post(staged["Location"], {"format": fmt, "purpose": "data", "confirm": "1"})
        assert done.status_code == 302, done.content.decode()[-2000:]


def export_through(entry, project, fmt, author, tmp_path) -> str:
    if entry == "command":
        out = tmp_path / f"export.{fmt}"
        flags = ["--include-gold", "--include-unanswered"]
        call_command(
            "export_dataset", project.slug, "--format", fmt, "--output", str(out), *flags, stdout=io.StringIO()
        )
        said = io.StringIO()  # and the command line validates it
        call_command("validate_dataset", str(out), "--format", fmt, "--json", stdout=said)
        assert json.loads(said.getvalue())["valid"] is True
        return out.read_text(encoding="utf-8")
    client = APIClient() if entry == "api" else Client()
    client.force_login(author)
    where = f"/api/v1/projects/{project.slug}/export/" if entry == "api" else f"/projects/{project.slug}/export/{fmt}/"
    answer = client.get(where, {**EVERYTHING_PARAMS, **({"as": fmt} if entry == "api" else {})})
    assert answer.status_code == 200
    return b"".join(answer.streaming_content).decode()


def numbered_items(text: str, fmt: str) -> list:
    """An export's records (JSON Lines: as text, keys in their order; CSV: cells), the study's item ids numbered
    in order of appearance: what two studies holding the same rows write differently."""
    numbers: dict[str, int] = {}
    if FORMATS[fmt].extension == "csv":
        header, *rows = csv.reader(io.StringIO(text))
        at = header.index("item")
        return [header] + [[*row[:at], numbers.setdefault(row[at], len(numbers)), *row[at + 1 :]] for row in rows]

    def renumber(value):  # an atom's item is named in the atom's own STUDIO_KEY object
        if isinstance(value, dict):
            if "item" in value.get(STUDIO_KEY, {}):
                value[STUDIO_KEY]["item"] = numbers.setdefault(str(value[STUDIO_KEY]["item"]), len(numbers))
            for inner in value.values():
                renumber(inner)
        elif isinstance(value, list):
            for inner in value:
                renumber(inner)
        return value

    return [json.dumps(renumber(json.loads(line)), ensure_ascii=False) for line in text.splitlines()]


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize("fmt", [case(fmt) for fmt in THROUGH_ENTRIES])
def test_every_format_imports_and_exports_the_same_through_every_entry(
    shared_data, make_project, author, tmp_path, entry, fmt
):
    text = exported(first_study(fmt, shared_data, tmp_path, make_project), fmt)
    path = tmp_path / f"exported.{FORMATS[fmt].extension}"
    path.write_text(text, encoding="utf-8")
    again = make_project(THROUGH_ENTRIES[fmt][0], slug="again")
    import_through(entry, again, path, fmt, author)
    assert numbered_items(export_through(entry, again, fmt, author, tmp_path), fmt) == numbered_items(text, fmt)


@pytest.mark.parametrize("entry", ENTRIES)
def test_the_one_way_formats_through_every_entry(shared_data, make_project, author, tmp_path, entry):
    """delta-NLI is imported but exported only by writing studies, as what their workers wrote: its real file
    imports through every entry as through the importer. The annotations file is only exported."""
    path = sliced(shared_data / "defeasible-nli/defeasible-snli/dev.jsonl", tmp_path, SLICE)
    direct = make_project("defeasible_atom", slug="direct")
    import_file(direct, path, "dnli")
    through = make_project("defeasible_atom", slug="through")
    import_through(entry, through, path, "dnli", author)
    assert study_state(through) == study_state(direct) and direct.examples.count() > SLICE * 0.9

    voted = first_study("chaosnli", shared_data, tmp_path, make_project)
    assert export_through(entry, voted, "annotations", author, tmp_path) == exported(voted, "annotations") != ""
