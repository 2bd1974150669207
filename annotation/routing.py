from django.urls import path

from annotation.consumers import ProgressConsumer

websocket_urlpatterns = [path("ws/projects/<slug:slug>/progress/", ProgressConsumer.as_asgi())]
