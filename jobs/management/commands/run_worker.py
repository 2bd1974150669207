"""Run a task worker for the configured backend over the given queues, with a heartbeat that shows it on the job
and models pages and lets the app notice when it dies. bin/worker calls this; so does bin/serve for its own."""

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from jobs import durability, workers
from jobs.kinds import QUEUES


class Command(BaseCommand):
    help = "Run a task worker over the given queues (default: default gpu): RQ with Redis, else the database."

    def add_arguments(self, parser):
        parser.add_argument("queues", nargs="*", default=list(QUEUES), help=f"queues to take ({', '.join(QUEUES)})")
        parser.add_argument("--burst", action="store_true", help="stop once the queues are empty (tests)")

    def handle(self, *args, queues, burst, **options):
        unknown = sorted(set(queues) - set(QUEUES))
        if unknown:
            raise CommandError(f"no queue {', '.join(unknown)}; the queues are {', '.join(QUEUES)}")
        backend = settings.TASKS_BACKEND
        if backend == "immediate":
            raise CommandError("TASKS_BACKEND=immediate runs each job where it is started: no worker is needed")
        heartbeat = workers.start_heartbeat(queues, backend, chores=(durability.requeue_lost,))
        connection.close()  # RQ forks a process per job: it must open its own connection, not share this one
        self.stdout.write(f"task worker {heartbeat.name_} ({backend}) takes queues {', '.join(queues)}")
        try:
            if backend == "rq":
                # django-tasks-rq's job class: RQ's own cannot run a Django task (TypeError: 'Task' object is not
                # callable) and its failure callback then fails too.
                call_command("rqworker", *queues, job_class="django_tasks_rq.Job", burst=burst)
            else:
                call_command(
                    "db_worker",
                    queue_name=",".join(queues),
                    reload=False,
                    startup_delay=False,
                    batch=burst,
                )
        finally:
            heartbeat.stop()
