import json

from django.core.management.base import BaseCommand

from dataset_io.services.files import remove_stale_files


class Command(BaseCommand):
    help = (
        "Remove staged uploads never imported (older than STAGED_UPLOAD_MAX_AGE_HOURS) and the files of jobs "
        "finished more than JOB_FILES_MAX_AGE_DAYS ago (their results and logs stay). The expiry loop of "
        "bin/serve runs it every hour."
    )

    def add_arguments(self, parser):
        parser.add_argument("--upload-hours", type=float, default=None, help="default: STAGED_UPLOAD_MAX_AGE_HOURS")
        parser.add_argument("--job-days", type=float, default=None, help="default: JOB_FILES_MAX_AGE_DAYS")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        removed = remove_stale_files(opts["upload_hours"], opts["job_days"])
        self.stdout.write(
            json.dumps(removed)
            if opts["json"]
            else f"removed {removed['uploads']} staged uploads and the files of {removed['jobs']} jobs"
        )
