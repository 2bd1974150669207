"""Adjudication with its audit trail, and live progress over Channels (in-memory layer and Redis)."""

import json

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from rest_framework.test import APIClient

from annotation.models import AdjudicationRecord, Item
from annotation.services.analysis.adjudication import adjudicate, queue
from annotation.services.answers import SubmissionError
from annotation.services.assignments import claim_page, submit_page
from tests.conftest import redis_url, require_service


@pytest.fixture
def tied(make_project, import_rows, make_user):
    """A validity project whose two annotators disagree and the cap stops at two: an unresolved tie."""
    project = make_project("atom_validity", items_per_page=1, redundancy=2, max_annotations=2)
    import_rows(project, [{"id": "e1", "premise": "P", "hypothesis": "H"}])
    import_rows(project, [{"example_id": "e1", "atoms": ["a1"]}], "atoms")
    for name, value in (("worker-alpha", "valid"), ("worker-beta", "invalid")):
        worker = make_user(name)
        page = claim_page(project, worker)
        submit_page(page.pk, worker, {str(page.claims.get().item_id): {"value": value}})
    return project


@pytest.mark.django_db
def test_ties_wait_for_an_author_and_every_change_is_kept(tied, author, make_user, tmp_path):
    item = Item.objects.get(project=tied)
    assert item.status == "adjudication" and list(queue(tied)) == [item]
    with pytest.raises(SubmissionError):
        adjudicate(item.id, author, "perhaps")
    adjudicate(item.id, author, "valid", "criterion 2 holds")
    adjudicate(item.id, author, "invalid", "on second reading it adds information")
    item.refresh_from_db()
    assert item.final_value == "invalid" and item.status == "done" and not queue(tied).exists()
    history = list(
        AdjudicationRecord.objects.filter(item=item).order_by("id").values_list("before", "after", "author__username")
    )
    assert history == [(None, "valid", "author1"), ("valid", "invalid", "author1")]
    from dataset_io.services.exporters import write_export

    out = tmp_path / "x.jsonl"
    write_export(tied, "jsonl", out)
    record = json.loads(out.read_text())
    studio = record["nli_studio"]
    assert studio["aggregate"]["value"] == "invalid" and studio["aggregate"]["adjudicated"] is True
    assert studio["aggregate"]["method"] == "adjudicated" and len(studio["annotations"]) == 2
    from django.http import Http404

    with pytest.raises(Http404):  # another author's project does not exist for them
        adjudicate(item.id, make_user("other-author", "author"), "valid")


@pytest.mark.django_db
def test_adjudication_pages_and_api(tied, author, client):
    item = Item.objects.get(project=tied)
    client.force_login(author)
    page = client.get(f"/projects/{tied.slug}/adjudication/{item.id}/")
    html = page.content.decode()
    assert "Annotator A" in html and "Annotator B" in html and "worker-alpha" not in html  # anonymised
    assert (
        client.post(f"/projects/{tied.slug}/adjudication/{item.id}/", {"value": "valid", "note": "ok"}).status_code
        == 302
    )
    api = APIClient()
    api.force_authenticate(author)
    response = api.post(
        f"/api/projects/{tied.slug}/adjudicate/", {"item": item.id, "value": "invalid", "note": "no"}, format="json"
    )
    assert response.status_code == 200 and response.json()["before"] == "valid"
    assert (
        api.post(f"/api/projects/{tied.slug}/adjudicate/", {"item": item.id, "value": 7}, format="json").status_code
        == 409  # a value the study's task type does not take
    )
    results = api.get(f"/api/projects/{tied.slug}/results/").json()["results"]
    assert results[0]["final"] == "invalid"


def _watch_progress(project, user, submit):
    """Open the dashboard socket as `user`, run `submit`, return the pushed progress."""
    from config.asgi import application

    async def scenario():
        communicator = WebsocketCommunicator(
            application, f"/ws/projects/{project.slug}/progress/", headers=[(b"origin", b"http://127.0.0.1")]
        )
        communicator.scope["user"] = user
        # connect() waits 1 s by default: too little for a first Redis round trip on a loaded CI machine.
        connected, _ = await communicator.connect(timeout=10)
        assert connected
        first = await communicator.receive_json_from(timeout=5)
        from channels.db import database_sync_to_async

        await database_sync_to_async(submit)()
        update = await communicator.receive_json_from(timeout=5)
        await communicator.disconnect()
        return first, update

    return async_to_sync(scenario)()


def _run_live_test(make_project, import_rows, author, worker):
    project = make_project("nli_label", items_per_page=2, redundancy=1, max_annotations=1)
    import_rows(project, [{"id": str(i), "premise": "P", "hypothesis": f"H{i}"} for i in range(4)])

    def submit():
        page = claim_page(project, worker)
        submit_page(page.pk, worker, {str(c.item_id): {"value": "n"} for c in page.claims.all()})

    first, update = _watch_progress(project, author, submit)
    assert first["progress"]["done"] == 0
    assert update["progress"]["done"] == 2 and update["progress"]["annotations"] == 2


@pytest.mark.django_db(transaction=True)
def test_dashboard_gets_submits_live_in_memory(make_project, import_rows, author, worker):
    _run_live_test(make_project, import_rows, author, worker)


@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_dashboard_gets_submits_live_through_redis(make_project, import_rows, author, worker, settings):
    require_service("Redis", "127.0.0.1", 6379)
    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [redis_url(0)]},
        }
    }
    channel_layers.backends.clear()
    try:
        assert type(get_channel_layer()).__name__ == "RedisChannelLayer"
        _run_live_test(make_project, import_rows, author, worker)
    finally:
        channel_layers.backends.clear()


@pytest.mark.django_db(transaction=True)
def test_the_dashboard_socket_refuses_with_the_documented_close_codes(make_project, worker, make_user):
    """4403 for a project the user sees but may not manage, 4404 for one they may not see (or none): sent as
    close codes after the handshake, so that a browser's close event carries them."""
    from config.asgi import application

    project = make_project("nli_label")
    draft = make_project("nli_label", slug="hidden-draft", status="draft")

    async def close_code(slug, user):
        communicator = WebsocketCommunicator(
            application, f"/ws/projects/{slug}/progress/", headers=[(b"origin", b"http://127.0.0.1")]
        )
        communicator.scope["user"] = user
        connected, _ = await communicator.connect(timeout=10)
        assert connected  # the handshake succeeds; the refusal is the close that follows, with nothing sent
        output = await communicator.receive_output(timeout=5)
        await communicator.disconnect()
        return output["type"], output.get("code")

    assert async_to_sync(close_code)(project.slug, worker) == ("websocket.close", 4403)
    assert async_to_sync(close_code)(draft.slug, worker) == ("websocket.close", 4404)
    assert async_to_sync(close_code)("no-such-project", worker) == ("websocket.close", 4404)
