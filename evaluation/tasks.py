"""Background execution of stored evaluation runs (Django Tasks API).

`start_run(..., background=True)` enqueues `execute_run_task` with the run's id; a task worker
(`manage.py db_worker` with the database backend) picks it up. The run row, not the task result, is
the record: status, results and errors are written there.
"""
from django_tasks import task

from evaluation.runs import execute_run


@task()
def execute_run_task(run_id: int) -> str:
    return execute_run(run_id).status
