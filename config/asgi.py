import gc
import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django.setup(set_prefix=False)  # what django.core.asgi.get_asgi_application() does before making its handler

from django.conf import settings  # noqa: E402

from common.asgi import BoundedASGIHandler  # noqa: E402
from core.auth import credentials_check_out  # noqa: E402

django_asgi_app = BoundedASGIHandler(
    settings.REQUESTS_PER_PROCESS, settings.REQUESTS_PER_CONNECTION, credentials_check_out=credentials_check_out
)

from channels.auth import AuthMiddlewareStack  # noqa: E402  (needs the app registry loaded above)
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from annotation.routing import websocket_urlpatterns  # noqa: E402

if "daphne" in settings.INSTALLED_APPS:  # runserver only (config/settings.py): bin/serve never loads Twisted
    from common.devserver import leave_bodies_to_the_app

    leave_bodies_to_the_app()

application = ProtocolTypeRouter(
    {
        "http": django_asgi_app,
        "websocket": AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)

# Everything loaded so far lives as long as the process: keep it out of the garbage collector's full passes,
# whose pauses otherwise show in the tail latency of claims and submits.
gc.freeze()
