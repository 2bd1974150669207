import pytest
from django.core.management.base import CommandError

from common.commands import errors_as_command_errors


class RefusedError(ValueError):
    pass


def test_a_listed_error_becomes_a_command_error_with_its_message_and_return_code():
    with pytest.raises(CommandError) as raised, errors_as_command_errors(RefusedError, returncode=2):
        raise RefusedError("study: no study with the slug 'x'")
    assert str(raised.value) == "study: no study with the slug 'x'"
    assert raised.value.returncode == 2
    assert isinstance(raised.value.__cause__, RefusedError)  # --traceback still shows where it came from


def test_other_errors_pass_through_unchanged():
    with pytest.raises(KeyError), errors_as_command_errors(RefusedError):
        raise KeyError("a bug, not a refusal")
