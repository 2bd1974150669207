"""The agreement API serves the report job's cached figures (issue 54, item 4): 200 with when and from which
answers they were computed while current, 202 with the job's URL and the last figures while a computation is on
its way, and one job however many first requests arrive."""

from rest_framework.test import APIClient

from annotation.models import Annotation
from annotation.services.analysis import report_job
from jobs.models import Job
from tests.annotation.test_report_job import report_jobs, slider_study
from tests.conftest import IMMEDIATE_TASKS


def api_for(user):
    client = APIClient()
    client.force_login(user)
    return client


def test_current_figures_come_from_the_job_and_a_change_answers_202_with_the_last_ones(
    settings, make_project, import_rows, make_user
):
    project, _ = slider_study(make_project, import_rows, make_user, items=8)
    api = api_for(project.owner)
    url = f"/api/v1/projects/{project.slug}/agreement/"

    background, settings.TASKS = settings.TASKS, IMMEDIATE_TASKS  # the first request's job runs in that request
    first = api.get(url)
    job = report_jobs(project).get()
    assert first.status_code == 200 and first.data["status"] == "current"
    assert first.data["job"].endswith(f"/jobs/{job.pk}/") and first.data["computed_from"].startswith("16 answers")
    assert first.data["computed_at"] == job.finished_at
    assert first.data["figures"]["n_annotations"] == 16 and first.data["figures"]["level"] == "interval"
    assert first.data["figures"]["bootstrap"]["resamples"] == report_job.REPORT_BOOTSTRAP

    assert api.get(url).status_code == 200 and report_jobs(project).count() == 1  # read, not computed again

    # A new answer: with the jobs in the background, a computation is queued and the last figures served.
    settings.TASKS = background
    Annotation.objects.create(item=project.items.first(), worker=make_user("late"), raw={"position": 1}, value=0.4)
    stale = api.get(url)
    queued = report_jobs(project).get(status=Job.Status.QUEUED)
    assert stale.status_code == 202 and stale.data["status"] == "computing"
    assert stale.data["job"].endswith(f"/jobs/{queued.pk}/") and queued.params["version"].startswith("17 answers")
    assert stale.data["figures"]["n_annotations"] == 16 and stale.data["computed_from"].startswith("16 answers")
    again = api.get(url)  # asked again while it is queued: no second job
    assert again.status_code == 202 and again.data["job"] == stale.data["job"] and report_jobs(project).count() == 2


def test_the_first_request_before_any_computation_answers_202_without_figures(make_project, import_rows, make_user):
    project, _ = slider_study(make_project, import_rows, make_user, items=3)
    response = api_for(project.owner).get(f"/api/v1/projects/{project.slug}/agreement/")
    assert response.status_code == 202 and response.data["figures"] is None and response.data["computed_at"] is None
    assert report_jobs(project).filter(status=Job.Status.QUEUED).count() == 1


def test_of_two_requests_that_both_started_a_job_the_later_one_is_cancelled(
    make_project, import_rows, make_user, monkeypatch
):
    project, _ = slider_study(make_project, import_rows, make_user, items=3)
    api = api_for(project.owner)
    version = report_job.answers_version(project)
    # The other request's job, started after this one looked and found nothing on its way.
    earlier = report_job._start(project, project.owner, version)
    monkeypatch.setattr(report_job, "latest", lambda project: report_job.CachedReport(None, None, None))
    response = api.get(f"/api/v1/projects/{project.slug}/agreement/")
    later = report_jobs(project).exclude(pk=earlier.pk).get()
    assert response.status_code == 202 and response.data["job"].endswith(f"/jobs/{earlier.pk}/")
    assert later.status == Job.Status.CANCELLED and earlier.status == Job.Status.QUEUED


def test_a_failed_computation_is_named_and_not_started_again(
    settings, make_project, import_rows, make_user, monkeypatch
):
    project, _ = slider_study(make_project, import_rows, make_user, items=3)
    settings.TASKS = IMMEDIATE_TASKS

    def broken(*args, **kwargs):
        raise ValueError("the figures broke")

    monkeypatch.setattr("annotation.services.analysis.agreement.report_figures", broken)
    api = api_for(project.owner)
    for _ in range(2):
        response = api.get(f"/api/v1/projects/{project.slug}/agreement/")
        assert response.status_code == 200 and response.data["status"] == "failed"
    failed = report_jobs(project).get()
    assert failed.status == Job.Status.FAILED and response.data["job"].endswith(f"/jobs/{failed.pk}/")


def test_reading_current_figures_takes_the_same_queries_on_more_items(
    settings, make_project, import_rows, make_user, django_assert_max_num_queries
):
    settings.TASKS = IMMEDIATE_TASKS
    small, _ = slider_study(make_project, import_rows, make_user, items=8, slug="small")
    large, _ = slider_study(make_project, import_rows, make_user, items=60, slug="large")
    api = api_for(small.owner)
    large.owner = small.owner
    large.save(update_fields=["owner"])
    for project in (small, large):
        api.get(f"/api/v1/projects/{project.slug}/agreement/")  # computes
        with django_assert_max_num_queries(20) as queries:
            assert api.get(f"/api/v1/projects/{project.slug}/agreement/").status_code == 200
        counted = len(queries)
    with django_assert_max_num_queries(counted):
        api.get(f"/api/v1/projects/{small.slug}/agreement/")
