"""Jobs live in the database and the queue only carries them, in-process: what start_job refuses, cancel on every
state, the look for lost messages, the limit a job runs under, and what a finished job's result may show.
tests/faults/test_durable_jobs.py runs the same against real workers, Redis restarts and a frozen bucket."""

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from jobs import durability, running, services, tasks, workers
from jobs.kinds import HOUR, KINDS, JobError, JobKind, Stopped, register, time_limit_of
from jobs.models import Job

pytestmark = pytest.mark.django_db


@pytest.fixture
def sleepy_kind():
    """A kind that reports a step every 50 ms for `steps` steps."""

    def run(job, progress):
        steps = job.params.get("steps", 10)
        for done in range(1, steps + 1):
            time.sleep(0.05)
            progress(done, steps)
        return {"steps": steps, "written": str(running.scratch_folder(job) / "out.txt")}

    register(JobKind("sleepy-test", "Sleepy", run, group="data", time_limit=1))
    yield "sleepy-test"
    KINDS.pop("sleepy-test")


@pytest.mark.parametrize(
    ("asked", "named"),
    [
        ({"queue": "cpu"}, "no queue 'cpu'; the queues are default, gpu"),
        ({"time_limit": 0.5}, "time_limit: a time limit is 1 to 604800 seconds"),
        ({"time_limit": 8 * 24 * HOUR}, "time_limit: a time limit is 1 to 604800 seconds"),
    ],
)
def test_a_bad_queue_or_time_limit_is_named_and_nothing_is_stored(author, asked, named):
    with pytest.raises(JobError, match=named):
        services.start_job("export", {}, author, **asked)
    assert not Job.objects.exists()


def test_a_kinds_limit_comes_from_jobs_time_limits_when_set_and_a_bad_one_is_named(settings, author):
    assert time_limit_of("train_unli") == 48 * HOUR  # the kind's own
    settings.JOB_TIME_LIMITS = {"train_unli": 90}
    assert time_limit_of("train_unli") == 90
    settings.JOB_TIME_LIMITS = {"export": 10 * 24 * HOUR}
    with pytest.raises(JobError, match="JOB_TIME_LIMITS export: a time limit is 1 to 604800 seconds"):
        services.start_job("export", {}, author)
    assert not Job.objects.exists()


def test_an_unreachable_queue_leaves_the_job_queued_to_be_sent_again(monkeypatch, author):
    def refuse(job):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379")

    monkeypatch.setattr(tasks, "send", refuse)
    job = services.start_job("export", {}, author)
    assert job.status == Job.Status.QUEUED and job.message_id == "" and job.time_limit == 4 * HOUR
    assert "unreachable (ConnectionError): it will be sent again" in job.log


def test_a_queued_job_is_cancelled_at_once_and_never_runs(monkeypatch, author):
    monkeypatch.setattr(tasks, "send", lambda job: "message-1")
    job = services.start_job("export", {}, author)
    assert job.message_id == "message-1"

    cancelled = services.cancel(job)

    assert cancelled.status == Job.Status.CANCELLED and cancelled.finished_at is not None
    ran = running.execute(job.pk)  # its message delivered after all
    assert ran.status == Job.Status.CANCELLED and ran.attempts == 0 and ran.started_at is None


def test_lost_messages_are_sent_again_once_per_interval_whoever_looks(monkeypatch, settings, author):
    settings.JOB_REQUEUE_AFTER_SECONDS = 15
    sent, waiting = [], {"kept"}
    monkeypatch.setattr(tasks, "send", lambda job: sent.append(job.pk) or f"new-{job.pk}")
    monkeypatch.setattr(tasks, "message_waiting", lambda message_id: message_id in waiting)
    long_ago = timezone.now() - timedelta(seconds=60)
    lost = Job.objects.create(kind="export", message_id="gone", message_seen_at=long_ago)
    kept = Job.objects.create(kind="export", message_id="kept", message_seen_at=long_ago)
    never_sent = Job.objects.create(kind="export")
    Job.objects.filter(pk=never_sent.pk).update(created_at=long_ago)
    fresh = Job.objects.create(kind="export", message_id="gone", message_seen_at=timezone.now())
    running_job = Job.objects.create(kind="export", status=Job.Status.RUNNING, message_id="gone")

    assert durability.requeue_lost() == 2
    assert durability.requeue_lost() == 0  # looked at now: not again before the interval has passed

    assert sorted(sent) == sorted([lost.pk, never_sent.pk])
    lost.refresh_from_db()
    assert lost.message_id == f"new-{lost.pk}" and "no longer in queue default: sent again" in lost.log
    kept.refresh_from_db()
    assert kept.message_id == "kept" and kept.message_seen_at > long_ago  # found waiting: noted, not sent
    fresh.refresh_from_db()
    running_job.refresh_from_db()
    assert fresh.message_id == "gone" and running_job.message_id == "gone"


