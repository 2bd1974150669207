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


def test_the_median_page_time_is_picked_by_the_database_in_two_queries(
    make_project, make_user, django_assert_num_queries
):
    from datetime import timedelta

    from django.contrib.auth.models import Group
    from django.utils import timezone

    from annotation.models import Assignment
    from annotation.services.crowd.pay import median_page_seconds
    from annotation.services.simulation import SIMULATED_GROUP

    study = make_project("nli_label", slug="timed")
    worker, simulated = make_user("timed-worker"), make_user("simulated-worker")
    simulated.groups.add(Group.objects.get_or_create(name=SIMULATED_GROUP)[0])
    for who, seconds in [(worker, 300), (worker, 40), (simulated, 1), (worker, 100), (worker, 60), (simulated, 2)]:
        page = Assignment.objects.create(project=study, worker=who, expires_at=timezone.now())
        Assignment.objects.filter(pk=page.pk).update(
            status=Assignment.Status.SUBMITTED, submitted_at=page.created_at + timedelta(seconds=seconds)
        )
    with django_assert_num_queries(2):
        median, timed = median_page_seconds(study)
    # An even count: the mean of the two middle pages (60 and 100), as statistics.median gives; simulated left out.
    assert timed == 4 and median == pytest.approx(80, abs=0.01)
