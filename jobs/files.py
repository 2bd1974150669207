"""The files the app keeps, on whatever the default storage is (settings.STORAGES["default"]): the file system
under NLI_STUDIO_VAR on one host, an S3-compatible bucket when web, worker and GPU hosts share no disk.

A file is named by its storage key ("jobs/12/output/predictions.jsonl"). Work in progress stays in this host's
scratch folder (settings.SCRATCH_DIR) and is published under its key only once complete: on the file system by
a rename, in a bucket by an upload that becomes visible when it completes. So a host killed mid-write leaves
nothing half-written under a final name. Every copy streams in chunks: memory does not grow with the file.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterable, Iterator
from pathlib import Path

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.files import File
from django.core.files.storage import default_storage
from django.db import connections
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.http.response import HttpResponseBase
from django.utils.html import escape
from django.utils.http import content_disposition_header
from storages.utils import clean_name, safe_join

from common.api_errors import CODE_BY_STATUS
from common.errors import ServiceUnavailable

CHUNK = 1 << 20


class StorageError(OSError, ServiceUnavailable):
    """The storage could not be read or written (a bucket that does not exist, credentials it refuses, an
    outage, a bucket that does not answer within its timeouts); the message names the storage, never a
    traceback. Unhandled in a request, it answers 503 with that message (common.middleware)."""


class _Finished(File):
    """A complete local file handed to the storage: FileSystemStorage moves it into place with a rename (it
    takes any object with temporary_file_path), a bucket uploads it."""

    def temporary_file_path(self) -> str:
        return self.name


def describe_storage() -> str:
    bucket = getattr(settings, "AWS_STORAGE_BUCKET_NAME", "")
    if bucket:
        return f"bucket {bucket!r} at {settings.AWS_S3_ENDPOINT_URL or 'AWS S3'}"
    return f"folder {default_storage.location}"


def _storage_failure(action: str, key: str, error: Exception) -> StorageError:
    return StorageError(f"could not {action} {key} in the storage ({describe_storage()}): {_reason(error)}")


def _reason(error: Exception) -> str:
    response = getattr(error, "response", None)  # botocore's ClientError
    if isinstance(response, dict) and response.get("Error"):
        code, message = response["Error"].get("Code", ""), response["Error"].get("Message", "")
        return f"{code} {message}".strip()
    return str(error) or type(error).__name__


def scratch(*parts: str) -> Path:
    """A folder in this host's scratch space (created)."""
    folder = Path(settings.SCRATCH_DIR).joinpath(*parts)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def local_path(key: str) -> Path | None:
    """Where the file of this key is on this host's disk, when the storage is a folder here."""
    try:
        return Path(default_storage.path(key))
    except NotImplementedError:
        return None


def publish(source: Path, key: str) -> str:
    """Publish a complete local file under `key` (replacing what was there); the source is moved or removed."""
    try:
        if default_storage.exists(key):
            default_storage.delete(key)
        with open(source, "rb") as handle:
            saved = default_storage.save(key, _Finished(handle, name=str(source)))
    except Exception as error:
        raise _storage_failure("write", key, error) from error
    finally:
        Path(source).unlink(missing_ok=True)
    return saved


def save_chunks(key: str, chunks: Iterable[bytes]) -> tuple[int, str]:
    """Write a stream of bytes under `key` (through a scratch file, hashed on the way); its (size, sha256)."""
    digest, size = hashlib.sha256(), 0
    handle = tempfile.NamedTemporaryFile(dir=scratch("incoming"), delete=False)  # noqa: SIM115 - published below
    try:
        with handle:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                handle.write(chunk)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    publish(Path(handle.name), key)
    return size, digest.hexdigest()


def read_chunks(key: str, chunk_size: int = CHUNK) -> Iterator[bytes]:
    """The file's bytes in chunks, streamed from the storage (a bucket's object body is never read whole)."""
    _size, chunks = open_chunks(key, chunk_size)
    try:
        yield from chunks
    except Exception as error:  # the bucket went away mid-stream
        raise _storage_failure("read", key, error) from error


def exists(key: str) -> bool:
    try:
        return default_storage.exists(key)
    except Exception as error:
        raise _storage_failure("read", key, error) from error


def fetch(key: str, target: Path, sha256: str | None = None) -> Path:
    """A local copy of the file at `target` (kept if it is already there), checked against `sha256`."""
    if target.is_file():
        return target
    here = local_path(key)
    if here is not None:  # the storage is this host's disk: read it in place
        if sha256 and sha256_of(here) != sha256:
            raise StorageError(f"{key}: its content does not match the checksum it was stored with")
        return here
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".partial")
    digest = hashlib.sha256()
    with open(partial, "wb") as out:
        for chunk in read_chunks(key):
            digest.update(chunk)
            out.write(chunk)
    if sha256 and digest.hexdigest() != sha256:
        partial.unlink()
        raise StorageError(f"{key}: its content does not match the checksum it was stored with")
    os.replace(partial, target)
    return target


