from django.apps import apps
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.shortcuts import redirect
from django.templatetags.static import static
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView


def favicon(request):
    """What a browser asks every site for where no page names its icon (a file download, a JSON answer)."""
    return redirect(static("favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # A page, not an API operation: OPTIONS (which its HTML renderer cannot answer, a 500) is not allowed.
    path(
        "api/docs/",
        SpectacularSwaggerSplitView.as_view(url_name="api-schema", http_method_names=["get", "head"]),
        name="api-docs",
    ),
    # /healthz, /readyz and /metrics for load balancers, orchestrators and Prometheus (no login).
    path("", include("operations.urls")),
    # The API is versioned under /api/v1/; the unversioned paths stay as aliases of the same views.
    *[
        route
        for prefix in ("api/v1/", "api/")
        for route in (
            path(f"{prefix}evaluation/", include("evaluation.api_urls")),
            path(f"{prefix}jobs/", include("jobs.api_urls")),
            path(prefix, include("annotation.api_urls")),
            path(prefix, include("dataset_io.api_urls")),
            path(prefix, include("evaluation.study_evaluation.api_urls")),
            *([path(prefix, include("label_variation.api_urls"))] if apps.is_installed("label_variation") else []),
        )
    ],
    path("evaluation/", include("evaluation.urls")),
    path("models/", include("models_backend.urls")),
    path("jobs/", include("jobs.urls")),
    path("recruitment/", include("recruitment.urls")),
    path("", include("annotation.urls")),
    path("", include("dataset_io.urls")),
    # A feature app's pages exist where it is installed (the core runs without it).
    *([path("", include("label_variation.urls"))] if apps.is_installed("label_variation") else []),
]
