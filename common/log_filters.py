"""Filters of the log handlers (config/settings.py LOGGING)."""

import logging


class RefusalsInOneLine(logging.Filter):
    """Django logs a request refused by an exception (PermissionDenied, BadRequest, a malformed body, a
    suspicious request: a 4xx) with that exception's traceback. A refusal is the app doing its job, and its
    one line (what, which path, the status) says it all: the traceback is left out. Server errors keep theirs."""

    def filter(self, record: logging.LogRecord) -> bool:
        if 400 <= getattr(record, "status_code", 0) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
