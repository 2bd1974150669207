"""The one background task: run a stored job (Django Tasks API; the database backend by default, RQ with
REDIS_URL). Send a job to GPU workers with the queue "gpu".

The job's row is what counts; a queue message only carries its id. So a message lost with the queue (a Redis
restart without persistence) is sent again (jobs/durability.py), and a message delivered twice runs the job once
(jobs/running.py claims it with one UPDATE)."""

from django_tasks import default_task_backend, task
from django_tasks.exceptions import TaskResultDoesNotExist

from jobs import running


@task()
def run_job(job_id: int, time_limit: int | None = None) -> str:
    """time_limit: the job's limit in seconds, read by the queue's backend (jobs/rq_backend.py) to set the
    queue's own timeout; the job's watch reads it from the job's row."""
    return running.execute(job_id).status


def send(job) -> str:
    """Put a message for the job on its queue; the message's id."""
    return run_job.using(queue_name=job.queue).enqueue(job.pk, time_limit=job.time_limit).id


def message_waiting(message_id: str) -> bool:
    """Whether the queue still holds this message, not yet taken (or taken and running)."""
    if not default_task_backend.supports_get_result:  # a backend that runs the job where it is sent
        return True
    try:
        result = default_task_backend.get_result(message_id)
    except TaskResultDoesNotExist:
        return False
    return not result.is_finished
