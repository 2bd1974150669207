"""The report's heavy figures come from a background job kept until the answers change (issue 54, item 4),
and each figure says its sample size, what it means and when it is too small to trust (item 5)."""

import pytest

from annotation.models import Annotation
from annotation.services.analysis import report_job
from jobs.models import Job
from tests.annotation.test_annotator_models import varierr_project  # noqa: F401  a fixture
from tests.conftest import IMMEDIATE_TASKS


@pytest.fixture(autouse=True)
def _jobs_run_where_started(settings):
    settings.TASKS = IMMEDIATE_TASKS


def slider_study(make_project, import_rows, make_user, items: int, slug: str = "sized"):
    """`items` items, each answered by the same two workers, who mostly agree."""
    project = make_project("unli_slider", slug=slug)
    import_rows(project, [{"id": str(i), "premise": f"P{i}", "hypothesis": f"H{i}"} for i in range(items)])
    workers = [make_user(f"{slug}-w{n}") for n in range(2)]
    Annotation.objects.bulk_create(
        Annotation(item=item, worker=worker, raw={"position": 0}, value=(index % 10) / 10 + 0.05 * number)
        for index, item in enumerate(project.items.order_by("id"))
        for number, worker in enumerate(workers)
    )
    return project, workers


@pytest.fixture
def study(make_project, import_rows, make_user):
    return slider_study(make_project, import_rows, make_user, items=8)


def report_jobs(project):
    return Job.objects.filter(project=project, kind=report_job.KIND)


def check(client, project, shown):
    return client.get(
        f"/projects/{project.slug}/report/status/", {"shown": shown.pk, "check": 1}, HTTP_HX_REQUEST="true"
    )


def test_the_page_computes_once_and_reads_the_job_until_the_answers_change(client, study, make_user, monkeypatch):
    project, _ = study
    client.force_login(project.owner)
    url = f"/projects/{project.slug}/report/"
    first = client.get(url).content.decode()
    job = report_jobs(project).get()
    assert 'id="computed-at"' in first and "16 answers" in first and 'id="report-current"' in first

    # Read again: no new job, nothing heavy computed in the request, and the page asks to be checked once loaded.
    def refuse(*args, **kwargs):
        raise AssertionError("the page computed the figures itself")

    monkeypatch.setattr("annotation.services.analysis.agreement.report_figures", refuse)
    again = client.get(url).content.decode()
    assert report_jobs(project).count() == 1 and f"status/?shown={job.pk}&amp;check=1" in again
    checked = check(client, project, job)
    assert 'id="report-current"' in checked.content.decode() and "HX-Refresh" not in checked
    monkeypatch.undo()

    # A new answer changes the version: the check computes again, from 17 answers, and reloads the page.
    item = project.items.order_by("id").first()
    Annotation.objects.create(item=item, worker=make_user("late-worker"), raw={"position": 1}, value=0.4)
    assert "16 answers" in client.get(url).content.decode()  # the page itself reads no answers
    assert check(client, project, job)["HX-Refresh"] == "true" and report_jobs(project).count() == 2
    assert "17 answers" in client.get(url).content.decode()


def test_a_left_out_answer_or_an_adjudication_changes_the_version(study, author):
    project, (first, _) = study
    before = report_job.answers_version(project)
    Annotation.objects.filter(worker=first).update(excluded=True)
    excluded = report_job.answers_version(project)
    assert excluded != before and "8 left out" in excluded
    from annotation.models import AdjudicationRecord

    AdjudicationRecord.objects.create(item=project.items.first(), author=author, before=None, after=0.5)
    assert report_job.answers_version(project) != excluded


def test_while_a_job_runs_the_page_shows_the_last_figures_and_polls(client, study):
    project, _ = study
    client.force_login(project.owner)
    url = f"/projects/{project.slug}/report/"
    client.get(url)  # computed once
    shown = report_jobs(project).get()
    Annotation.objects.filter(item=project.items.first()).first().delete()
    running = Job.objects.create(
        kind=report_job.KIND, project=project, status=Job.Status.RUNNING, params={"version": "?", "bootstrap": 0}
    )
    page = client.get(url).content.decode()
    # The old figures, said to be out of date, a poll of the status fragment, and no second job.
    assert 'id="report-pending"' in page and "The answers changed since" in page and "16 answers" in page
    assert f"status/?shown={shown.pk}" in page and 'hx-trigger="every 2s"' in page
    assert check(client, project, shown).status_code == 200 and report_jobs(project).count() == 2

    poll = client.get(f"/projects/{project.slug}/report/status/", {"shown": shown.pk}, HTTP_HX_REQUEST="true")
    assert poll.status_code == 200 and "HX-Refresh" not in poll and 'id="report-pending"' in poll.content.decode()
    running.status, running.result = Job.Status.DONE, shown.result
    running.save(update_fields=["status", "result"])
    done = client.get(f"/projects/{project.slug}/report/status/", {"shown": shown.pk}, HTTP_HX_REQUEST="true")
    assert done["HX-Refresh"] == "true"


