"""What every local stand-in of an outside service shares: an HTTP server on 127.0.0.1 in a thread, which hands
each request, whatever its method, to the stand-in's `_serve(handler)`."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class LocalServer:
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        raise NotImplementedError  # each stand-in answers in its own service's shapes

    def start(self, port: int = 0):
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet: the stand-ins record the calls instead
                pass

            def _handle(self):
                standin._serve(self)

            do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = _handle

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
