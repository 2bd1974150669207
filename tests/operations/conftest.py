"""moto's S3 server, shared with the storage fault tests: their fixtures (s3 and those it asks for), by name."""

from tests.faults.conftest import *  # noqa: F403
