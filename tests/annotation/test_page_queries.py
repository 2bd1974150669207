"""Hot pages read a bounded number of rows' worth of queries however large the study (issue 54, item 4;
benchmarks/pages.py measures them at 1,000,000 answers)."""

import pytest
from django.utils import timezone

from annotation.models import Annotation, Assignment

pytestmark = pytest.mark.django_db


def answered_by(project, make_user, count: int, prefix: str):
    """`count` workers, each with one submitted page answering the study's first item."""
    item = project.items.order_by("id").first()
    workers = [make_user(f"{prefix}{index:02d}") for index in range(count)]
    for worker in workers:
        page = Assignment.objects.create(
            project=project, worker=worker, status=Assignment.Status.SUBMITTED, expires_at=timezone.now()
        )
        Annotation.objects.create(item=item, worker=worker, assignment=page, raw={"position": 1}, value=0.5)
    return workers


def test_the_worker_table_pages_workers_by_name_in_a_fixed_number_of_queries(
    client, make_project, import_rows, make_user, django_assert_max_num_queries
):
    project = make_project("unli_slider", slug="crowded")
    import_rows(project, [{"id": "1", "premise": "P", "hypothesis": "H"}])
    client.force_login(project.owner)
    url = f"/projects/{project.slug}/workers/"
    answered_by(project, make_user, 3, "early")
    with django_assert_max_num_queries(30) as few:
        client.get(url)
    answered_by(project, make_user, 30, "late")
    with django_assert_max_num_queries(len(few)):
        first = client.get(url).content.decode()
    # 33 workers by name, 25 a page: early00..02 and late00..21 first, the rest on page 2.
    assert "early00" in first and "late21" in first and "late22" not in first
    second = client.get(url, {"workers_page": 2}).content.decode()
    assert "late22" in second and "late29" in second and "early00" not in second


def test_only_a_study_with_simulated_answers_is_marked_as_having_them(make_project, import_rows, make_user):
    from annotation.services import simulation

    real, demo = make_project("unli_slider", slug="real"), make_project("unli_slider", slug="demo")
    for study in (real, demo):
        import_rows(study, [{"id": str(n), "premise": f"P{n}", "hypothesis": f"H{n}"} for n in range(3)])
    answered_by(real, make_user, 2, "person")
    assert not simulation.has_simulated_answers(demo)  # no simulated account yet
    assert simulation.simulate(demo, list(demo.items.all()), seed=0) > 0
    assert simulation.has_simulated_answers(demo) and not simulation.has_simulated_answers(real)
