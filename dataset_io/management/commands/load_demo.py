import json

from django.core.management.base import BaseCommand

from dataset_io.demo import DEMO_USERS, load_demo


class Command(BaseCommand):
    help = (
        "Create the demo accounts and the demo studies of every task type, each with simulated answers on its "
        "last items (marked as simulated) so every page shows what it is for; a second run adds nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--no-simulated-answers", action="store_true", help="leave the demo studies unanswered")

    def handle(self, *args, **opts):
        result = load_demo(simulate=not opts["no_simulated_answers"])
        if opts["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"demo loaded: {len(result['users_created'])} users and {result['items_created']} items created"
        )
        self.stdout.write("demo logins (username / password / role):")
        for username, role, password in DEMO_USERS:
            self.stdout.write(f"  {username:<8} {password:<18} {role}")
