"""Files the server keeps only for a while: staged uploads waiting for their import, and the copies and outputs
of finished jobs. Ages from settings (STAGED_UPLOAD_MAX_AGE_HOURS, JOB_FILES_MAX_AGE_DAYS)."""

from django.conf import settings

from dataset_io.services import uploads
from jobs.services import remove_stale_files as remove_stale_job_files

EVERY_SECONDS = 3600  # how often the expiry loop removes them


def remove_stale_files(upload_hours: float | None = None, job_days: float | None = None) -> dict:
    return {
        "uploads": uploads.remove_stale(settings.STAGED_UPLOAD_MAX_AGE_HOURS if upload_hours is None else upload_hours),
        "jobs": remove_stale_job_files(settings.JOB_FILES_MAX_AGE_DAYS if job_days is None else job_days),
    }
