"""django-tasks-rq's backend, with RQ given each job's own time limit.

The Tasks API has no notion of a time limit, and django-tasks-rq enqueues every task with its queue's default
(RQ's is 180 s: a training or a large bundle would be killed mid-way). This backend enqueues exactly as
django-tasks-rq 0.12 does (its `RQBackend.enqueue`, whose steps are repeated here because it offers no hook for
the timeout) and hands RQ the task's `time_limit` argument plus a grace: the job's own watch (jobs/running.py)
stops it at its limit and records why, RQ's timeout is only the backstop.
"""

from __future__ import annotations

import django_rq
from django_tasks.base import TASK_MAX_PRIORITY, TaskResult, TaskResultStatus
from django_tasks.signals import task_enqueued
from django_tasks.utils import get_random_id
from django_tasks_rq import backend as rq_tasks
from rq.job import Callback, JobStatus

# Seconds past a job's limit before RQ kills it: enough for the job's own watch to record the reason first.
RQ_GRACE_SECONDS = 60


class RQBackend(rq_tasks.RQBackend):
    def enqueue(self, task, args, kwargs):
        self.validate_task(task)
        task_result = TaskResult(
            task=task,
            id=get_random_id(),
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )
        queue = django_rq.get_queue(task.queue_name, job_class=rq_tasks.Job)
        time_limit = kwargs.get("time_limit")
        job = queue.create_job(
            task.module_path,
            args=args,
            kwargs=kwargs,
            job_id=task_result.id,
            timeout=int(time_limit) + RQ_GRACE_SECONDS if time_limit else None,
            status=JobStatus.SCHEDULED if task.run_after else JobStatus.QUEUED,
            on_failure=Callback(rq_tasks.failed_callback),
            on_success=Callback(rq_tasks.success_callback),
            meta={"backend_name": self.alias},
        )
        if task.run_after is None:
            job = queue.enqueue_job(job, at_front=task.priority == TASK_MAX_PRIORITY)
        else:
            job = queue.schedule_job(job, task.run_after)
        object.__setattr__(task_result, "enqueued_at", job.enqueued_at)
        task_enqueued.send(type(self), task_result=task_result)
        return task_result
