"""The dashboard at size (issue 54, item 4): as many queries on a large study as on a small one, the
adjudication queue counted from its own partial index rather than from every item of the study, and the
median page time read from the latest submitted pages alone."""

from datetime import timedelta
from decimal import Decimal

import pytest
from django.contrib.auth.models import Group
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotation.models import Assignment, Item
from annotation.services.analysis import adjudication
from annotation.services.crowd import pay
from annotation.services.simulation import SIMULATED_GROUP
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


def submitted_pages(study, worker, seconds: list[int]):
    """One submitted page of `worker` per entry of `seconds`, taking that long, claimed ten minutes apart in
    this order (so submitted in this order too)."""
    base = timezone.now() - timedelta(days=1)
    for rank, spent in enumerate(seconds):
        page = Assignment.objects.create(project=study, worker=worker, expires_at=base)
        claimed = base + timedelta(minutes=10 * rank)
        Assignment.objects.filter(pk=page.pk).update(
            status=Assignment.Status.SUBMITTED, created_at=claimed, submitted_at=claimed + timedelta(seconds=spent)
        )


def test_the_median_page_time_is_read_in_one_query(make_project, make_user, django_assert_num_queries):
    study = make_project("nli_label", slug="timed")
    worker, simulated = make_user("timed-worker"), make_user("simulated-worker")
    simulated.groups.add(Group.objects.get_or_create(name=SIMULATED_GROUP)[0])
    submitted_pages(study, worker, [300, 40])
    submitted_pages(study, simulated, [1, 2])
    submitted_pages(study, worker, [100, 60])
    with django_assert_num_queries(1):
        median, timed = pay.median_page_seconds(study)
    # An even count: the mean of the two middle pages (60 and 100), as statistics.median gives; simulated left out.
    assert timed == 4 and median == pytest.approx(80, abs=0.01)


def test_on_a_study_past_the_window_the_median_is_that_of_the_latest_pages(make_project, make_user, monkeypatch):
    monkeypatch.setattr(pay, "TIMED_PAGES", 5)
    study = make_project("nli_label", slug="long-study")
    worker = make_user("long-worker")
    # Slow first pages, quicker ones since: the whole study's median would be 200 s, the latest five's is 50 s.
    submitted_pages(study, worker, [200, 200, 200, 200, 200, 200, 30, 40, 50, 60, 70])
    median, timed = pay.median_page_seconds(study)
    assert timed == 5 and median == pytest.approx(50, abs=0.01)
    # The reward follows: 50 s a page, one page, 1 minute at £9.00 an hour.
    suggestion = pay.suggest_reward(study, "9", "GBP")
    assert (suggestion.pages_timed, suggestion.minutes, suggestion.reward) == (5, 1, Decimal("0.15"))


@pytest.mark.postgres
def test_the_median_page_time_reads_the_submitted_pages_index(make_project, make_user):
    if connection.vendor != "postgresql":
        pytest.skip("run with DATABASE_URL=postgres://...: the plan is PostgreSQL's")
    study = make_project("nli_label", slug="indexed")
    submitted_pages(study, make_user("indexed-worker"), [30, 40, 50])
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a few rows: make the planner show its index
        with CaptureQueriesContext(connection) as queries:
            assert pay.median_page_seconds(study) == (40, 3)
        cursor.execute(f"EXPLAIN {queries[0]['sql']}")
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "assignment_submitted_idx" in plan, plan
