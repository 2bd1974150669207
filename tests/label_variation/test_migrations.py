"""The label-variation app took its two models from the annotation app in Django's state only (annotation 0014,
label_variation 0001): migrating back past the move and forward again over a database holding data of every
task type keeps every row, on SQLite and on PostgreSQL (the PostgreSQL pass of make test runs it there)."""

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from annotation.demo import load_demo
from annotation.models import Example, Item, Project
from annotation.tasktypes import TASK_TYPES
from label_variation.models import ReasonTag, SelfJudgment

BEFORE_THE_MOVE = [("annotation", "0013_crowd_account_linked_studies"), ("label_variation", None)]


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
    executor = MigrationExecutor(connection)
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_migrating_back_past_the_move_and_forward_again_keeps_every_row():
    load_demo(simulate=True)
    item = Item.objects.filter(is_gold=False).first()
    writer = get_user_model().objects.get(username="worker1")
    ReasonTag.objects.create(item=item, tagger=writer, role=ReasonTag.Role.WORKER, reasons=["lexical"], note="n")
    SelfJudgment.objects.create(example=Example.objects.first(), worker=writer, makes_sense=True)
    assert set(Project.objects.values_list("task_type", flat=True)) == set(TASK_TYPES)  # every task type's demo
    before = row_counts()
    assert before["annotation_reasontag"] >= 1 and before["annotation_selfjudgment"] >= 1

    migrate(BEFORE_THE_MOVE)
    try:
        applied = MigrationExecutor(connection).loader.applied_migrations
        assert ("label_variation", "0001_initial") not in applied
        assert ("annotation", "0014_move_label_variation_models") not in applied
        assert row_counts() == before  # the move changed Django's state only: no table dropped or emptied
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())

    assert row_counts() == before
    tag = ReasonTag.objects.get(item=item)
    assert (tag.tagger, tag.reasons, tag.note) == (writer, ["lexical"], "n")
    assert SelfJudgment.objects.get(worker=writer).makes_sense is True


PROJECT_APPS = ("annotation", "label_variation", "jobs", "recruitment", "evaluation", "models_backend")


@pytest.mark.django_db(transaction=True)
def test_every_migration_of_the_project_runs_backwards_over_data_and_forwards_again():
    load_demo(simulate=True)
    tables = set(connection.introspection.table_names())
    migrate([(app, None) for app in PROJECT_APPS])  # every migration undone, newest first, over the demo's rows
    try:
        left = set(connection.introspection.table_names())
        assert not {table for table in left if table.startswith(PROJECT_APPS)}
    finally:
        migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
    assert set(connection.introspection.table_names()) == tables
    load_demo(simulate=True)  # the schema made again takes the demo again
