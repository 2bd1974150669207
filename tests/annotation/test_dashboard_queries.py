"""The dashboard at size (issue 54, item 4): as many queries on a large study as on a small one, and the
adjudication queue counted from its own partial index rather than from every item of the study."""

import pytest
from django.db import connection

from annotation.models import Item
from annotation.services.analysis import adjudication
from tests.annotation.test_report_job import slider_study


def waiting_for_an_author(project, ties: int, flagged: int):
    ids = list(project.items.order_by("id").values_list("id", flat=True))
    Item.objects.filter(id__in=ids[:ties]).update(status=Item.Status.ADJUDICATION)
    Item.objects.filter(id__in=ids[ties : ties + flagged]).update(flagged=True)


def test_the_dashboard_takes_as_many_queries_on_60_items_as_on_8_and_counts_the_queue(
    client, make_project, import_rows, make_user, django_assert_max_num_queries
):
    small, _ = slider_study(make_project, import_rows, make_user, items=8, slug="small")
    large, _ = slider_study(make_project, import_rows, make_user, items=60, slug="large")
    large.owner = small.owner
    large.save(update_fields=["owner"])
    waiting_for_an_author(small, ties=1, flagged=1)
    waiting_for_an_author(large, ties=7, flagged=5)
    client.force_login(small.owner)
    client.get(f"/projects/{small.slug}/")  # warm: the session, the compiled templates
    with django_assert_max_num_queries(40) as queries:
        response = client.get(f"/projects/{large.slug}/")
    counted = len(queries)
    assert response.context["queue_size"] == 12 and response.context["progress"]["adjudication"] == 7
    with django_assert_max_num_queries(counted):
        assert client.get(f"/projects/{small.slug}/").context["queue_size"] == 2


@pytest.mark.postgres
def test_the_queue_count_can_read_its_partial_index(make_project, import_rows, make_user):
    if connection.vendor != "postgresql":
        pytest.skip("run with DATABASE_URL=postgres://...: the plan is PostgreSQL's")
    project, _ = slider_study(make_project, import_rows, make_user, items=30)
    waiting_for_an_author(project, ties=2, flagged=1)
    sql, params = adjudication.queue(project).order_by().values("id").query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a 30-item table: make the planner show its index
        cursor.execute(f"EXPLAIN SELECT COUNT(*) FROM ({sql}) AS queue", params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "item_adjudication_queue_idx" in plan, plan
    assert adjudication.queue(project).count() == 3
