"""The S3 stand-in the storage and deployment tests share."""

import os
import signal
import subprocess
import time

import boto3
import pytest

from benchmarks._common import PYTHON, free_port

BUCKET = "nli-studio-test"


@pytest.fixture
def s3(s3_server):
    """moto's S3 server (the local stand-in for AWS S3, MinIO, Ceph ...) with an empty bucket: the settings
    every host reads to use it, and a client of it."""
    env, client, _server = s3_server
    return env, client


@pytest.fixture
def s3_server(tmp_path):
    """As s3, with the server's process too (a test may freeze it)."""
    port = free_port()
    log = open(tmp_path / "moto.log", "wb")
    server = subprocess.Popen(
        [PYTHON, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{port}"
    env = {
        "AWS_STORAGE_BUCKET_NAME": BUCKET,
        "AWS_S3_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "test-key",
        "AWS_SECRET_ACCESS_KEY": "test-secret",
        "AWS_S3_REGION_NAME": "us-east-1",
    }
    client = boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test-key",
        aws_secret_access_key="test-secret",
        region_name="us-east-1",
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            client.create_bucket(Bucket=BUCKET)
            break
        except Exception as error:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"moto's S3 server did not start: {(tmp_path / 'moto.log').read_text()[-2000:]}"
                ) from error
            time.sleep(0.3)
    yield env, client, server
    os.killpg(server.pid, signal.SIGKILL)
    server.wait()
    log.close()
