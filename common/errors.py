"""The error every service raises when it refuses one field of what it was given."""

from __future__ import annotations


class FieldError(ValueError):
    """Input refused for one field: `field` names it as the page, the API and the command call it, `message`
    says what is wrong, and str() is "field: message"."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
