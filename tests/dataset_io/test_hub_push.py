"""Publishing the dataset bundle on the Hub (`export_dataset --bundle --push-to-hub`), against a stand-in of the
Hub's upload API (tests/dataset_io/hub_standin.py): the repository gets the bundle's files byte for byte,
Parquet through Git LFS; bad names and tokens are refused before anything is written or sent."""

import hashlib
import json
import zipfile

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Project
from dataset_io.demo import load_demo
from tests.dataset_io.hub_standin import HubStandIn

pytestmark = [pytest.mark.django_db, pytest.mark.slow]
TOKEN = "hf_standin_write"


@pytest.fixture
def hub(settings, monkeypatch, tmp_path):
    """The stand-in, with huggingface_hub pointed at it and Xet off (its documented HF_HUB_DISABLE_XET: no
    stand-in of Xet's storage protocol can be faithful, so the Git LFS path is the one tested)."""
    import huggingface_hub.constants

    server = HubStandIn(TOKEN).start()
    settings.HUB_ENDPOINT = server.url
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_DISABLE_XET", True)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    yield server
    server.stop()


@pytest.fixture
def project():
    load_demo(simulate=True)
    return Project.objects.filter(task_type="nli_label").order_by("slug").first()


def push(project, output, *extra):
    call_command(
        "export_dataset", project.slug, "--bundle", "--output", str(output), "--license", "cc-by-4.0", "--json", *extra
    )


def test_the_bundle_lands_in_a_private_dataset_repository_byte_for_byte(hub, project, tmp_path, capsys):
    output = tmp_path / "bundle.zip"
    push(project, output, "--push-to-hub", "my-lab/nli-judgments", "--parquet")
    result = json.loads(capsys.readouterr().out)
    repo = hub.repos["my-lab/nli-judgments"]
    assert repo.private and len(repo.commits) == 1 and result["pushed"].endswith(repo.commits[0])
    with zipfile.ZipFile(output) as archive:
        bundled = {name: archive.read(name) for name in archive.namelist()}
    assert repo.files == bundled
    # Binary files went through Git LFS (uploaded, verified, then named by the commit); text in the commit.
    parquet = [name for name in bundled if name.endswith(".parquet")]
    assert parquet and {hashlib.sha256(bundled[name]).hexdigest() for name in parquet} <= set(hub.objects)
    assert hashlib.sha256(bundled["README.md"]).hexdigest() not in hub.objects
    # Pushing again adds a commit to the same repository.
    push(project, output, "--push-to-hub", "my-lab/nli-judgments")
    assert len(repo.commits) == 2


def test_public_only_when_asked(hub, project, tmp_path):
    push(project, tmp_path / "bundle.zip", "--push-to-hub", "my-lab/open-data", "--public")
    assert hub.repos["my-lab/open-data"].private is False


@pytest.mark.parametrize(
    "repo_id, message",
    [
        ("nli-judgments", "repo: give the dataset repository as owner/name"),
        ("a/b/c", "repo: give the dataset repository as owner/name"),
        ("my-lab/nli--judgments", "repo: "),
        ("my-lab/nli judgments", "repo: "),
        ("my-lab/" + "x" * 97, "repo: "),
    ],
)
def test_a_name_the_hub_refuses_is_refused_before_anything_is_written_or_sent(hub, project, tmp_path, repo_id, message):
    output = tmp_path / "bundle.zip"
    with pytest.raises(CommandError, match=message):
        push(project, output, "--push-to-hub", repo_id)
    assert not output.exists() and hub.calls == []


def test_no_token_is_refused_before_anything_is_written(hub, project, tmp_path, monkeypatch):
    monkeypatch.delenv("HF_TOKEN")
    output = tmp_path / "bundle.zip"
    with pytest.raises(CommandError, match="token: a Hugging Face token with write access is needed"):
        push(project, output, "--push-to-hub", "my-lab/nli-judgments")
    assert not output.exists() and hub.calls == []


def test_a_token_the_hub_refuses_uploads_nothing(hub, project, tmp_path, monkeypatch):
    monkeypatch.setenv("HF_TOKEN", "hf_read_only")
    with pytest.raises(CommandError, match=r"token: the Hub refused the push \(401\)"):
        push(project, tmp_path / "bundle.zip", "--push-to-hub", "my-lab/nli-judgments")
    assert hub.repos == {} and hub.objects == {}


def test_a_hub_that_cannot_be_reached_is_named_not_a_server_error(hub, project, tmp_path, settings):
    from benchmarks._common import free_port

    settings.HUB_ENDPOINT = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(CommandError, match=r"repo: could not reach the Hub at http://127\.0\.0\.1:\d+: "):
        push(project, tmp_path / "bundle.zip", "--push-to-hub", "my-lab/nli-judgments")


