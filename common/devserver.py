"""The development server (runserver is daphne's, on Twisted) made to pass every request body to the app.

Twisted's http.Request parses a POST's multipart or form body itself before daphne hands the request on, and
answers a body it cannot parse with a bare 400 (no Content-Type, no body) that never reaches Django: an API
client got a refusal outside the API's one error shape. Daphne does not use what Twisted parsed (Django
parses the body), so the parsing is switched off with Twisted's own option. bin/serve (uvicorn) is unaffected.
"""


def leave_bodies_to_the_app() -> None:
    from daphne.http_protocol import WebRequest

    if getattr(WebRequest, "_bodies_left_to_the_app", False):
        return
    original_init = WebRequest.__init__

    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        self._parsePOSTFormSubmission = False  # twisted.web.http.Request's option: no parsing of POST bodies

    WebRequest.__init__ = __init__
    WebRequest._bodies_left_to_the_app = True
