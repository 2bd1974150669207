"""Jobs live in the database; the queue only carries them.

send           put a job's message on its queue and note it on the job. A queue that cannot be reached leaves the
               job queued and noted as unsent: the next look below sends it.
requeue_lost   a queued job whose message the queue no longer holds (Redis restarted without persistence, a flush,
               a send that failed, a job put back after a transient fault) is sent again. Every task worker does
               this at each beat (5 s) and the expiry loop at each turn; a job is looked at once per
               JOB_REQUEUE_AFTER_SECONDS (15 s) whoever looks, so it runs again within that plus one beat.
               A job delivered twice still runs once: jobs/running.py claims it with one UPDATE.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from jobs import tasks
from jobs.models import Job

logger = logging.getLogger(__name__)


def send(job: Job) -> bool:
    """Send the job's message; False (the job stays queued, to be sent again) when the queue is unreachable."""
    try:
        message_id = tasks.send(job)
    except Exception as error:  # Redis down or refusing: the job's row is what counts; it is sent again later
        logger.warning("job %s: its queue could not be reached, it will be sent again: %r", job.pk, error)
        job.write_log(f"queue {job.queue} unreachable ({type(error).__name__}): it will be sent again")
        return False
    Job.objects.filter(pk=job.pk).update(message_id=message_id, message_seen_at=timezone.now())
    return True


def requeue_lost(now=None) -> int:
    """Send again the queued jobs whose message is gone; how many were sent."""
    now = now or timezone.now()
    cutoff = now - timedelta(seconds=settings.JOB_REQUEUE_AFTER_SECONDS)
    due = Job.objects.filter(status=Job.Status.QUEUED).filter(
        Q(message_seen_at__lt=cutoff) | Q(message_seen_at=None, created_at__lt=cutoff)
    )
    sent = 0
    for job in due.only("pk", "kind", "queue", "time_limit", "message_id", "message_seen_at"):
        # Whoever moves message_seen_at looks at this job; other hosts skip it until the next round.
        if not Job.objects.filter(pk=job.pk, status=Job.Status.QUEUED, message_seen_at=job.message_seen_at).update(
            message_seen_at=now
        ):
            continue
        try:
            waiting = bool(job.message_id) and tasks.message_waiting(job.message_id)
        except Exception as error:  # the queue is unreachable: nothing can be known or sent now
            logger.warning("could not look for lost job messages: %r", error)
            break
        if waiting:
            continue
        job.write_log(
            f"its message was no longer in queue {job.queue}: sent again"
            if job.message_id
            else f"sent to queue {job.queue}"
        )
        sent += send(job)
    return sent
