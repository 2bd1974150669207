import json

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from core.roles import ROLES, grant_role


class Command(BaseCommand):
    help = "Create a user (or update their password) with a role: admin, author or worker."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--role", required=True, choices=ROLES)
        parser.add_argument("--password", required=True)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **opts):
        if len(opts["password"]) < 8:
            raise CommandError("--password must have at least 8 characters")
        user, created = get_user_model().objects.get_or_create(username=opts["username"])
        user.set_password(opts["password"])
        user.save()
        grant_role(user, opts["role"])
        result = {"username": user.username, "role": opts["role"], "created": created}
        self.stdout.write(
            json.dumps(result)
            if opts["json"]
            else f"{'created' if created else 'updated'} {user.username} ({opts['role']})"
        )
