import json
import time

from django.core.management.base import BaseCommand
from django.db import close_old_connections

from annotation.services import extensions
from annotation.services.assignments import expire_all_stale
from jobs.durability import requeue_lost
from jobs.workers import reap_dead


class Command(BaseCommand):
    help = (
        "Return the items of overdue pages, and of pages abandoned (no sign of life from their browser for the "
        "project's abandon_after_minutes), to the pool. With --every N it keeps doing so every N seconds: "
        "bin/serve runs it that way, the one place where pages expire (claims never scan for them); the loop also "
        "does the chores the apps register, each at its own pace (the dataset app removes stale uploads and old "
        "jobs' files once an hour: remove_stale_files)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--every", type=float, default=0, help="repeat every N seconds until stopped")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        if opts["every"] <= 0:
            total = expire_all_stale()
            self.stdout.write(json.dumps({"expired": total}) if opts["json"] else f"expired {total} pages")
            return
        self.stdout.write(f"expiring overdue pages every {opts['every']:g} s")
        self.stdout.flush()
        done_at = dict.fromkeys(extensions.CHORES, float("-inf"))  # each chore runs on the first turn
        while True:
            try:
                expire_all_stale()
                reap_dead()  # running jobs of task workers that died end failed (jobs/workers.py)
                requeue_lost()  # queued jobs whose queue message was lost are sent again (jobs/durability.py)
                for chore, last in done_at.items():
                    if time.monotonic() - last >= chore.every_seconds:
                        chore.run()
                        done_at[chore] = time.monotonic()
            except Exception as error:
                self.stderr.write(f"expiry failed, trying again in {opts['every']:g} s: {error!r}")
            close_old_connections()
            time.sleep(opts["every"])
