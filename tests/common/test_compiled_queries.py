"""common/compiled_queries.py: a statement compiled once answers every later call like its queryset."""

from datetime import datetime

import pytest
from django.db import transaction
from django.db.models import Count
from django.db.transaction import TransactionManagementError
from django.utils import timezone

from annotation.models import Annotation, Item
from common import compiled_queries
from common.compiled_queries import compiled_first, compiled_rows

pytestmark = pytest.mark.django_db


def items_with_example(*, project_id: int, premise: str):
    return (
        Item.objects.select_related("example")
        .filter(project=project_id, example__premise=premise)
        .annotate(claims_seen=Count("claims"))
        .order_by("id")
    )


def first_items(limit: int, *, project_id: int):
    return Item.objects.filter(project=project_id).order_by("id")[:limit]


def locked_items(*, project_id: int):
    return Item.objects.select_for_update().filter(project=project_id)


@pytest.fixture
def two_projects(make_project, import_rows):
    projects = [make_project("nli_label", slug=f"compiled-{n}") for n in (1, 2)]
    for project in projects:
        import_rows(project, [{"id": str(i), "premise": f"P{i % 2}", "hypothesis": f"H{i}"} for i in range(5)])
    return projects


def test_each_call_answers_like_the_queryset_with_its_own_arguments(two_projects):
    for project in two_projects:
        for premise in ("P0", "P1", "nothing"):
            expected = list(items_with_example(project_id=project.pk, premise=premise))
            rows = compiled_rows(items_with_example, project_id=project.pk, premise=premise)
            assert [row.pk for row in rows] == [row.pk for row in expected]
            # select_related and annotations come back as Django's own iteration gives them
            assert [(row.example.premise, row.example.hypothesis, row.claims_seen) for row in rows] == [
                (row.example.premise, row.example.hypothesis, row.claims_seen) for row in expected
            ]


def annotations_of(*, item_id: int):
    return Annotation.objects.filter(item=item_id).order_by("id")


def test_values_come_back_converted_as_from_the_queryset(two_projects, make_user):
    """JSON and datetime columns need the database's converters (SQLite stores both as text)."""
    item = two_projects[0].items.first()
    for number, value in enumerate(({"label": "e", "weights": [0.5, None]}, 0.25, "n")):
        Annotation.objects.create(
            item=item,
            worker=make_user(f"converted-{number}"),
            raw={"value": value},
            value=value,
            started_at=timezone.now(),
        )
    for _ in range(2):  # compiled on the first call, replayed on the second
        rows = compiled_rows(annotations_of, item_id=item.pk)
        expected = list(annotations_of(item_id=item.pk))
        assert [(row.raw, row.value, row.started_at, row.submitted_at) for row in rows] == [
            (row.raw, row.value, row.started_at, row.submitted_at) for row in expected
        ]
        assert isinstance(rows[0].submitted_at, datetime) and rows[0].value == {"label": "e", "weights": [0.5, None]}


def test_the_shape_is_part_of_the_statement(two_projects):
    project = two_projects[0]
    assert len(compiled_rows(first_items, 2, project_id=project.pk)) == 2
    assert len(compiled_rows(first_items, 4, project_id=project.pk)) == 4
    assert compiled_first(first_items, 1, project_id=-1) is None


def test_an_id_beyond_a_64_bit_column_matches_nothing(two_projects):
    assert compiled_rows(first_items, 3, project_id=2**64) == []


@pytest.mark.django_db(transaction=True)  # outside the test's own transaction
def test_locking_statements_need_a_transaction(two_projects):
    project = two_projects[0]
    with transaction.atomic():
        assert len(compiled_rows(locked_items, project_id=project.pk)) == 5
    with pytest.raises(TransactionManagementError):
        compiled_rows(locked_items, project_id=project.pk)


def test_arguments_that_are_not_plain_parameters_are_refused(two_projects, monkeypatch):
    monkeypatch.setattr(compiled_queries, "_statements", {})

    def unused_argument(*, project_id: int, premise: str):
        return Item.objects.filter(project=project_id)

    with pytest.raises(ValueError, match="'premise' is not a plain query parameter"):
        compiled_rows(unused_argument, project_id=1, premise="P0")
    with pytest.raises(TypeError, match="must be an int or a str"):
        compiled_rows(first_items, 1, project_id=True)


@pytest.mark.postgres
def test_on_postgresql_each_statement_is_answered_like_its_queryset_and_kept_prepared(two_projects):
    from django.db import connection

    test_each_call_answers_like_the_queryset_with_its_own_arguments(two_projects)
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cursor.fetchall()]
    assert any('"annotation_example"."premise" = $' in statement for statement in prepared), prepared


def stored(model, pk) -> dict:
    return model.objects.filter(pk=pk).values().get()


def test_insert_rows_stores_what_bulk_create_stores(two_projects, make_user):
    from annotation.models import Annotation, Assignment
    from common.compiled_queries import insert_rows

    item = two_projects[0].items.first()
    by_django, by_insert = make_user("by-django"), make_user("by-insert")
    pages = {}
    for worker in (by_django, by_insert):
        page = Assignment(project=two_projects[0], worker=worker, expires_at="2030-01-01T00:00:00Z")
        insert_rows([page], returning_pk=True)
        assert page.pk is not None and not page._state.adding
        pages[worker] = page
    answers = {
        worker: [
            Annotation(
                item=item,
                worker=worker,
                assignment=pages[worker],
                raw={"label": "e", "n": [1, None]},
                value="e",
                seconds_spent=None,
                reason="why",
            )
        ]
        for worker in (by_django, by_insert)
    }
    Annotation.objects.bulk_create(answers[by_django])
    insert_rows(answers[by_insert])
    django_row, inserted_row = (
        Annotation.objects.filter(worker=worker).values().get() for worker in (by_django, by_insert)
    )
    assert inserted_row["submitted_at"] is not None  # auto_now_add, as bulk_create sets it
    different = {"id", "worker_id", "assignment_id", "submitted_at"}
    assert {k: v for k, v in inserted_row.items() if k not in different} == {
        k: v for k, v in django_row.items() if k not in different
    }
    assert stored(Assignment, pages[by_insert].pk)["status"] == "open"


