"""The dashboard's item search (annotation.services.items.search_items) and the trigram indexes that serve it on
PostgreSQL (migration 0008): the same items as the plain joined search on both databases, a case-insensitive
substring match in which % and _ are literal characters, and on PostgreSQL a plan that reads the indexes."""

from types import SimpleNamespace

import pytest
from django.db import connection, transaction
from django.db.migrations.loader import MigrationLoader
from django.db.models import Q

from annotation.models import Atom, Example, Item
from annotation.services.items import search_items

pytestmark = pytest.mark.django_db
BOTH_DATABASES = pytest.mark.parametrize("database", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
TRIGRAM_INDEXES = {
    "example_premise_trgm": "annotation_example",
    "example_hypothesis_trgm": "annotation_example",
    "atom_text_trgm": "annotation_atom",
}
SOURCE_ID_INDEX = "example_source_id_idx"
ROWS = {  # source id: premise, hypothesis, atom text (None: an item without an atom)
    "s1": ("A Dog runs in the park.", "An animal is outside.", None),
    "s2": ("A cat sleeps.", "The cat is awake.", "The cat has FUR."),
    "s3": ("It is 100% sure.", "snake_case names", None),
    "s4": ("It is 1000 sure.", "snakeXcase names", "Été à Paris"),
    "s42": ("Nothing here.", "Nothing there.", None),
}


@pytest.fixture
def project(make_project):
    project = make_project("nli_label")
    for position, (source_id, (premise, hypothesis, atom_text)) in enumerate(ROWS.items()):
        example = Example.objects.create(
            project=project,
            key=source_id,
            source_id=source_id,
            premise=premise,
            hypothesis=hypothesis,
            position=position,
        )
        atom = Atom.objects.create(example=example, text=atom_text) if atom_text else None
        Item.objects.create(project=project, example=example, atom=atom)
    # Another study with the same texts: a search never reaches into it.
    other = make_project("nli_label", slug="other")
    for source_id, (premise, hypothesis, atom_text) in ROWS.items():
        example = Example.objects.create(
            project=other, key=source_id, source_id=source_id, premise=premise, hypothesis=hypothesis
        )
        Item.objects.create(
            project=other,
            example=example,
            atom=Atom.objects.create(example=example, text=atom_text) if atom_text else None,
        )
    return project


def found(project, text: str, show: str = "") -> list[str]:
    return [item.example.source_id for item in search_items(project, text, show)]


def joined_search(project, text: str) -> list[str]:
    """The search as it was before migration 0008: one OR over the joined example and atom."""
    items = project.items.filter(
        Q(example__premise__icontains=text)
        | Q(example__hypothesis__icontains=text)
        | Q(atom__text__icontains=text)
        | Q(example__source_id=text)
    )
    return list(items.order_by("id").values_list("example__source_id", flat=True))


@BOTH_DATABASES
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("dog", ["s1"]),  # premise, any case
        ("  ANIMAL is ", ["s1"]),  # hypothesis, the search stripped
        ("fur", ["s2"]),  # atom text
        ("cat", ["s2"]),
        ("s42", ["s42"]),  # exact source id
        ("s4", ["s4"]),  # a source id matches whole, not as a prefix of s42
        ("0% s", ["s3"]),  # % is a character: "1000 sure" does not match
        ("%", ["s3"]),
        ("e_c", ["s3"]),  # _ is a character: "snakeXcase" does not match
        ("is", ["s1", "s2", "s3", "s4"]),
        ("nowhere", []),
    ],
)
def test_search_finds_case_insensitive_substrings_and_exact_source_ids(project, database, text, expected):
    assert found(project, text) == expected
    assert found(project, text) == joined_search(project, text.strip())


@BOTH_DATABASES
@pytest.mark.parametrize("text", ["été", "ÉTÉ", "paris", "\\", "'", "sure.", "a", "the cat"])
def test_search_finds_what_the_joined_search_found(project, database, text):
    # SQLite folds only ASCII letters and PostgreSQL all of them: each database keeps its own answer.
    assert found(project, text) == joined_search(project, text)


@BOTH_DATABASES
def test_search_keeps_the_filter(project, database):
    Item.objects.filter(project=project, example__source_id="s2").update(is_gold=True)
    assert found(project, "is", show="gold") == ["s2"]


def test_the_migration_runs_no_sql_outside_postgresql():
    migration = MigrationLoader(None, ignore_no_migrations=True).get_migration("annotation", "0008_item_text_search")
    executed = []
    editor = SimpleNamespace(connection=SimpleNamespace(vendor="sqlite", alias="default"), execute=executed.append)
    for operation in migration.operations:
        operation.database_forwards("annotation", editor, None, None)
    for operation in reversed(migration.operations):
        operation.database_backwards("annotation", editor, None, None)
    assert executed == []


# ---------------------------------------------------------------- PostgreSQL


def search_indexes() -> dict[str, str]:
    """Migration 0008's indexes that exist, with their definitions."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE indexname = ANY(%s)",
            [[*TRIGRAM_INDEXES, SOURCE_ID_INDEX]],
        )
        return dict(cursor.fetchall())


def trigram_installed() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm'")
        return cursor.fetchone() is not None


@pytest.mark.postgres
def test_the_migration_made_trigram_indexes_on_what_icontains_compares():
    assert trigram_installed()
    indexes = search_indexes()
    assert set(indexes) == {*TRIGRAM_INDEXES, SOURCE_ID_INDEX}
    for name, table in TRIGRAM_INDEXES.items():
        # Django's icontains compares UPPER(column): an index on the bare column would not be used.
        assert f"ON public.{table} USING gin (upper(" in indexes[name] and "gin_trgm_ops" in indexes[name]


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # VACUUM runs outside a transaction only
def test_the_search_reads_the_indexes(project):
    # Rows enough, with fresh statistics (VACUUM also empties the GIN indexes' pending lists), for the planner to
    # prefer the trigram indexes to reading the whole study through its project index; and no sequential
    # scans, which tables this small would still get.
    examples = Example.objects.bulk_create(
        Example(
            project=project,
            key=f"k{n}",
            source_id=f"k{n}",
            premise=f"Premise number {n}.",
            hypothesis=f"Hypothesis number {n}.",
        )
        for n in range(3000)
    )
    atoms = Atom.objects.bulk_create(Atom(example=example, text=f"Atom {example.key}") for example in examples)
    Item.objects.bulk_create(Item(project=project, example=atom.example, atom=atom) for atom in atoms)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE annotation_example, annotation_atom, annotation_item")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        plan = search_items(project, "1234").explain()
    for name in [*TRIGRAM_INDEXES, SOURCE_ID_INDEX]:
        assert name in plan, plan
    assert found(project, "1234") == ["k1234"]


@pytest.mark.postgres
def test_the_migration_is_reversible():
    migration = MigrationLoader(connection).get_migration("annotation", "0008_item_text_search")
    # In the test's transaction: PostgreSQL rolls the DDL back with it.
    with connection.schema_editor() as editor:
        for operation in reversed(migration.operations):
            operation.database_backwards("annotation", editor, None, None)
        assert search_indexes() == {} and not trigram_installed()
        for operation in migration.operations:
            operation.database_forwards("annotation", editor, None, None)
    assert len(search_indexes()) == 4 and trigram_installed()
