"""`manage.py storage`: the bucket created, found, or refused with one line; the storage checked."""

import os
import subprocess
import sys

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import override_settings

from tests.faults.test_storage import bucket_settings

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def storage(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("storage", *args, stdout=out)
    return out.getvalue().strip()


def test_create_bucket_makes_it_once_then_finds_it(s3):
    env, client = s3
    with override_settings(**bucket_settings(env, "nli-new-bucket")):
        assert storage("--create-bucket") == f"created bucket 'nli-new-bucket' at {env['AWS_S3_ENDPOINT_URL']}"
        assert storage("--create-bucket") == f"bucket 'nli-new-bucket' exists already at {env['AWS_S3_ENDPOINT_URL']}"
        assert storage("--check").startswith("the storage (bucket 'nli-new-bucket'")
    assert "nli-new-bucket" in [bucket["Name"] for bucket in client.list_buckets()["Buckets"]]


@pytest.mark.parametrize(
    ("name", "why"),
    [("Not A Bucket!", "the name is refused"), ("ab", "InvalidBucketName")],  # botocore's own check; the server's
)
def test_a_name_s3_refuses_is_one_clear_message(s3, name, why):
    env, _ = s3
    with override_settings(**bucket_settings(env, name)), pytest.raises(CommandError) as refused:
        storage("--create-bucket")
    assert f"could not create bucket {name!r}" in str(refused.value) and why in str(refused.value)
    assert "3 to 63 characters" in str(refused.value)


def test_check_names_a_missing_bucket(s3):
    env, _ = s3
    with override_settings(**bucket_settings(env, "no-such-bucket")), pytest.raises(CommandError, match="NoSuchBucket"):
        storage("--check")


def test_without_a_bucket_there_is_nothing_to_create(settings):
    settings.AWS_STORAGE_BUCKET_NAME = ""
    assert "nothing to create" in storage("--create-bucket") and "folder" in storage("--create-bucket")


def test_the_command_line_creates_a_bucket_the_checks_would_miss_and_refuses_in_one_line(s3, tmp_path):
    """From a shell, as the docs say: runs though the bucket does not exist yet; a bad name exits 1, no traceback."""
    env, client = s3
    base = {**os.environ, **env, "DJANGO_SETTINGS_MODULE": "tests.settings", "NLI_STUDIO_VAR": str(tmp_path)}
    manage = [sys.executable, "manage.py", "storage", "--create-bucket"]
    made = subprocess.run(
        manage,
        cwd=REPO,
        env={**base, "AWS_STORAGE_BUCKET_NAME": "made-from-shell"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert made.returncode == 0, made.stderr
    assert "made-from-shell" in [bucket["Name"] for bucket in client.list_buckets()["Buckets"]]
    refused = subprocess.run(
        manage,
        cwd=REPO,
        env={**base, "AWS_STORAGE_BUCKET_NAME": "Bad_Name!"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert refused.stderr.strip().splitlines() == [refused.stderr.strip()] and "'Bad_Name!'" in refused.stderr
