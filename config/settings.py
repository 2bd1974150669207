"""Settings from the environment (12-factor).

DATABASE_URL  database URL; default a SQLite file under var/
REDIS_URL     unset: in-memory channel layer and database task queue; set: Redis for both
SECRET_KEY, DEBUG, ALLOWED_HOSTS, TASKS_BACKEND (database | rq | immediate)
DB_POOL_SIZE  PostgreSQL connections per process (default 4; 0: no pool)
"""
import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("NLI_STUDIO_VAR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise RuntimeError("SECRET_KEY must be set when DEBUG is off")
    SECRET_KEY = "insecure-development-key-set-SECRET_KEY-in-production"
ALLOWED_HOSTS = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h.strip()]

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "axes",
    "channels",
    "django_tasks",
    "django_tasks_db",
    "jobs",
    "annotation",
    "evaluation",
    "models_backend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "axes.middleware.AxesMiddleware",  # login throttling: last, as django-axes asks
]

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Five failed logins for one username from one address lock that pair out for 15 minutes.
AXES_FAILURE_LIMIT = int(os.environ.get("AXES_FAILURE_LIMIT", 5))
AXES_COOLOFF_TIME = 0.25
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True

ROOT_URLCONF = "config.urls"
ASGI_APPLICATION = "config.asgi.application"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "annotation.context_processors.roles",
            ],
        },
    },
]

# ---------------------------------------------------------------------------- Database pool
# PostgreSQL connections come from a psycopg_pool pool in each process (opening one costs ~5 ms, more than
# a whole claim's queries). DB_POOL_SIZE caps the connections of ONE process: a server with
# WEB_CONCURRENCY processes holds up to WEB_CONCURRENCY * DB_POOL_SIZE, plus the task workers' and the
# expiry loop's; keep that under PostgreSQL's max_connections (100 by default). DB_POOL_SIZE=0 turns the
# pool off (a new connection per request), for a server that sits behind PgBouncer.
DB_POOL_SIZE = int(os.environ.get("DB_POOL_SIZE", 4))
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", f"sqlite:///{VAR_DIR / 'nli_studio.sqlite3'}"),
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL_SIZE > 0:
    DATABASES["default"]["OPTIONS"] = {
        "pool": {"min_size": 1, "max_size": DB_POOL_SIZE, "timeout": 10, "max_idle": 300},
    }
    # The pool tests each connection (an empty round trip, ~0.1 ms) before lending it, so one the database
    # closed (a restart, pg_terminate_backend) is replaced instead of failing a request.
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# ---------------------------------------------------------------------------- end of Database pool
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # WAL lets readers work while one writer holds the lock; the timeout makes writers queue, not fail.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

TASKS_BACKEND = os.environ.get("TASKS_BACKEND", "rq" if REDIS_URL else "database")
TASKS = {
    "default": {
        "BACKEND": {
            "database": "django_tasks_db.DatabaseBackend",
            "rq": "django_tasks_rq.RQBackend",
            "immediate": "django_tasks.backends.immediate.ImmediateBackend",
        }[TASKS_BACKEND],
        "QUEUES": ["default", "gpu"],
    }
}
if TASKS_BACKEND == "rq":
    INSTALLED_APPS.append("django_rq")
    RQ_QUEUES = {name: {"URL": REDIS_URL} for name in ("default", "gpu")}

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
WHITENOISE_USE_FINDERS = DEBUG  # no collectstatic needed while developing
# ---------------------------------------------------------------------------- Serving
# In production (DEBUG off) collectstatic, which bin/serve runs, writes a gzip copy beside each file
# (Brotli too where the brotli package is installed); WhiteNoise serves them to clients that accept them,
# from every web process. While developing, files are served from their folders as they are.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage" if DEBUG
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
# ---------------------------------------------------------------------------- end of Serving
MEDIA_ROOT = VAR_DIR / "media"

# Uploads larger than this are refused; imports stream from disk above the memory threshold.
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
NLI_MAX_IMPORT_BYTES = int(os.environ.get("NLI_MAX_IMPORT_BYTES", 200 * 1024 * 1024))

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "NLI Studio API",
    "DESCRIPTION": "Projects, the worker flow (claim, submit, release), imports, exports and results.",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "EvaluationRunStatusEnum": "jobs.models.Job.Status",
        "ItemStatusEnum": "annotation.models.Item.Status",
        "AssignmentStatusEnum": "annotation.models.Assignment.Status",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
