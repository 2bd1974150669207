"""Settings from the environment (12-factor).

DATABASE_URL  database URL; default a SQLite file under var/
REDIS_URL     unset: in-memory channel layer and database task queue; set: Redis for both
SECRET_KEY, DEBUG, ALLOWED_HOSTS, TASKS_BACKEND (database | rq | immediate)
SECRETS_ENCRYPTION_KEY  Fernet key the Prolific tokens are stored under; default derived from SECRET_KEY
MTURK_EXTRA_ORIGINS  a local stand-in for MTurk (frame host and submit endpoint)
MTURK_SANDBOX (default true), MTURK_ACCESS_KEY_ID, MTURK_SECRET_ACCESS_KEY, MTURK_FRAME_HEIGHT  MTurk's requester API
DB_POOL_SIZE  PostgreSQL connections per process (default 4; 0: no pool)
REQUESTS_PER_PROCESS  requests a web process serves at once (default DB_POOL_SIZE, or 4 without a pool)
REQUESTS_PER_CONNECTION  requests a keep-alive connection serves on average before the server closes it
                 (default 100; 0: never), so that connections spread again over the web processes
LEFT_OUT_APPS  feature apps this deployment runs without, comma-separated (label_variation); the core works
                 without them and their studies are kept, served nowhere
NLI_STUDIO_MODELS  folder of local checkpoints for the models pages; default var/models
NLI_STUDIO_HOST_NAME  this host's name on the job and models pages (default: the machine's host name)
NLI_STUDIO_WORDNET WordNet dict folder for the antonym pipeline; default var/wordnet/dict
AWS_STORAGE_BUCKET_NAME (+ AWS_S3_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_S3_REGION_NAME)
                 kept files in an S3-compatible bucket instead of under NLI_STUDIO_VAR (several hosts)
LOG_FORMAT (text | json), LOG_REQUESTS, METRICS_ALLOWED_ADDRESSES, READYZ_STORAGE_TIMEOUT  logs, /metrics and
                 /readyz (operations/, docs/deploying.md "Operations")
"""

import os
import socket
import sys
from pathlib import Path

import dj_database_url
from botocore.config import Config as BotocoreConfig
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str = "") -> str:
    """The variable's value; set but empty (`DATABASE_URL=`) counts as unset."""
    value = os.environ.get(name, "").strip()
    return value if value else default


def env_bool(name: str, default: bool) -> bool:
    value = env_str(name)
    if not value:
        return default
    return value.lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = env_str(name)
    return int(value) if value else default


def env_list(name: str, default: str = "") -> list[str]:
    return [part.strip() for part in env_str(name, default).split(",") if part.strip()]


