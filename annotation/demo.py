"""Demo accounts and one demo project per task type (each task type writes its own, see TaskType.demo).

Loading goes through the same project and import services as the command line, so it is idempotent:
a second run finds the projects and examples in place and adds nothing.
"""
import io
import json

from django.contrib.auth import get_user_model

from annotation.models import Project
from annotation.services.access import grant_role
from annotation.services.importers import import_stream
from annotation.services.projects import create_project
from annotation.tasktypes import TASK_TYPES

DEMO_USERS = [
    ("admin", "admin", "demo-admin-pass"),
    ("author", "author", "demo-author-pass"),
    ("worker1", "worker", "demo-worker-pass"),
    ("worker2", "worker", "demo-worker-pass"),
    ("worker3", "worker", "demo-worker-pass"),
]


def _jsonl(rows) -> io.StringIO:
    return io.StringIO("".join(json.dumps(row) + "\n" for row in rows))


def load_demo() -> dict:
    """Create the demo users and projects if missing; returns what was created."""
    User = get_user_model()
    created_users = []
    for username, role, password in DEMO_USERS:
        user, created = User.objects.get_or_create(username=username)
        if created:
            user.set_password(password)
            if role == "admin":
                user.is_superuser = True
            user.save()
            created_users.append(username)
        grant_role(user, role)
    author = User.objects.get(username="author")
    created_items = 0
    for task in TASK_TYPES.values():
        demo = task.demo()
        if demo is None:
            continue
        project = Project.objects.filter(slug=demo.slug).first()
        if project is None:
            project = create_project(
                demo.slug, task.name, author, title=demo.title, instructions=demo.instructions,
                worked_examples=demo.worked_examples, status=Project.Status.PUBLISHED, **demo.options,
            )
        for fmt, rows in demo.imports:
            created_items += import_stream(project, _jsonl(rows), fmt).items
    return {"users_created": created_users, "items_created": created_items}
