"""Demo accounts and one demo project per task type (each task type writes its own, see TaskType.demo).

Loading goes through the same project and import services as the command line, so it is idempotent:
a second run finds the projects and examples in place and adds nothing.
"""

import io
import json
import zlib

from django.contrib.auth import get_user_model

from annotation.models import Project
from annotation.services import simulation
from annotation.services.projects import create_project
from annotation.services.qualification import update_rules
from annotation.tasktypes import TASK_TYPES
from core.roles import grant_role
from dataset_io.services.importers import import_stream

DEMO_USERS = [
    ("admin", "admin", "demo-admin-pass"),
    ("author", "author", "demo-author-pass"),
    ("worker1", "worker", "demo-worker-pass"),
    ("worker2", "worker", "demo-worker-pass"),
    ("worker3", "worker", "demo-worker-pass"),
]


def _jsonl(rows) -> io.StringIO:
    return io.StringIO("".join(json.dumps(row) + "\n" for row in rows))


def load_demo(simulate: bool = False) -> dict:
    """Create the demo users and projects if missing; returns what was created. `simulate`: a study made now
    also gets simulated answers on its last items (annotation.services.simulation), as `make demo` does."""
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
        for demo in task.demos():
            created_items += _load_project(task, demo, author, simulate)
    return {"users_created": created_users, "items_created": created_items}


SIMULATED_SHARE = 5  # one item in five (the study's last ones), at least two, gets simulated answers


def _load_project(task, demo, author, simulate: bool) -> int:
    """The demo study, made on the first run only (a later run finds it and its rows in place)."""
    project = Project.objects.filter(slug=demo.slug).first()
    new = project is None
    if project is None:
        project = create_project(
            demo.slug,
            task.name,
            author,
            title=demo.title,
            instructions=demo.instructions,
            worked_examples=demo.worked_examples,
            status=Project.Status.PUBLISHED,
            **demo.options,
        )
        if demo.qualification:
            import_stream(project, _jsonl(demo.qualification), "jsonl", purpose="qualification")
            update_rules(project, {"max_attempts": 2, "min_accuracy": 0.66, "show_feedback": True})
    created = 0
    for fmt, rows in demo.imports:
        created += import_stream(project, _jsonl(rows), fmt).items
    if demo.gold:
        import_stream(project, _jsonl(demo.gold), "jsonl", purpose="gold")
    if new and simulate:
        data = project.items.filter(is_gold=False).order_by("-id")
        last = list(data[: max(2, data.count() // SIMULATED_SHARE)])[::-1]
        simulation.simulate(project, last, seed=zlib.crc32(project.slug.encode()))
    return created
