"""What the API answers to OPTIONS (set as DRF's DEFAULT_METADATA_CLASS)."""

from rest_framework.metadata import SimpleMetadata


class RouteMetadata(SimpleMetadata):
    """DRF's answer, which describes the body of each POST and PUT the caller may send by the view's
    serializer class. The routes under a project's paths read each body with a serializer of their own (the
    schema names it) and their viewsets have no serializer class, on which DRF's answer failed (a 500): for
    them OPTIONS names the methods and describes no body."""

    def determine_actions(self, request, view):
        from rest_framework.generics import GenericAPIView  # it reads this class from the settings as it loads

        has_serializer = getattr(view, "serializer_class", None) is not None or (
            type(view).get_serializer_class is not GenericAPIView.get_serializer_class
        )
        return super().determine_actions(request, view) if has_serializer else {}
