"""OPTIONS and HEAD on every route, the API's and the pages', as nobody, a worker, the study's author and an
admin: an answer, never a server error (OPTIONS on the API described each route's body by a serializer class
the detail routes under a project's paths do not have)."""

import pytest
from django.test import Client
from django.utils import timezone

from annotation.models import Item
from annotation.services import assignments
from jobs.models import Job, WorkerHeartbeat
from tests.security.test_hostile_input import concrete, url_patterns

pytestmark = pytest.mark.django_db


def test_options_and_head_never_answer_a_server_error_on_any_route(
    make_project, import_rows, author, worker, make_user
):
    project = make_project("nli_label", redundancy=1, items_per_page=2)
    import_rows(project, [{"premise": f"P{n}", "hypothesis": f"H{n}", "label": "entailment"} for n in range(4)])
    page = assignments.claim_page(project, worker)
    job = Job.objects.create(kind="export", created_by=author, project=project)
    # A live task worker: /readyz answers 200, so a 5xx from it would be the method's doing.
    now = timezone.now()
    WorkerHeartbeat.objects.create(
        name="w", host="h", pid=1, queues=["*"], backend="database", started_at=now, seen_at=now
    )
    values = {
        "slug": project.slug,
        "item_id": Item.objects.filter(project=project).first().pk,
        "assignment_id": page.pk,
        "pk": page.pk,
        "job_id": job.pk,
        "worker_id": worker.pk,
        "token": "no-such-upload",
        "fmt": "jsonl",
    }
    routes = sorted({concrete(route, values) for route in url_patterns()})
    assert len(routes) > 60 and f"/api/v1/projects/{project.slug}/bundle/" in routes
    failures = []
    for user in (None, worker, author, make_user("admin1", "admin")):
        client = Client(raise_request_exception=False)
        if user is not None:
            client.force_login(user)
        for path in routes:
            for method in ("options", "head"):
                answer = getattr(client, method)(path)
                if answer.status_code >= 500:
                    failures.append(f"{user or 'nobody'}: {method.upper()} {path} -> {answer.status_code}")
    assert failures == []
    # The routes without a serializer class describe their methods and no body.
    client = Client()
    client.force_login(author)
    described = client.options(f"/api/v1/projects/{project.slug}/import/").json()
    assert "actions" not in described and "multipart/form-data" in described["parses"]
