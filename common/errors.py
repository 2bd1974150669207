"""The errors every service shares: FieldError when it refuses one field of what it was given,
ServiceUnavailable when something it depends on (the storage, a queue) cannot be reached."""

from __future__ import annotations


class FieldError(ValueError):
    """Input refused for one field: `field` names it as the page, the API and the command call it, `message`
    says what is wrong, and str() is "field: message"."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class ServiceUnavailable(Exception):
    """A service the request needs is down or does not answer in time; its message names the service. An
    unhandled one answers 503 with that message (common.middleware), never a bare 500."""
