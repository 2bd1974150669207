"""The one background task: run a stored job (Django Tasks API; the database backend by default, RQ with
REDIS_URL). Send a job to GPU workers with the queue "gpu"."""

from django_tasks import task

from jobs import running


@task()
def run_job(job_id: int) -> str:
    return running.execute(job_id).status