VAR_DIR = Path(env_str("NLI_STUDIO_VAR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)
# Off unless asked for (`make demo` and the browser tests ask): a debug page lists every URL and setting.
DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off (DEBUG=true while developing)")
    SECRET_KEY = "insecure-development-key-set-SECRET_KEY-in-production"
# The Prolific API tokens and webhook secrets are stored encrypted under this Fernet key (recruitment/secrets.py);
# unset: a key derived from SECRET_KEY. Changing either leaves the stored ones unreadable (entered again).
SECRETS_ENCRYPTION_KEY = env_str("SECRETS_ENCRYPTION_KEY")
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost")

INSTALLED_APPS = [
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
    "core",
    "jobs",
    "annotation",
    "dataset_io",
    "label_variation",
    "recruitment",
    "evaluation",
    "models_backend",
    "operations",
]
# Feature apps plug into the core (docs/architecture.md): a deployment may leave one out.
FEATURE_APPS = ("label_variation",)
LEFT_OUT_APPS = env_list("LEFT_OUT_APPS")
if set(LEFT_OUT_APPS) - set(FEATURE_APPS):
    raise ImproperlyConfigured(
        f"LEFT_OUT_APPS may name feature apps only ({', '.join(FEATURE_APPS)}), not "
        f"{', '.join(sorted(set(LEFT_OUT_APPS) - set(FEATURE_APPS)))}"
    )
INSTALLED_APPS = [app for app in INSTALLED_APPS if app not in LEFT_OUT_APPS]
# daphne's app only turns runserver into its ASGI server (WebSockets in development); it loads twisted (about
# 0.2 s and 30 MB), which the uvicorn processes of bin/serve never use: keep web processes lean.
if sys.argv[1:2] == ["runserver"]:
    INSTALLED_APPS.insert(0, "daphne")

MIDDLEWARE = [
    # First: every request is counted and logged, redirects and refusals of the middleware below included.
    "operations.middleware.RequestMetricsMiddleware",
    "common.middleware.OffTurnResponseMiddleware",
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
    "core.auth.RoleLoadingModelBackend",  # ModelBackend that reads the user's roles with the user
]
# Five failed logins for one username from one address lock that pair out for 15 minutes.
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 5)
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
# Requests one web process runs Django's code for at once (common/asgi.py); the others wait in its event
# loop. As many as the pool has connections: a request beyond them would only wait for one in a thread.
REQUESTS_PER_PROCESS = int(os.environ.get("REQUESTS_PER_PROCESS", DB_POOL_SIZE or 4))
# A keep-alive connection is closed after this many requests on average (common/asgi.py): the processes
# share one socket, and clients that never reconnect stay on the process they first reached.
REQUESTS_PER_CONNECTION = int(os.environ.get("REQUESTS_PER_CONNECTION", 100))
DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'nli_studio.sqlite3'}"),
        conn_max_age=0,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql" and DB_POOL_SIZE > 0:
    DATABASES["default"]["OPTIONS"] = {
        "pool": {"min_size": 1, "max_size": DB_POOL_SIZE, "timeout": 10, "max_idle": 300},
        # Pooled connections keep the hot path's statements prepared (common/compiled_queries.py runs them
        # with server-side binding; Django's own cursors bind on the client and are never prepared). Not
        # without the pool: PgBouncer in transaction mode cannot keep a session's prepared statements.
        "prepare_threshold": 0,
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

REDIS_URL = env_str("REDIS_URL")
if REDIS_URL:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

TASKS_BACKEND = env_str("TASKS_BACKEND", "rq" if REDIS_URL else "database")
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
    # Every job is enqueued with its own limit (jobs/rq_backend.py); this default only applies to what else
    # might be put on these queues. RQ's own is 180 s.
    RQ_QUEUES = {
        name: {"URL": REDIS_URL, "DEFAULT_TIMEOUT": env_int("RQ_DEFAULT_TIMEOUT", 180)} for name in ("default", "gpu")
    }
    TASKS["default"]["BACKEND"] = "jobs.rq_backend.RQBackend"
# ---------------------------------------------------------------------------- Jobs
# How long a job may run, per kind, over the kind's own limit (jobs/kinds.py): "train_unli=86400,bundle=14400".
JOB_TIME_LIMITS: dict[str, float] = {}
for _entry in env_list("JOB_TIME_LIMITS"):
    _kind, _, _seconds = _entry.partition("=")
    try:
        JOB_TIME_LIMITS[_kind.strip()] = float(_seconds)
    except ValueError:
        raise ImproperlyConfigured(f"JOB_TIME_LIMITS: {_entry!r} is not KIND=SECONDS (e.g. train_unli=86400)") from None
# Runs a job may have when a transient fault (its worker died, its database connection dropped) ends one and its
# kind is safe to repeat.
JOB_MAX_ATTEMPTS = env_int("JOB_MAX_ATTEMPTS", 3)
# A queued job whose message the queue no longer holds (a Redis restart without persistence, a flush) is sent
# again once it has waited this long (by every worker's heartbeat and the expiry loop).
JOB_REQUEUE_AFTER_SECONDS = env_int("JOB_REQUEUE_AFTER_SECONDS", 15)
# ---------------------------------------------------------------------------- end of Jobs

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
# ---------------------------------------------------------------------------- Kept files
# Every file the app keeps (staged uploads, job inputs and outputs, exports, bundles, trained checkpoints) goes
# through the default storage (jobs/files.py): the file system under NLI_STUDIO_VAR, or, once
# AWS_STORAGE_BUCKET_NAME is set, an S3-compatible bucket shared by the web, worker and GPU hosts (django-storages,
# configured with its own settings, read from the environment).
AWS_STORAGE_BUCKET_NAME = env_str("AWS_STORAGE_BUCKET_NAME")
if AWS_STORAGE_BUCKET_NAME:
    DEFAULT_STORAGE = {"BACKEND": "storages.backends.s3.S3Storage"}
    AWS_S3_ENDPOINT_URL = env_str("AWS_S3_ENDPOINT_URL") or None
    AWS_S3_REGION_NAME = env_str("AWS_S3_REGION_NAME") or None
    AWS_ACCESS_KEY_ID = env_str("AWS_ACCESS_KEY_ID") or None
    AWS_SECRET_ACCESS_KEY = env_str("AWS_SECRET_ACCESS_KEY") or None
    AWS_DEFAULT_ACL = None  # the bucket's own policy; objects are never public
    AWS_QUERYSTRING_EXPIRE = 300  # a pre-signed URL, where one is made, lives five minutes
    AWS_S3_MAX_MEMORY_SIZE = 1024 * 1024  # a file opened through the storage spills to disk past 1 MiB
    # Every call to the bucket is bounded: an attempt waits at most the connect timeout, then, on a bucket that
    # takes the connection and never answers, about twice the read timeout (measured: 4.0 s with 2 s); botocore
    # makes STORAGE_MAX_ATTEMPTS attempts in all. The web host then answers 503 naming the storage
    # (docs/deploying.md, "Storage timeouts").
    STORAGE_CONNECT_TIMEOUT = float(env_str("STORAGE_CONNECT_TIMEOUT", "5"))
    STORAGE_READ_TIMEOUT = float(env_str("STORAGE_READ_TIMEOUT", "20"))
    STORAGE_MAX_ATTEMPTS = env_int("STORAGE_MAX_ATTEMPTS", 3)
    AWS_S3_CLIENT_CONFIG = BotocoreConfig(
        connect_timeout=STORAGE_CONNECT_TIMEOUT,
        read_timeout=STORAGE_READ_TIMEOUT,
        retries={"max_attempts": STORAGE_MAX_ATTEMPTS, "mode": "standard"},
        s3={"addressing_style": env_str("AWS_S3_ADDRESSING_STYLE") or None},  # what django-storages would set
    )
else:
    DEFAULT_STORAGE = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
# Work in progress (a job's local copies of its inputs, what it is writing, downloaded checkpoints) stays on the
# host that does it: published to the storage only once complete, so nothing half-written has its final name.
SCRATCH_DIR = VAR_DIR / "scratch"
# How this host is named on the job and models pages (task workers, checkpoints placed by hand in its models folder).
HOST_NAME = env_str("NLI_STUDIO_HOST_NAME") or socket.gethostname()
CHECKPOINT_CACHE_DIR = Path(env_str("NLI_STUDIO_CHECKPOINT_CACHE") or VAR_DIR / "checkpoint-cache")
# ---------------------------------------------------------------------------- end of Kept files
STORAGES = {
    "default": DEFAULT_STORAGE,
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedStaticFilesStorage"
    },
}
# ---------------------------------------------------------------------------- end of Serving
MEDIA_ROOT = VAR_DIR / "media"