def test_a_failed_computation_is_shown_and_not_repeated_until_asked(client, study, monkeypatch):
    project, _ = study
    client.force_login(project.owner)
    url = f"/projects/{project.slug}/report/"

    def broken(*args, **kwargs):
        raise ValueError("the figures broke")

    monkeypatch.setattr("annotation.services.analysis.agreement.report_figures", broken)
    page = client.get(url).content.decode()
    assert 'id="report-failed"' in page and "the figures broke" in page and 'id="report-refresh"' in page
    client.get(url)
    failed = report_jobs(project).get()  # the same answers: not started again by itself
    client.get(f"/projects/{project.slug}/report/status/", {"check": 1})
    assert report_jobs(project).count() == 1 and failed.status == Job.Status.FAILED

    monkeypatch.undo()
    assert client.get(f"/projects/{project.slug}/report/refresh/").status_code == 405
    response = client.post(f"/projects/{project.slug}/report/refresh/")
    assert response.status_code == 302 and response["Location"] == url
    assert report_jobs(project).count() == 2
    assert 'id="computed-at"' in client.get(url).content.decode()


def test_only_the_studys_authors_refresh_or_poll(client, study, make_user):
    project, _ = study
    for name, role, expected in (("a-worker", "worker", 403), ("another-author", "author", 404)):
        client.force_login(make_user(name, role))
        assert client.post(f"/projects/{project.slug}/report/refresh/").status_code == expected
        assert client.get(f"/projects/{project.slug}/report/status/").status_code == expected
    assert not report_jobs(project).exists()


def test_reading_a_computed_report_takes_a_bounded_number_of_queries(
    client, make_project, import_rows, make_user, django_assert_max_num_queries
):
    small, _ = slider_study(make_project, import_rows, make_user, items=8, slug="small")
    large, _ = slider_study(make_project, import_rows, make_user, items=60, slug="large")
    client.force_login(small.owner)
    for project in (small, large):
        client.get(f"/projects/{project.slug}/report/")  # computes
        with django_assert_max_num_queries(20) as queries:
            client.get(f"/projects/{project.slug}/report/")
        counted = len(queries)
    # As many queries on 60 items as on 8: nothing is read per item or per answer.
    with django_assert_max_num_queries(counted):
        client.get(f"/projects/{small.slug}/report/")


def test_each_figure_says_its_sample_its_reading_and_warns_below_the_documented_size(
    client, study, make_project, import_rows, make_user
):
    project, _ = study
    client.force_login(project.owner)
    small = client.get(f"/projects/{project.slug}/report/").content.decode()
    assert "n = 8 items with two or more annotations" in small
    assert "1: perfect agreement, 0: chance" in small and "Krippendorff" in small
    assert small.count('class="message warning figure-warning"') >= 2 and "Only 8 items" in small

    large, _ = slider_study(make_project, import_rows, make_user, items=30, slug="thirty")
    page = client.get(f"/projects/{large.slug}/report/").content.decode()
    assert "n = 30 items with two or more annotations" in page and "figure-warning" not in page


def test_the_job_result_holds_json_only_and_no_per_item_labels(varierr_project):  # noqa: F811
    from annotation.services.analysis.report_job import refresh

    project, _ = varierr_project
    job = refresh(project, project.owner)
    assert job.status == Job.Status.DONE, job.error
    assert set(job.result) == {"version", "figures", "plots", "models"}
    assert "items" not in job.result["models"] and len(job.result["models"]["workers"]) == 5


def test_a_study_keeps_its_last_computations_only(study):
    project, _ = study
    for _ in range(report_job.KEPT_JOBS + 2):
        report_job.refresh(project, project.owner)
    kept = report_jobs(project)
    assert kept.count() == report_job.KEPT_JOBS and all(job.status == Job.Status.DONE for job in kept)
