"""Settings: every value comes from the environment (see .env.example)."""

from __future__ import annotations

import secrets
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from evalsite.env import env_bool, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("EVALSITE_VAR_DIR", str(BASE_DIR / "var")))
VAR_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", default=False)


def _secret_key() -> str:
    key = env_str("SECRET_KEY")
    if key:
        return key
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set and DEBUG is off: set SECRET_KEY (or DEBUG=1 for development)"
        )
    key_file = VAR_DIR / "secret_key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(50))
    return key_file.read_text().strip()


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_htmx",
    "template_partials",
    "evalsite",
    "datasets",
    "judges",
    "evaluations",
    "targets",
    "axes",
    "api",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its 429 page.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"

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
            ],
        },
    },
]


def _database() -> dict:
    url = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'evalsite.sqlite3'}")
    try:
        config = dj_database_url.parse(url, conn_max_age=60)
    except Exception as exc:  # dj_database_url raises bare ValueErrors / KeyErrors
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} cannot be parsed: {exc}") from None
    if config["ENGINE"] == "django.db.backends.sqlite3":
        # Worker threads write concurrently: WAL + immediate transactions avoid "database is locked".
        config["CONN_MAX_AGE"] = 0
        config["OPTIONS"] = {
            "timeout": 60,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
        if config["NAME"] != ":memory:":
            # The test database is a file beside it, not Django's in-memory default: the engine's
            # threads and a test's worker processes must all see the same database.
            name = Path(config["NAME"])
            config["TEST"] = {"NAME": str(name.with_name(f"test-{name.name}"))}
    return config


DATABASES = {"default": _database()}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# django-axes checks the lockout before the password is looked at (its backend comes first).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "evalsite.staticfinders.PlotlyFinder",  # vendor/plotly.min.js from the plotly package
]
STATIC_ROOT = VAR_DIR / "staticfiles"
STATIC_ROOT.mkdir(exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        "httpx": {"level": "WARNING"},
        "openai": {"level": "WARNING"},
        "anthropic": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
    },
}

# --- Running behind HTTPS (all off by default: `make run` serves plain HTTP on localhost) ----
# docker-compose.yml turns them on; `manage.py check --deploy` is clean with them on.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=False)
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("SECURE_COOKIES", default=False)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)
# A reverse proxy ends TLS and forwards plain HTTP: trust its X-Forwarded-Proto (only behind one,
# or any client could claim HTTPS) and take the client's address from X-Forwarded-For.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("SECURE_PROXY_SSL_HEADER") else None
EVALSITE_TRUSTED_PROXIES = env_int("TRUSTED_PROXIES", 0)

# --- Login throttling (django-axes) -----------------------------------------
# Failures count per (account, address) pair: a guesser is locked out of that account from that
# address, while the account's owner elsewhere, and other accounts from the same office NAT, still
# get in (locking the account everywhere would hand anyone a way to lock out its owner).
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_LOCKOUT_MINUTES", 15, minimum=1))
AXES_RESET_ON_SUCCESS = True
AXES_CLIENT_IP_CALLABLE = "evalsite.client_ip.client_ip"
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False  # else a banner on stderr at every start of every command

# --- Celery ---------------------------------------------------------------
# Default: kombu's filesystem transport under var/, so the embedded mode needs no server.
# The host part means nothing to it; naming one keeps kombu from warning "No hostname was supplied".
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "filesystem://localhost/")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _queue_dir = VAR_DIR / "broker"
    for sub in ("queue", "processed", "control"):
        (_queue_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_queue_dir / "queue"),
        "data_folder_out": str(_queue_dir / "queue"),
        "processed_folder": str(_queue_dir / "processed"),
        "control_folder": str(_queue_dir / "control"),
        "store_processed": False,
        # The worker fetches a prefetch-full of messages per poll: kombu's default 1 s capped
        # embedded runs at 4 items/s with 4 threads. Idle cost: a directory listing 10×/s.
        "polling_interval": 0.1,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)}
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]