def delete_tree(prefix: str) -> None:
    """Remove every file under a key prefix ("jobs/12/")."""
    try:
        folders, names = default_storage.listdir(prefix)
    except (FileNotFoundError, NotADirectoryError):
        return
    except Exception as error:
        raise _storage_failure("list", prefix, error) from error
    for name in names:
        default_storage.delete(f"{prefix.rstrip('/')}/{name}")
    for folder in folders:
        delete_tree(f"{prefix.rstrip('/')}/{folder}")
    here = local_path(prefix)
    if here is not None:
        shutil.rmtree(here, ignore_errors=True)


def check_storage() -> str | None:
    """None when the storage can be written and read back, else what is wrong (for manage.py check)."""
    key = ".nli-studio-check"
    try:
        save_chunks(key, [b"ok"])
        content = b"".join(read_chunks(key))
        default_storage.delete(key)
    except Exception as error:
        return str(error) if isinstance(error, StorageError) else _storage_failure("write", key, error).args[0]
    return None if content == b"ok" else f"the storage ({describe_storage()}) gave back other bytes than written"


class StoredFileResponse(StreamingHttpResponse):
    """A stored file as a streamed attachment served by this host (memory stays flat whatever its size).

    Its view only checks who may have it; the storage is asked for the file by `open_off_turn()`, which the web
    server calls once the request has given back its turn and its database connection (common/asgi.py;
    common.middleware.OffTurnResponseMiddleware elsewhere). So downloads waiting on a slow or hung bucket hold
    neither from the claims and submits beside them, and one that fails answers 503 naming the storage."""

    def __init__(self, key: str, filename: str, *, api: bool):
        super().__init__(content_type="application/octet-stream")
        self.key, self.api = key, api
        self["Content-Disposition"] = content_disposition_header(True, filename)

    def open_off_turn(self, asynchronous: bool = False) -> HttpResponseBase:
        """Open the file in the storage; this response ready to stream, or the error response to send instead.
        asynchronous: served by the ASGI handler, which must be given an async iterator (Django reads a sync one
        whole into memory before sending a byte of it)."""
        for connection in connections.all(initialized_only=True):
            if not connection.in_atomic_block:  # (a test's transaction stays open)
                connection.close()  # hands it back to the pool before waiting on the storage
        try:
            length, chunks = open_chunks(self.key)
        except FileNotFoundError:
            return refusal(404, "this file is no longer kept", api=self.api)
        except StorageError as error:
            return refusal(503, str(error), api=self.api)
        self.streaming_content = _one_chunk_at_a_time(chunks) if asynchronous else chunks
        self["Content-Length"] = str(length)
        return self


def refusal(status: int, detail: str, *, api: bool) -> HttpResponseBase:
    """The app's one error shape on the API ({"detail", "code"}), a short page elsewhere."""
    if api:
        return JsonResponse({"detail": detail, "code": CODE_BY_STATUS.get(status, "error")}, status=status)
    return HttpResponse(
        f"<!doctype html><title>{status}</title><p>{escape(detail)}</p>", status=status, content_type="text/html"
    )


def download_response(key: str, filename: str, *, api: bool = False) -> StoredFileResponse:
    return StoredFileResponse(key, filename, api=api)


def open_chunks(key: str, chunk_size: int = CHUNK) -> tuple[int, Iterator[bytes]]:
    """The file's size and its bytes in chunks, with one call to the storage before the first chunk (a bucket's
    GET, whose answer carries the size): FileNotFoundError or StorageError are raised here, not mid-stream."""
    bucket = getattr(default_storage, "bucket", None)
    try:
        if bucket is not None:
            response = bucket.Object(safe_join(default_storage.location, clean_name(key))).get()
            return response["ContentLength"], response["Body"].iter_chunks(chunk_size)
        handle = default_storage.open(key, "rb")
    except FileNotFoundError:
        raise
    except Exception as error:
        if _reason(error).startswith(("NoSuchKey", "404")):
            raise FileNotFoundError(key) from error
        raise _storage_failure("read", key, error) from error
    return default_storage.size(key), _chunks_of(handle, chunk_size)


async def _one_chunk_at_a_time(chunks: Iterator[bytes]) -> AsyncIterator[bytes]:
    """The chunks for the event loop, each read on a worker thread as the client takes the one before: memory
    holds a chunk or two whatever the file's size."""
    while (chunk := await sync_to_async(next, thread_sensitive=False)(chunks, None)) is not None:
        yield chunk


def _chunks_of(handle, chunk_size: int) -> Iterator[bytes]:
    with handle:
        while chunk := handle.read(chunk_size):
            yield chunk


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()