def test_public_needs_a_push(hub, project, tmp_path):
    with pytest.raises(CommandError, match="--public says how --push-to-hub creates the repository"):
        push(project, tmp_path / "bundle.zip", "--public")
    assert not (tmp_path / "bundle.zip").exists()


def test_push_needs_the_bundle(hub, project, tmp_path):
    with pytest.raises(CommandError, match="--push-to-hub publishes the bundle"):
        call_command(
            "export_dataset",
            project.slug,
            "--format",
            "jsonl",
            "--output",
            str(tmp_path / "x"),
            "--push-to-hub",
            "my-lab/x",
        )


def test_the_standin_refuses_what_the_hub_refuses(hub):
    """A commit naming an LFS object never uploaded, an object whose bytes are not its sha256, a call without
    the token: the Hub refuses each, and so must the stand-in, or the tests above prove nothing."""
    import urllib.error
    import urllib.request

    def call(method, path, body=b"", token=TOKEN):
        request = urllib.request.Request(hub.url + path, data=body, method=method)
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request) as answer:
                return answer.status
        except urllib.error.HTTPError as error:
            return error.code

    create = json.dumps({"name": "x", "organization": "lab", "type": "dataset"}).encode()
    assert call("POST", "/api/repos/create", create, token="") == 401
    assert call("POST", "/api/repos/create", create) == 200
    assert call("POST", "/api/repos/create", create) == 409
    missing = hashlib.sha256(b"never sent").hexdigest()
    commit = b"\n".join(
        json.dumps(line).encode()
        for line in (
            {"key": "header", "value": {"summary": "s"}},
            {"key": "lfsFile", "value": {"path": "data.parquet", "algo": "sha256", "oid": missing, "size": 10}},
        )
    )
    assert call("POST", "/api/datasets/lab/x/commit/main", commit) == 400
    assert call("PUT", f"/_lfs/{missing}", b"other bytes") == 403  # not signed by the batch answer
    signed = f"/_lfs/{missing}?signature={hub._signature(f'/_lfs/{missing}')}"
    assert call("PUT", signed, b"other bytes") == 400
    assert call("POST", "/api/datasets/lab/nope/commit/main", commit) == 404
    assert hub.repos["lab/x"].files == {}


def test_the_bundles_job_page_pushes_it_and_only_for_whoever_may_export_it(
    hub, project, author, make_user, settings, tmp_path
):
    from django.test import Client

    from jobs.models import Job
    from tests.conftest import IMMEDIATE_TASKS

    settings.TASKS = IMMEDIATE_TASKS
    settings.MEDIA_ROOT = tmp_path / "media"
    owner = project.owner
    client = Client()
    client.force_login(owner)
    client.post(f"/projects/{project.slug}/exports/", {"format": "bundle", "license": "mit", "parquet": "yes"})
    job = Job.objects.get(kind="bundle")
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="hub-push"' in page and 'type="password"' in page
    url = f"/projects/{project.slug}/exports/{job.pk}/hub/"

    # Someone who may not export the study gets nothing pushed, whatever they send.
    for outsider in (author, make_user("worker9", "worker")):
        other = Client()
        other.force_login(outsider)
        assert other.post(url, {"repo": "my-lab/taken", "token": TOKEN}).status_code in (403, 404)
    assert hub.calls == []

    refused = client.post(url, {"repo": "my-lab/bad--name", "token": TOKEN}, follow=True).content.decode()
    assert "Not pushed: repo: " in refused and hub.calls == []
    refused = client.post(url, {"repo": "my-lab/data", "token": ""}, follow=True).content.decode()
    assert "Not pushed: token: a Hugging Face token" in refused and hub.calls == []

    waiting = Job.objects.create(kind="bundle", params={}, created_by=owner, project=project)
    refused = client.post(
        f"/projects/{project.slug}/exports/{waiting.pk}/hub/", {"repo": "my-lab/data", "token": TOKEN}
    )
    assert refused["Location"] == f"/jobs/{waiting.pk}/"
    assert "Not pushed: bundle: the bundle is not ready yet" in client.get(refused["Location"]).content.decode()
    assert hub.calls == []

    done = client.post(url, {"repo": "my-lab/data", "token": TOKEN}, follow=True).content.decode()
    assert "Pushed to my-lab/data:" in done and TOKEN not in done
    assert set(hub.repos["my-lab/data"].files) >= {"README.md", "croissant.json"}
    assert TOKEN not in json.dumps(Job.objects.get(pk=job.pk).params)