# Run engine (evaluations/engine.py, evaluations/services/). Every process that holds items renews
# their leases (EVALSITE_ITEM_LEASE_SECONDS) every third of it, so a short lease only means a dead
# worker is noticed sooner (evaluations/leases.py). The reaper (a thread in every worker, every
# EVALSITE_REAP_INTERVAL_SECONDS; 0 turns it off) re-sends the items of a process whose leases
# expired, re-sends items queued longer than EVALSITE_REQUEUE_AFTER_SECONDS that no process took
# (messages lost by the broker), and gives up on an item after EVALSITE_MAX_ITEM_ATTEMPTS claims.
# Defaults: a killed worker's items are back in the queue within 40 s of its last beat.
# `evaluate --wait` gives up on a run no worker picked up within EVALSITE_QUEUE_TIMEOUT_SECONDS.
EVALSITE_ITEM_LEASE_SECONDS = env_int("EVALSITE_ITEM_LEASE_SECONDS", 30, minimum=1)
EVALSITE_REQUEUE_AFTER_SECONDS = env_int("EVALSITE_REQUEUE_AFTER_SECONDS", 900, minimum=1)
EVALSITE_REAP_INTERVAL_SECONDS = env_int("EVALSITE_REAP_INTERVAL_SECONDS", 10, minimum=0)
EVALSITE_MAX_ITEM_ATTEMPTS = env_int("EVALSITE_MAX_ITEM_ATTEMPTS", 5, minimum=1)
EVALSITE_QUEUE_TIMEOUT_SECONDS = env_int("EVALSITE_QUEUE_TIMEOUT_SECONDS", 60, minimum=1)

# Shared state for rate limits across worker processes. Empty: in-process limiter (embedded mode).
REDIS_URL = env_str("REDIS_URL", CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "")

# --- Application ----------------------------------------------------------
DATASET_MAX_UPLOAD_BYTES = env_int("DATASET_MAX_UPLOAD_BYTES", 50 * 1024 * 1024, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
JUDGE_MAX_ATTEMPTS = env_int("JUDGE_MAX_ATTEMPTS", 4, minimum=1)
JUDGE_BACKOFF_BASE_SECONDS = float(env_str("JUDGE_BACKOFF_BASE_SECONDS", "0.5"))

REST_FRAMEWORK = {
    # Personal tokens (`Authorization: Token <key>` or `Bearer <key>`), then the pages' own session
    # (CSRF enforced). See api/authentication.py.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.ApiTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "api.pagination.ApiPagination",
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "EXCEPTION_HANDLER": "api.errors.api_exception_handler",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "evalsite API",
    "DESCRIPTION": "Upload datasets, start and follow evaluation runs, read results, review claims, compare runs "
    "and gate CI. Authenticate with `Authorization: Token <key>` (create one at /account/tokens/).",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI and Redoc from our own static files (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "evaluations.models.RunStatus",
        "ItemStatusEnum": "evaluations.models.ItemStatus",
        "VerdictEnum": "evaluations.models.Verdict",
        "ProviderEnum": "judges.models.Provider",
        "CallbackStatusEnum": "api.models.CallbackStatus",
    },
}
# A run's callback_url: private and loopback addresses are refused unless this is on (tests, a LAN).
API_CALLBACK_ALLOW_PRIVATE = env_bool("API_CALLBACK_ALLOW_PRIVATE", default=False)
API_CALLBACK_MAX_ATTEMPTS = env_int("API_CALLBACK_MAX_ATTEMPTS", 6, minimum=1)
# Delay before retry n is BACKOFF * 2**(n-1) seconds (10 s, 20 s, 40 s, ... by default).
API_CALLBACK_BACKOFF_SECONDS = env_float("API_CALLBACK_BACKOFF_SECONDS", 10.0)
API_CALLBACK_TIMEOUT_SECONDS = env_float("API_CALLBACK_TIMEOUT_SECONDS", 10.0, minimum=0.1)