def test_an_unreachable_queue_stops_the_look_and_sends_nothing(monkeypatch, author):
    def unreachable(message_id):
        raise ConnectionError("Redis is restarting")

    monkeypatch.setattr(tasks, "message_waiting", unreachable)
    monkeypatch.setattr(tasks, "send", lambda job: pytest.fail("nothing can be sent while the queue is away"))
    Job.objects.create(kind="export", message_id="m", message_seen_at=timezone.now() - timedelta(minutes=5))

    assert durability.requeue_lost() == 0
    assert Job.objects.get().status == Job.Status.QUEUED


@pytest.mark.django_db(transaction=True)  # the watch reads and writes the job from a thread of its own
def test_a_job_past_its_limit_ends_failed_saying_so(sleepy_kind, author):
    job = services.start_job(sleepy_kind, {"steps": 200}, author, background=False)

    assert job.status == Job.Status.FAILED and job.time_limit == 1
    assert job.error == "stopped at its time limit of 1 s (raise it with JOB_TIME_LIMITS=sleepy-test=SECONDS)"
    assert 0 < job.done < 200


@pytest.mark.django_db(transaction=True)
def test_a_finished_jobs_result_names_no_path_of_the_host_it_ran_on(sleepy_kind, author):
    job = services.start_job(sleepy_kind, {"steps": 3}, author, background=False)

    assert job.status == Job.Status.DONE and job.attempts == 1
    assert job.result == {"steps": 3, "written": "out.txt"}


def test_a_job_ended_for_it_stops_at_its_next_step(author):
    job = Job.objects.create(kind="export", status=Job.Status.RUNNING, worker="w:1")
    progress = running.progress_recorder(job)
    progress(1, 10)
    workers.fail(job, "its task worker (w:1) stopped")
    with pytest.raises(Stopped):
        progress(10, 10)


def test_check_names_an_unknown_kind_or_a_limit_out_of_range_in_job_time_limits(settings):
    from jobs.apps import time_limits_known

    settings.JOB_TIME_LIMITS = {"train_unli": 86400, "bundel": 3600, "export": 0}
    problems = [error.msg for error in time_limits_known()]
    assert len(problems) == 2
    assert "'bundel', which is no job kind" in problems[0] and "bundle" in problems[0]
    assert problems[1].startswith("JOB_TIME_LIMITS export: a time limit is 1 to 604800 seconds")


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_a_dropped_database_connection_does_not_end_a_running_job(author):
    import psycopg
    from django.db import connection

    from tests.faults.test_server_faults import served_database_url

    def run(job, progress):
        progress(1, 3)
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backend = cursor.fetchone()[0]
        with psycopg.connect(served_database_url(), autocommit=True) as other:  # as a database restart would
            other.execute("SELECT pg_terminate_backend(%s)", [backend])
        progress(2, 3)
        progress(3, 3)
        return {"steps": 3}

    register(JobKind("blip-test", "Blip", run, group="data"))
    try:
        job = services.start_job("blip-test", {}, author, background=False)
    finally:
        KINDS.pop("blip-test")
    assert job.status == Job.Status.DONE and job.result == {"steps": 3} and job.attempts == 1


def test_a_job_that_cannot_be_started_is_refused_with_its_reason_on_the_api(settings, author, client, shared_data):
    settings.JOB_TIME_LIMITS = {"evaluate": 0}
    client.force_login(author)
    folder = shared_data / "chaosnli"
    with (
        (folder / "chaosNLI_snli.jsonl").open("rb") as gold,
        (folder / "prediction_samples" / "snli_random_baseline.json").open("rb") as predictions,
    ):
        response = client.post(
            "/api/v1/evaluation/runs/", {"suite": "chaos", "bootstrap": "0", "gold": gold, "predictions": predictions}
        )
    assert response.status_code == 409, response.content[:300]
    assert "JOB_TIME_LIMITS evaluate: a time limit is 1 to 604800 seconds" in response.json()["detail"]
    assert not Job.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_each_change_of_a_jobs_state_is_one_log_line_with_its_fields(sleepy_kind, author, caplog):
    caplog.set_level("INFO", logger="nli.jobs")
    job = services.start_job(sleepy_kind, {"steps": 2}, author, background=False)

    lines = [record for record in caplog.records if record.name == "nli.jobs"]
    assert [record.status for record in lines] == ["queued", "running", "done"]
    assert all((record.job_id, record.kind, record.queue) == (job.pk, sleepy_kind, "default") for record in lines)
