from django.core.management.base import BaseCommand

from dataset_io.formats import fields_markdown


class Command(BaseCommand):
    help = (
        "Print every dataset format's fields as Markdown tables (the part of docs/formats.md between its "
        "'fields' markers)."
    )

    def handle(self, *args, **opts):
        self.stdout.write(fields_markdown())
