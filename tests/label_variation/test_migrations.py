"""The label-variation app took its two models from the annotation app in Django's state only (annotation 0014,
label_variation 0001): migrating back past the move and forward again over a database holding data of every
task type keeps every row, and every migration of the project runs backwards over those rows and forwards
again, on SQLite and on PostgreSQL (the PostgreSQL pass of make test runs it there)."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.models import Example, Item, Project
from annotation.tasktypes import TASK_TYPES
from dataset_io.demo import load_demo
from label_variation.models import ReasonTag, SelfJudgment

BEFORE_THE_MOVE = [("annotation", "0013_crowd_account_linked_studies"), ("label_variation", None)]
PROJECT_APPS = ("annotation", "label_variation", "jobs", "recruitment", "evaluation", "models_backend")


def row_counts() -> dict[str, int]:
    """Rows of every table but Django's record of applied migrations."""
    with connection.cursor() as cursor:
        counts = {}
        for table in connection.introspection.table_names(cursor):
            if table == "django_migrations":
                continue
            cursor.execute(f"SELECT COUNT(*) FROM {connection.ops.quote_name(table)}")
            counts[table] = cursor.fetchone()[0]
    return counts


def migrate(targets) -> None:
    MigrationExecutor(connection).migrate(targets)


def migrate_to_the_latest() -> None:
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
def test_migrations_run_back_and_forth_over_the_demo_keeping_every_row_across_the_move():
    load_demo(simulate=True)
    assert set(Project.objects.values_list("task_type", flat=True)) == set(TASK_TYPES)  # every task type's demo
    item = Item.objects.filter(is_gold=False).first()
    writer = get_user_model().objects.get(username="worker1")
    ReasonTag.objects.create(item=item, tagger=writer, role=ReasonTag.Role.WORKER, reasons=["lexical"], note="n")
    SelfJudgment.objects.create(example=Example.objects.first(), worker=writer, makes_sense=True)
    before = row_counts()
    assert before["annotation_reasontag"] >= 1 and before["annotation_selfjudgment"] >= 1

    migrate(BEFORE_THE_MOVE)
    try:
        applied = MigrationExecutor(connection).loader.applied_migrations
        assert ("label_variation", "0001_initial") not in applied
        assert ("annotation", "0014_move_label_variation_models") not in applied
        assert row_counts() == before  # the move changed Django's state only: no table dropped or emptied
    finally:
        migrate_to_the_latest()
    assert row_counts() == before
    tag = ReasonTag.objects.get(item=item)
    assert (tag.tagger, tag.reasons, tag.note) == (writer, ["lexical"], "n")
    assert SelfJudgment.objects.get(worker=writer).makes_sense is True

    tables = set(connection.introspection.table_names())
    migrate([(app, None) for app in PROJECT_APPS])  # every migration undone, newest first, over the demo's rows
    try:
        left = set(connection.introspection.table_names())
        assert not {table for table in left if table.startswith(PROJECT_APPS)}
    finally:
        migrate_to_the_latest()
    assert set(connection.introspection.table_names()) == tables
    load_demo(simulate=True)  # the schema made again takes the demo again