# Request bodies other than files are refused above 5 MB; uploaded files above 64 KiB go to a temporary
# file and are read from there line by line, never whole; NLI_MAX_IMPORT_BYTES is the import size limit.
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024
NLI_MAX_IMPORT_BYTES = env_int("NLI_MAX_IMPORT_BYTES", 200 * 1024 * 1024)
# The largest body of a request without credentials (logins, crowd entry): larger ones are refused unread.
ANONYMOUS_MAX_BODY_BYTES = env_int("ANONYMOUS_MAX_BODY_BYTES", 1024 * 1024)
# A body that stops coming is answered 408 (common/asgi.py): after this many seconds without a byte, or,
# from a request without valid credentials, when the whole body took longer than ANONYMOUS_BODY_SECONDS.
BODY_IDLE_SECONDS = env_int("BODY_IDLE_SECONDS", 30)
ANONYMOUS_BODY_SECONDS = env_int("ANONYMOUS_BODY_SECONDS", 30)
# Staged uploads not confirmed after this many hours, and finished jobs' files after this many days, are
# removed by the expiry loop (manage.py remove_stale_files).
STAGED_UPLOAD_MAX_AGE_HOURS = env_int("STAGED_UPLOAD_MAX_AGE_HOURS", 24)
JOB_FILES_MAX_AGE_DAYS = env_int("JOB_FILES_MAX_AGE_DAYS", 30)

# Local checkpoints the models pages offer (one transformers folder per checkpoint); nothing is fetched from a hub.
MODELS_DIR = Path(os.environ.get("NLI_STUDIO_MODELS", VAR_DIR / "models"))
# WordNet's dict folder for the antonym pipeline (models_backend/wordnet_install.sh unpacks it here).
WORDNET_DIR = Path(os.environ.get("NLI_STUDIO_WORDNET", VAR_DIR / "wordnet" / "dict"))

SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
if not DEBUG:
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"


