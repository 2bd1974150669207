"""On PostgreSQL an import ends with ANALYZE of the tables it filled, so the first claims after it read
the claimable-items index instead of guessing from statistics of empty tables."""

import pytest
from django.db import connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def analyzed_rows(table: str) -> float:
    """What the planner believes the table holds (pg_class.reltuples; -1 before the first ANALYZE)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
        return cursor.fetchone()[0]


def test_an_import_leaves_the_planner_with_the_real_row_counts(make_project, import_rows):
    project = make_project("unli_slider")
    work_tables = ("annotation_claim", "annotation_assignment")
    before = [analyzed_rows(table) for table in work_tables]
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(300)])
    assert analyzed_rows("annotation_item") == 300
    assert analyzed_rows("annotation_example") == 300
    # Never "analysed empty" by an import: plans prepared for the first claims would keep scanning them.
    assert [analyzed_rows(table) for table in work_tables] == before
    with connection.cursor() as cursor:
        cursor.execute(
            "EXPLAIN SELECT id FROM annotation_item WHERE project_id = %s AND claimable ORDER BY priority, id LIMIT 1",
            [project.pk],
        )
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "item_claimable_idx" in plan, plan
