"""What the management commands share beyond Django's BaseCommand."""

from collections.abc import Iterator
from contextlib import contextmanager

from django.core.management.base import CommandError


@contextmanager
def errors_as_command_errors(*error_types: type[Exception], returncode: int = 1) -> Iterator[None]:
    """An error of these types raised in the block as a CommandError with the same message: the services'
    errors are written to be read, so the command prints that one line and exits with `returncode`, no
    traceback (--traceback shows the original one)."""
    try:
        yield
    except error_types as error:
        raise CommandError(str(error), returncode=returncode) from error