# MTurk ExternalQuestion: the crowd pages of an MTurk arrival may be framed by MTurk's worker sites (and only
# those); finished HITs are posted to turkSubmitTo, which must be one of these hosts (production, sandbox).
# MTURK_EXTRA_ORIGINS adds a local stand-in for both (tests, a rehearsal without MTurk).
MTURK_FRAME_ANCESTORS = ["https://mturk.com", "https://*.mturk.com", *env_list("MTURK_EXTRA_ORIGINS")]
# Where those pages' forms may go besides this site: externalSubmit and the MTurk pages it redirects to.
MTURK_FORM_ACTION = ["https://*.mturk.com", *env_list("MTURK_EXTRA_ORIGINS")]
MTURK_SUBMIT_HOSTS = ["https://www.mturk.com", "https://workersandbox.mturk.com", *env_list("MTURK_EXTRA_ORIGINS")]
# MTurk's requester API (recruitment/mturk.py): the sandbox unless MTURK_SANDBOX=false. Without MTURK_ACCESS_KEY_ID
# boto3 finds keys its own way (AWS_* variables, ~/.aws, an instance role). The keys go to boto3 only.
MTURK_SANDBOX = env_bool("MTURK_SANDBOX", True)
MTURK_ACCESS_KEY_ID = env_str("MTURK_ACCESS_KEY_ID")
MTURK_SECRET_ACCESS_KEY = env_str("MTURK_SECRET_ACCESS_KEY")
MTURK_FRAME_HEIGHT = env_int("MTURK_FRAME_HEIGHT", 0)  # ExternalQuestion's FrameHeight in pixels; 0: the whole window
# A crowd participant's link to come back (annotation.services.crowd.crowd.resume_token) lapses after this many
# seconds (default 7 days: longer than any study's page, shorter than for ever; docs/crowd.md).
CROWD_RESUME_LINK_MAX_AGE = env_int("CROWD_RESUME_LINK_MAX_AGE", 7 * 24 * 3600)
PROLIFIC_COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc="
# Prolific's REST API (recruitment.prolific); a local stand-in in tests and rehearsals.
PROLIFIC_API_URL = env_str("PROLIFIC_API_URL", "https://api.prolific.com")
PROLIFIC_TIMEOUT_SECONDS = float(env_int("PROLIFIC_TIMEOUT_SECONDS", 20))
# The cost preview of the Prolific page (recruitment/services/costs.py): Prolific's service fee on rewards and
# bonuses, and VAT on that fee. Defaults: the ~33.33% Prolific's help centre quotes for its standard (academic)
# pricing and the UK's 20% VAT it charges UK researchers on its fees. Corporate accounts pay a higher fee, and
# researchers outside the UK pay VAT differently (reverse charge in the EU, none elsewhere): check both against
# your Prolific account (docs/crowd.md).
PROLIFIC_SERVICE_FEE_RATE = env_str("PROLIFIC_SERVICE_FEE_RATE", "0.3333")
PROLIFIC_VAT_RATE = env_str("PROLIFIC_VAT_RATE", "0.20")
# A webhook whose X-Prolific-Request-Timestamp is further than this from the server's clock is refused.
PROLIFIC_WEBHOOK_TOLERANCE_SECONDS = 300
# Where a dataset bundle is pushed (dataset_io.services.hub): the Hugging Face Hub, or a local stand-in in
# tests. HF_ENDPOINT is huggingface_hub's own variable for the same thing.
HUB_ENDPOINT = env_str("HF_ENDPOINT", "https://huggingface.co")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "core.auth.RoleLoadingTokenAuthentication",  # TokenAuthentication that reads roles with the user
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["core.throttles.SignedInAfterThrottles"],
    # JSON bodies, with a depth limit (common/request_json.py: deep nesting is no 500). A form body cannot
    # carry the API's lists and objects (a page's answers, a study's options); the operations that take files
    # (imports, evaluation runs) and the token (username and password) read forms too, each saying so.
    "DEFAULT_PARSER_CLASSES": ["common.parsers.DepthLimitedJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "common.pagination.PageNumbersOnly",
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

# LOG_FORMAT=json: every line one JSON object (time, level, logger, message and the record's extra fields).
LOG_FORMAT = env_str("LOG_FORMAT", "text")
if LOG_FORMAT not in ("text", "json"):
    raise ImproperlyConfigured(f"LOG_FORMAT must be text or json, not {LOG_FORMAT!r}")
# One line per request (nli.requests) and per job state change (nli.jobs): on with JSON logs, or when asked.
LOG_REQUESTS = env_bool("LOG_REQUESTS", LOG_FORMAT == "json")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "{levelname}{name}{message}",
            "style": "{",
            "timestamp": "time",
            "rename_fields": {"levelname": "level", "name": "logger"},
        }
    },
    "filters": {"refusals_in_one_line": {"()": "common.log_filters.RefusalsInOneLine"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["refusals_in_one_line"],
            **({"formatter": "json"} if LOG_FORMAT == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "WARNING")},
    "loggers": {
        # botocore's DEBUG lines print each signed request's headers, the MTurk access key ID among them.
        "botocore": {"level": "INFO"},
        **({"nli.requests": {"level": "INFO"}, "nli.jobs": {"level": "INFO"}} if LOG_REQUESTS else {}),
    },
}
# /metrics answers loopback and these addresses or networks (comma-separated, e.g. 10.0.0.5,10.1.0.0/16).
METRICS_ALLOWED_ADDRESSES = env_list("METRICS_ALLOWED_ADDRESSES")
# /readyz waits this long for the storage's write-and-read-back probe before it says "timed out".
READYZ_STORAGE_TIMEOUT = float(env_str("READYZ_STORAGE_TIMEOUT", "5"))