def test_update_row_writes_what_a_queryset_update_writes(two_projects):
    from common.compiled_queries import update_row

    first, second = two_projects[0].items.order_by("id")[:2]
    for item, aggregate in ((first, {"e": 0.5, "n": None}), (second, None)):
        item.status, item.aggregate, item.claimable, item.priority = "done", aggregate, False, 0.25
        assert update_row(item, ["status", "aggregate", "claimable", "priority"]) == 1
    assert Item.objects.filter(pk=first.pk, aggregate={"e": 0.5, "n": None}, status="done", claimable=False).exists()
    # None is SQL NULL (as Django stores it), not JSON null
    assert Item.objects.filter(pk=second.pk, aggregate__isnull=True, priority=0.25).exists()
    untouched = two_projects[0].items.order_by("id")[2]
    assert stored(Item, untouched.pk)["status"] == "open"


@pytest.mark.postgres
def test_on_postgresql_the_writes_store_what_django_stores(two_projects, make_user):
    test_insert_rows_stores_what_bulk_create_stores(two_projects, make_user)
    test_update_row_writes_what_a_queryset_update_writes(two_projects)


@pytest.mark.postgres
def test_on_postgresql_values_come_back_converted_as_from_the_queryset(two_projects, make_user):
    test_values_come_back_converted_as_from_the_queryset(two_projects, make_user)


def test_writes_sent_together_store_what_each_stores_alone(two_projects, make_user):
    """write_together: one statement on PostgreSQL (its parts as data-modifying WITH queries), one after another
    on SQLite; the rows are those insert_rows and update_row store."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.models import Assignment, Claim
    from common.compiled_queries import insert_rows, inserting, updating, write_together

    worker = make_user("together")
    first, second = two_projects[0].items.order_by("id")[:2]
    page = Assignment(project=two_projects[0], worker=worker, expires_at="2030-01-01T00:00:00Z")
    insert_rows([page], returning_pk=True)
    claims = [Claim(assignment=page, item=item, worker=worker, position=n) for n, item in enumerate((first, second))]
    for item in (first, second):
        item.active_claims, item.claimable = 1, False
    page.status = "submitted"
    writes = [inserting(claims), *(updating(item, ["active_claims", "claimable"]) for item in (first, second))]
    with CaptureQueriesContext(connection) as sent:
        write_together([*writes, updating(page, ["status"])])
    assert len(sent.captured_queries) == (1 if connection.vendor == "postgresql" else 4)
    assert all(not claim._state.adding for claim in claims)
    assert sorted(Claim.objects.filter(assignment=page).values_list("item_id", "position")) == [
        (first.pk, 0),
        (second.pk, 1),
    ]
    assert Item.objects.filter(pk__in=[first.pk, second.pk], active_claims=1, claimable=False).count() == 2
    assert stored(Assignment, page.pk)["status"] == "submitted"
    assert stored(Item, two_projects[0].items.order_by("id")[2].pk)["active_claims"] == 0  # untouched


def test_a_failing_part_fails_the_whole_write(two_projects, make_user):
    """A part that breaks a constraint (a second claim of one item by one worker) leaves nothing written."""
    from django.db import IntegrityError

    from annotation.models import Assignment, Claim
    from common.compiled_queries import insert_rows, inserting, updating, write_together

    worker = make_user("twice")
    item = two_projects[0].items.order_by("id").first()
    page = Assignment(project=two_projects[0], worker=worker, expires_at="2030-01-01T00:00:00Z")
    insert_rows([page], returning_pk=True)
    insert_rows([Claim(assignment=page, item=item, worker=worker, position=0)])
    item.active_claims = 5
    with pytest.raises(IntegrityError), transaction.atomic():
        write_together(
            [
                updating(item, ["active_claims"]),
                inserting([Claim(assignment=page, item=item, worker=worker, position=1)]),
            ]
        )
    assert stored(Item, item.pk)["active_claims"] == 0
    assert Claim.objects.filter(assignment=page).count() == 1


def test_a_write_that_returns_rows_is_not_sent_with_others(two_projects, make_user):
    from django.db import NotSupportedError

    from annotation.models import Assignment
    from common.compiled_queries import inserting, updating, write_together

    item = two_projects[0].items.first()
    page = Assignment(project=two_projects[0], worker=make_user("returning"), expires_at="2030-01-01T00:00:00Z")
    with pytest.raises(NotSupportedError, match="none returning rows"):
        write_together([inserting([page], returning_pk=True), updating(item, ["status"])])


def test_a_row_is_not_updated_twice_in_one_statement(two_projects):
    from django.db import NotSupportedError

    from common.compiled_queries import updating, write_together

    item = two_projects[0].items.first()
    with pytest.raises(NotSupportedError, match="updated twice"):
        write_together([updating(item, ["status"]), updating(item, ["priority"])])
