import json

from django.core.management.base import BaseCommand

from annotation.services.assignments import expire_stale, release_abandoned


class Command(BaseCommand):
    help = ("Return the items of expired and abandoned pages to the pool (claims also expire lazily on the next "
            "claim).")

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        total = 0
        while True:
            expired = expire_stale() + release_abandoned()
            total += expired
            if not expired:
                break
        self.stdout.write(json.dumps({"expired": total}) if opts["json"] else f"expired {total} pages")