# Security and deployment
# Behind a TLS-terminating reverse proxy (docs/deploying.md lists the production environment). Every
# variable is named like the setting it sets; set but empty counts as unset.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# A load balancer's and Prometheus's plain-HTTP probes reach the app directly, not through the TLS proxy.
SECURE_REDIRECT_EXEMPT = [r"^(healthz|readyz|metrics)$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
# "HTTP_X_FORWARDED_PROTO,https": the header the proxy sets and the value that means the client used TLS.
_proxy_ssl_header = env_list("SECURE_PROXY_SSL_HEADER")
if _proxy_ssl_header and len(_proxy_ssl_header) != 2:
    raise ImproperlyConfigured(
        "SECURE_PROXY_SSL_HEADER must be two comma-separated parts, e.g. HTTP_X_FORWARDED_PROTO,https"
    )
SECURE_PROXY_SSL_HEADER = tuple(_proxy_ssl_header) or None
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")
# How many proxies in front of the app append to X-Forwarded-For; 0 (default): REMOTE_ADDR is the client.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
# Pages may be framed by nobody; one view may name its own frame ancestors (common.middleware.allow_framing_by).
CSP_FRAME_ANCESTORS = "'none'"

MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.common.CommonMiddleware"), "common.middleware.ApiJsonErrorMiddleware"
)
MIDDLEWARE.insert(
    MIDDLEWARE.index("common.middleware.ApiJsonErrorMiddleware") + 1, "common.middleware.DatabaseRetryMiddleware"
)
# After the two above: its process_exception runs before theirs (Django calls them from the last up).
MIDDLEWARE.insert(
    MIDDLEWARE.index("common.middleware.DatabaseRetryMiddleware") + 1, "common.middleware.ServiceUnavailableMiddleware"
)
MIDDLEWARE.insert(
    MIDDLEWARE.index("django.middleware.clickjacking.XFrameOptionsMiddleware") + 1,
    "common.middleware.ContentSecurityPolicyMiddleware",
)

# Login throttling (django-axes keeps the failures): per username and address as above; against spraying
# one password over many usernames, an address that failed on LOGIN_SPRAY_USERNAME_LIMIT usernames may log in
# only with usernames that logged in from it before, and one past LOGIN_ADDRESS_FAILURE_CAP failures not at
# all, until the cool-off ends (core.login_limits.spray_refusal); 429 with Retry-After.
AXES_CLIENT_IP_CALLABLE = "core.login_limits.client_ip"
AXES_HANDLER = "core.login_limits.SprayAwareHandler"
AXES_LOCKOUT_CALLABLE = "core.login_limits.locked_out_page"
LOGIN_SPRAY_USERNAME_LIMIT = env_int("LOGIN_SPRAY_USERNAME_LIMIT", 20)
LOGIN_ADDRESS_FAILURE_CAP = env_int("LOGIN_ADDRESS_FAILURE_CAP", 200)

# API use per client: anonymous calls per address, authenticated ones per user (rates like "60/minute").
API_THROTTLE_RATES = {
    "anon": env_str("API_ANON_RATE", "120/minute"),
    "user": env_str("API_USER_RATE", "1200/minute"),
}
SPECTACULAR_SETTINGS.update(
    {
        "PREPROCESSING_HOOKS": ["common.api_schema.only_versioned_paths"],
        # The default hook (enum components) stays first; links are added to the finished schema.
        "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "common.api_schema.declare_links"],
        "VERSION": "1.0.0",
    }
)
REST_FRAMEWORK.update(
    {
        "DEFAULT_SCHEMA_CLASS": "common.api_schema.ErrorsDeclaredSchema",
        "EXCEPTION_HANDLER": "common.api_errors.api_exception_handler",
        "DEFAULT_METADATA_CLASS": "common.api_metadata.RouteMetadata",
        "DEFAULT_THROTTLE_CLASSES": ["core.throttles.AnonymousThrottle", "core.throttles.UserThrottle"],
    }
)
# Throttle counts are shared by every web process when Redis is there.
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
    if REDIS_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
}
