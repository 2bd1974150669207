"""Publishing a dataset bundle as a dataset repository on the Hugging Face Hub, through huggingface_hub's
documented calls (`create_repo`, then `upload_folder` of the unzipped bundle: one commit).

The token is the author's, given for this push: it goes to the Hub with these calls and is kept nowhere
(not in the database, a job's parameters or a log). What the Hub would refuse is refused before anything is
sent, naming the field: a repository name (huggingface_hub's own `validate_repo_id`, plus the owner the Hub
needs to know whose repository it is) and a missing token.
"""

from __future__ import annotations

import tempfile
import zipfile
from pathlib import Path

from django.conf import settings

from common.errors import FieldError


class HubError(FieldError):
    """What stopped a push; names the field (repo, token) or says what the Hub answered."""


def check_repo_id(repo_id: str) -> str:
    """The repository as owner/name, or HubError naming `repo` with the rule it breaks."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    repo_id = (repo_id or "").strip()
    if repo_id.count("/") != 1:
        raise HubError(
            "repo", f"give the dataset repository as owner/name (for example my-lab/nli-judgments), not {repo_id!r}"
        )
    try:
        validate_repo_id(repo_id)
    except HFValidationError as exc:
        raise HubError("repo", str(exc).splitlines()[0]) from None
    return repo_id


def check_token(token: str) -> str:
    token = (token or "").strip()
    if not token:
        raise HubError(
            "token", "a Hugging Face token with write access is needed (used for this push only, never stored)"
        )
    return token


def push_bundle(bundle: Path | str, repo_id: str, token: str, private: bool = True) -> str:
    """Upload the bundle (a zip written by bundle.write_bundle) to the dataset repository `repo_id`, creating
    it (private unless asked) if it does not exist; returns the commit's URL. HubError when the Hub refuses."""
    from httpx2 import TransportError  # huggingface_hub's HTTP client: a Hub it cannot reach or that hangs
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    repo_id, token = check_repo_id(repo_id), check_token(token)
    api = HfApi(endpoint=settings.HUB_ENDPOINT, token=token)
    with tempfile.TemporaryDirectory(prefix="nli-studio-hub-") as folder:
        with zipfile.ZipFile(bundle) as archive:
            archive.extractall(folder)  # the app's own zip: names are plain relative paths
        try:
            api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
            commit = api.upload_folder(
                repo_id=repo_id,
                repo_type="dataset",
                folder_path=folder,
                commit_message="Dataset bundle from NLI Studio",
            )
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            field_name = "token" if status in (401, 403) else "repo"
            raise HubError(field_name, f"the Hub refused the push ({status}): {exc.server_message or exc}") from None
        except ValueError as exc:  # huggingface_hub's answer to a card the Hub's metadata check refuses
            raise HubError("card", str(exc)) from None
        except (TransportError, OSError) as exc:
            raise HubError("repo", f"could not reach the Hub at {settings.HUB_ENDPOINT}: {exc}") from None
    return commit.commit_url


def push_job_bundle(job, repo_id: str, token: str, private: bool = True) -> str:
    """Push the bundle a finished bundle job wrote (background.BUNDLE), fetched from the storage into scratch
    space where the storage is not this host's disk; returns the commit's URL."""
    from jobs import files

    if job.status != job.Status.DONE or not job.output:
        raise HubError("bundle", "the bundle is not ready yet")
    check_repo_id(repo_id)  # both before a remote storage's copy is made
    check_token(token)
    try:
        with tempfile.TemporaryDirectory(dir=files.scratch("hub")) as folder:
            bundle = files.fetch(job.output, Path(folder) / job.output_name)
            return push_bundle(bundle, repo_id, token, private)
    except files.StorageError as exc:
        raise HubError("bundle", str(exc)) from None
