"""Settings for agentstate, read from the environment with working defaults.

With no variable set the service runs on a SQLite file in the checkout; ``DATABASE_URL`` selects
PostgreSQL and ``REDIS_URL`` moves the cache and the working state to Redis.
"""

import os
import re
import socket
from pathlib import Path
from typing import Any, cast

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.retry import Retry

BASE_DIR = Path(__file__).resolve().parent.parent
# Files the service writes (the SQLite database, collected static files) go to the checkout when it
# runs from one, else to the current directory: never into an installed package's directory.
DATA_DIR = BASE_DIR if (BASE_DIR / "manage.py").is_file() else Path.cwd()


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


# DJANGO_ENV=production turns on the deployment settings at the end of this file and refuses to
# start without a real secret key and an explicit host list.
PRODUCTION = os.environ.get("DJANGO_ENV", "development").strip().lower() == "production"
DEBUG = env_bool("DJANGO_DEBUG", not PRODUCTION)
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY") or "django-insecure-development-only-key-change-me"
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1,[::1],testserver")
if PRODUCTION:
    if SECRET_KEY.startswith("django-insecure") or len(set(SECRET_KEY)) < 5 or len(SECRET_KEY) < 50:
        raise ImproperlyConfigured(
            "DJANGO_ENV=production needs DJANGO_SECRET_KEY: at least 50 random characters, e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(64))'"
        )
    if not os.environ.get("DJANGO_ALLOWED_HOSTS"):
        raise ImproperlyConfigured("DJANGO_ENV=production needs DJANGO_ALLOWED_HOSTS (comma-separated).")

# The framework backends (backends/): one app each, which registers itself with the core; the core
# runs with any subset. AGENTSTATE_BACKENDS names the ones installed (comma-separated; default all).
BACKENDS = {"langgraph": "backends.langgraph", "adk": "backends.adk", "openai_agents": "backends.openai_agents"}
BACKENDS_INSTALLED = env_list("AGENTSTATE_BACKENDS", ",".join(BACKENDS))
if set(BACKENDS_INSTALLED) - BACKENDS.keys():
    raise ImproperlyConfigured(
        f"AGENTSTATE_BACKENDS names no backend {sorted(set(BACKENDS_INSTALLED) - BACKENDS.keys())}: "
        f"choose from {', '.join(BACKENDS)}."
    )

INSTALLED_APPS = [
    "agentstate_site.apps.AgentStateAdminConfig",  # django.contrib.admin with our admin site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework_api_key",  # its abstract key model, hasher and admin (agentstate.tenancy.APIKey)
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "agentstate",
    "agentstate.tenancy",
    "agentstate.holds",
    "sessions_app",
    "userdata_app",
    "userdata_app.memory",
    "userdata_app.access_log",
    *(app for name, app in BACKENDS.items() if name in BACKENDS_INSTALLED),
    "agentstate_site",
]

MIDDLEWARE = [
    "agentstate.middleware.RequestLogMiddleware",
    "agentstate.middleware.UnavailableMiddleware",  # a page the database failed under: 503 and Retry-After
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Django's session, authentication and messages middleware, skipped by a request to the API that
    # names an API key (agentstate.middleware: the key alone answers for it).
    "agentstate.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "agentstate.middleware.AuthenticationMiddleware",
    "agentstate.access.ViewerMiddleware",  # what a login may read, for as long as its page renders
    "agentstate.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "agentstate_site.urls"
WSGI_APPLICATION = "agentstate_site.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The checkout's templates/ folder; an installed wheel carries it as agentstate/templates.
        "DIRS": [BASE_DIR / "templates", BASE_DIR / "agentstate" / "templates"],
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


# --- Database -------------------------------------------------------------------------------
def database_url_parse(url: str, **options: Any) -> dj_database_url.DBConfig:
    """``dj_database_url.parse``, and also libpq's multi-host form, which it refuses:
    ``postgres://user@h1:5432,h2:5433/db?target_session_attrs=read-write`` becomes HOST "h1,h2" and
    PORT "5432,5433", which libpq tries in turn (docs/SCALING.md, "Failover")."""
    scheme, separator, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0]
    credentials, at, hosts = netloc.rpartition("@")
    if not separator or "," not in hosts:
        return dj_database_url.parse(url, **options)
    names, ports = [], []
    for host in hosts.split(","):
        match = re.fullmatch(r"(\[[0-9a-fA-F:.]+\]|[^:\[\]]+)(?::(\d{1,5}))?", host)
        if not match or not 0 < int(match[2] or 1) < 65536:
            raise ImproperlyConfigured(f"DATABASE_URL: {host!r} is not a host or host:port.")
        names.append(match[1].strip("[]"))  # libpq takes an IPv6 address bare
        ports.append(match[2] or "")
    first = f"{names[0]}:{ports[0]}" if ports[0] else names[0]
    config = dj_database_url.parse(f"{scheme}://{credentials}{at}{first}{rest[len(netloc) :]}", **options)
    # libpq takes one port for every host or one per host; an empty one means its default, 5432.
    config["HOST"] = ",".join(names)
    config["PORT"] = ",".join(port or "5432" for port in ports) if any(ports) else ""
    return config


SQLITE_PATH = Path(os.environ.get("AGENTSTATE_SQLITE_PATH") or DATA_DIR / "agentstate.sqlite3")
DATABASES = {
    "default": database_url_parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{SQLITE_PATH}",
        conn_max_age=int(os.environ.get("DJANGO_CONN_MAX_AGE", "60")),
        # A health check costs one round trip (SELECT 1) at the start of every request that uses
        # the database; without it a request after a database restart fails once per process.
        conn_health_checks=env_bool("DJANGO_CONN_HEALTH_CHECKS", True),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # IMMEDIATE transactions take the write lock up front, so concurrent writers queue instead
    # of failing with "database is locked"; secure_delete overwrites erased rows in the file.
    # Connections persist for DJANGO_CONN_MAX_AGE like PostgreSQL's: opening one (and running
    # these pragmas) and closing it was the largest single cost of a small API request.
    DATABASES["default"]["OPTIONS"] = {
        "transaction_mode": "IMMEDIATE",
        "timeout": 20,
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA secure_delete=ON",
    }

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Bounded waits (docs/SCALING.md, "Every wait is bounded") --------------------------------
# Seconds, each below the proxy's timeout (a threaded worker's requests are bounded by these, not
# by gunicorn's): a request that would wait longer gets a 503 with Retry-After (agentstate.api.errors).
# PostgreSQL applies the first three to the app's own sessions: sent at connect time here, and
# through PgBouncer (which drops these startup options) by its per-database connect_query.
DATABASE_STATEMENT_TIMEOUT = float(os.environ.get("DATABASE_STATEMENT_TIMEOUT", "10"))
DATABASE_IDLE_IN_TRANSACTION_TIMEOUT = float(os.environ.get("DATABASE_IDLE_IN_TRANSACTION_TIMEOUT", "8"))
DATABASE_LOCK_TIMEOUT = float(os.environ.get("DATABASE_LOCK_TIMEOUT", "5"))
# A host that stops answering on a kept connection (CONN_MAX_AGE) is given up after about
# KEEPALIVES_IDLE + KEEPALIVES_INTERVAL * KEEPALIVES_COUNT seconds of silence, or TCP_USER_TIMEOUT
# seconds of data it does not acknowledge; a new connection after CONNECT_TIMEOUT (libpq's least: 2).
DATABASE_KEEPALIVES_IDLE = int(os.environ.get("DATABASE_KEEPALIVES_IDLE", "3"))
DATABASE_KEEPALIVES_INTERVAL = int(os.environ.get("DATABASE_KEEPALIVES_INTERVAL", "1"))
DATABASE_KEEPALIVES_COUNT = int(os.environ.get("DATABASE_KEEPALIVES_COUNT", "3"))
DATABASE_TCP_USER_TIMEOUT = float(os.environ.get("DATABASE_TCP_USER_TIMEOUT", "6"))
DATABASE_CONNECT_TIMEOUT = int(os.environ.get("DATABASE_CONNECT_TIMEOUT", "2"))
# Long jobs (migrate, erase_user, apply_retention, reapply_erasures, erasure_storage_cleanup) run
# their transactions under these instead (agentstate.db_waits.job_timeouts; docs/OPERATIONS.md).
DATABASE_JOB_STATEMENT_TIMEOUT = float(os.environ.get("DATABASE_JOB_STATEMENT_TIMEOUT", "3600"))
DATABASE_JOB_LOCK_TIMEOUT = float(os.environ.get("DATABASE_JOB_LOCK_TIMEOUT", "60"))


def postgres_wait_options() -> dict[str, object]:
    """libpq connection options bounding every wait of a PostgreSQL connection (above)."""
    server = {
        "statement_timeout": DATABASE_STATEMENT_TIMEOUT,
        "lock_timeout": DATABASE_LOCK_TIMEOUT,
        "idle_in_transaction_session_timeout": DATABASE_IDLE_IN_TRANSACTION_TIMEOUT,
    }
    return {
        "connect_timeout": DATABASE_CONNECT_TIMEOUT,
        "keepalives": 1,
        "keepalives_idle": DATABASE_KEEPALIVES_IDLE,
        "keepalives_interval": DATABASE_KEEPALIVES_INTERVAL,
        "keepalives_count": DATABASE_KEEPALIVES_COUNT,
        "tcp_user_timeout": round(DATABASE_TCP_USER_TIMEOUT * 1000),
        "options": " ".join(f"-c {name}={round(seconds * 1000)}" for name, seconds in server.items()),
    }


if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Options the URL names itself (?options=..., ?connect_timeout=...) win.
    DATABASES["default"]["OPTIONS"] = {**postgres_wait_options(), **DATABASES["default"].get("OPTIONS", {})}

# --- Scale-out: read replicas and a transaction-pooling PgBouncer (docs/SCALING.md) ---------
# DATABASE_REPLICA_URLS: streaming replicas of DATABASE_URL, comma-separated; each becomes an alias
# "replica1", "replica2", ... that agentstate.db_router sends lag-tolerant reads to. In tests each
# is a mirror of the primary's test database (no test database is created on a replica).
DATABASE_REPLICAS: list[str] = []
for _number, _url in enumerate(env_list("DATABASE_REPLICA_URLS", ""), start=1):
    _replica = dj_database_url.parse(
        _url,
        conn_max_age=DATABASES["default"]["CONN_MAX_AGE"],
        conn_health_checks=DATABASES["default"]["CONN_HEALTH_CHECKS"],
    )
    if _replica["ENGINE"] != DATABASES["default"]["ENGINE"]:
        raise ImproperlyConfigured("DATABASE_REPLICA_URLS must name databases of the same kind as DATABASE_URL.")
    if _replica["ENGINE"] == "django.db.backends.postgresql":
        # A replica that does not answer is skipped after these waits (and AGENTSTATE_REPLICA_TIMEOUT
        # below), its reads going to the primary.
        _replica["OPTIONS"] = {**postgres_wait_options(), **_replica.get("OPTIONS", {})}
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES[f"replica{_number}"] = _replica
    DATABASE_REPLICAS.append(f"replica{_number}")
# Django's PostgreSQL backend, but a commit that synchronous replication did not confirm is an
# error, never a success, and a commit waits at most COMMIT_TIMEOUT seconds for a synchronous
# standby (agentstate.postgresql.base; docs/SCALING.md, "Failover").
for _alias in DATABASES:
    if DATABASES[_alias]["ENGINE"] == "django.db.backends.postgresql":
        DATABASES[_alias]["ENGINE"] = "agentstate.postgresql"
        # The backend's own key (Django keeps keys it does not know), not one of psycopg's OPTIONS.
        cast(dict[str, Any], DATABASES[_alias])["COMMIT_TIMEOUT"] = float(
            os.environ.get("AGENTSTATE_COMMIT_TIMEOUT_SECONDS", "5")
        )
DATABASE_ROUTERS = ["agentstate.db_router.ReplicaRouter"]
# Marks callers that wrote; it needs request.user, so it goes right after authentication.
MIDDLEWARE.insert(
    MIDDLEWARE.index("agentstate.middleware.AuthenticationMiddleware") + 1,
    "agentstate.db_router.ReadYourWritesMiddleware",
)
# Apps whose rows are never read from a replica, even inside replica_reads: user data and the
# erasure workflow (its preview, receipts, exports), and the cache table (read-your-writes markers).
DATABASE_PRIMARY_ONLY_APPS = ["userdata_app", "django_cache", "access_log"]
# A replica further behind than this (seconds of replay lag) is skipped; each process checks a
# replica at most once per REPLICA_CHECK_SECONDS; a caller that wrote reads from the primary for
# READ_YOUR_WRITES_SECONDS, which must exceed the other two together (agentstate.db_router).
REPLICA_MAX_LAG_SECONDS = float(os.environ.get("AGENTSTATE_REPLICA_MAX_LAG_SECONDS", "2"))
REPLICA_CHECK_SECONDS = float(os.environ.get("AGENTSTATE_REPLICA_CHECK_SECONDS", "1"))
READ_YOUR_WRITES_SECONDS = float(os.environ.get("AGENTSTATE_READ_YOUR_WRITES_SECONDS", "5"))
# A read on a replica (its lag check, a listing) that has not finished after this many seconds is
# abandoned and run on the primary: a stopped or frozen replica server may still have its kernel
# acknowledge every packet, which no keepalive notices (agentstate.db_router).
REPLICA_TIMEOUT_SECONDS = float(os.environ.get("AGENTSTATE_REPLICA_TIMEOUT", "3"))
if READ_YOUR_WRITES_SECONDS <= REPLICA_MAX_LAG_SECONDS + REPLICA_CHECK_SECONDS:
    raise ImproperlyConfigured(
        "AGENTSTATE_READ_YOUR_WRITES_SECONDS must exceed AGENTSTATE_REPLICA_MAX_LAG_SECONDS + "
        "AGENTSTATE_REPLICA_CHECK_SECONDS, or a caller could miss its own write on a replica."
    )
# DATABASE_TRANSACTION_POOLING=true when the URLs lead to PgBouncer in transaction mode: no
# server-side cursors (outside a transaction Django declares them WITH HOLD, which outlives the
# pooled server connection) and no prepared statements (a pooled server connection may not have
# them): the hot statements agentstate.postgresql prepares go client-bound, as the ORM's always do
# (Django 5.2 sets psycopg's prepare_threshold to None unless OPTIONS ask for it).
if env_bool("DATABASE_TRANSACTION_POOLING", False):
    for _alias in DATABASES:
        DATABASES[_alias]["DISABLE_SERVER_SIDE_CURSORS"] = True
        cast(dict[str, Any], DATABASES[_alias])["PREPARED_STATEMENTS"] = False
# --- end of scale-out -----------------------------------------------------------------------

# --- Operations: what operators see (agentstate.operators, agentstate.metrics) -------------------
# /metrics and the details of /healthz are for operators: a staff login (as the admin), or a scraper
# sending "Authorization: Bearer <AGENTSTATE_OPERATOR_TOKEN>" (unset: staff only).
OPERATOR_TOKEN = os.environ.get("AGENTSTATE_OPERATOR_TOKEN", "").strip()
if OPERATOR_TOKEN and (len(OPERATOR_TOKEN) < 32 or len(set(OPERATOR_TOKEN)) < 5):
    raise ImproperlyConfigured("AGENTSTATE_OPERATOR_TOKEN must be at least 32 random characters.")
# A replica in recovery that has received no WAL for this long while the primary moved on is
# reported lost (it cannot catch up by itself: rebuild it), not only skipped.
REPLICA_LOST_SECONDS = float(os.environ.get("AGENTSTATE_REPLICA_LOST_SECONDS", "30"))
# PgBouncer's admin console (a stats_users role), read for pool saturation: SHOW POOLS.
PGBOUNCER_ADMIN_URL = os.environ.get("AGENTSTATE_PGBOUNCER_ADMIN_URL", "").strip()
# OpenTelemetry spans of requests, SQL statements and Redis commands (agentstate_site.tracing, the
# otel extra): on when an OTLP endpoint is set, in OpenTelemetry's own variables (which also say
# where and how to send), unless OTEL_SDK_DISABLED=true. Unset, nothing is instrumented.
TRACING = (
    bool(
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
        or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    )
    and os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() != "true"
)

# --- Cache and working state ----------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
# Every Redis wait is bounded (docs/SCALING.md, "Every wait is bounded"): a frozen or unreachable
# Redis answers the caller within these seconds, never holds a worker's thread until the proxy gives up.
REDIS_SOCKET_TIMEOUT = float(os.environ.get("REDIS_SOCKET_TIMEOUT", "1.5"))
REDIS_CONNECT_TIMEOUT = float(os.environ.get("REDIS_CONNECT_TIMEOUT", "0.5"))
# redis-py's connection-pool options, for the cache and the working state alike: keepalives as
# the database's; a connection idle for 15 s is pinged before use; a command whose connection broke
# (Redis restarted) is sent once more on a new one, one that timed out never is.
REDIS_OPTIONS: dict[str, Any] = {
    "socket_timeout": REDIS_SOCKET_TIMEOUT,
    "socket_connect_timeout": REDIS_CONNECT_TIMEOUT,
    "socket_keepalive": True,
    "socket_keepalive_options": {
        option: value
        for name, value in (("TCP_KEEPIDLE", 3), ("TCP_KEEPINTVL", 1), ("TCP_KEEPCNT", 3))
        if (option := getattr(socket, name, None)) is not None
    },
    "health_check_interval": 15,
    "retry": Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
}
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": REDIS_OPTIONS,
        }
    }
else:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "agentstate_cache",
        }
    }

# Working state: "database" (a table of its own, never culled) or "redis" (needs REDIS_URL).
WORKING_STATE_BACKEND = os.environ.get("AGENTSTATE_WORKING_STATE_BACKEND", "redis" if REDIS_URL else "database")
WORKING_STATE_TTL_SECONDS = int(os.environ.get("AGENTSTATE_WORKING_STATE_TTL", "86400"))
# Keys plus JSON values of one session's working state, in characters (patches cannot grow past it).
WORKING_STATE_MAX_BYTES = int(os.environ.get("AGENTSTATE_WORKING_STATE_MAX_BYTES", str(5 * 1024 * 1024)))
# --- Erasure (userdata_app.erasure) ---------------------------------------------------------
# Receipts and the erased-subject registry keep HMAC-SHA256 hashes of subjects under keys of their
# own, never SECRET_KEY: AGENTSTATE_ERASURE_HMAC_KEYS="k1:secret,k2:secret". New hashes use
# AGENTSTATE_ERASURE_HMAC_KEY_ID (default: the last key listed); retired keys stay listed so older
# hashes can still be matched. Only DEBUG gets a development key; without keys erasure refuses.
ERASURE_HMAC_KEYS: dict[str, str] = {}
for _item in env_list("AGENTSTATE_ERASURE_HMAC_KEYS", ""):
    _key_id, _, _secret = _item.partition(":")
    if not _key_id.strip() or len(_secret.strip()) < 16:
        raise ImproperlyConfigured(
            "AGENTSTATE_ERASURE_HMAC_KEYS is a comma-separated list of key_id:secret, "
            "each secret at least 16 characters."
        )
    ERASURE_HMAC_KEYS[_key_id.strip()] = _secret.strip()
# Receipts signed with it say so on the page, and so does the dashboard while it is in use.
ERASURE_DEVELOPMENT_KEY_ID = "dev"
if not ERASURE_HMAC_KEYS and DEBUG:
    ERASURE_HMAC_KEYS = {ERASURE_DEVELOPMENT_KEY_ID: "development-only-erasure-key-never-use-in-production"}
ERASURE_HMAC_KEY_ID = os.environ.get("AGENTSTATE_ERASURE_HMAC_KEY_ID", "").strip() or next(
    reversed(ERASURE_HMAC_KEYS), ""
)
if ERASURE_HMAC_KEYS and ERASURE_HMAC_KEY_ID not in ERASURE_HMAC_KEYS:
    raise ImproperlyConfigured(
        f"AGENTSTATE_ERASURE_HMAC_KEY_ID {ERASURE_HMAC_KEY_ID!r} is not in AGENTSTATE_ERASURE_HMAC_KEYS."
    )
# After an erasure, writes that would recreate the subject's data are refused for this long.
ERASURE_GRACE_HOURS = float(os.environ.get("AGENTSTATE_ERASURE_GRACE_HOURS", "24"))
# A subject-access request is due this many calendar months after receipt (GDPR Art. 12(3): one).
ACCESS_REQUEST_DUE_MONTHS = int(os.environ.get("AGENTSTATE_ACCESS_REQUEST_DUE_MONTHS", "1"))
# The access log keeps entries this long; manage.py prune_access_log removes older ones (a prefix
# of each tenant's chain) and writes the anchor verification accounts for them with.
ACCESS_LOG_RETENTION_DAYS = float(os.environ.get("AGENTSTATE_ACCESS_LOG_RETENTION_DAYS", "730"))


# --- Auth, i18n, static ---------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# A refused CSRF check answers by path too (agentstate_site.errors): JSON under /api/.
CSRF_FAILURE_VIEW = "agentstate_site.errors.csrf_failure"

LANGUAGE_CODE = "en-us"
FORMAT_MODULE_PATH = ["agentstate.formats"]  # ISO dates and times on every page
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT") or DATA_DIR / "staticfiles")
STORAGES: dict[str, dict[str, Any]] = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# --- Artifacts (ADK's artifact service, backends.adk.people.artifacts): bytes kept through the storage
# alias "artifacts", in a directory by default, in an S3-compatible bucket when one is named
# (django-storages; boto3 reads its credentials from the environment, AWS_ACCESS_KEY_ID ...).
ARTIFACT_MAX_BYTES = int(os.environ.get("AGENTSTATE_ARTIFACT_MAX_BYTES", str(3 * 1024 * 1024)))
ARTIFACTS_DIR = Path(os.environ.get("AGENTSTATE_ARTIFACTS_DIR") or DATA_DIR / "artifacts")
ARTIFACTS_S3_BUCKET = os.environ.get("AGENTSTATE_ARTIFACTS_S3_BUCKET", "")
if ARTIFACTS_S3_BUCKET:
    STORAGES["artifacts"] = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": ARTIFACTS_S3_BUCKET,
            "endpoint_url": os.environ.get("AGENTSTATE_ARTIFACTS_S3_ENDPOINT_URL") or None,
            "region_name": os.environ.get("AGENTSTATE_ARTIFACTS_S3_REGION") or None,
            "location": os.environ.get("AGENTSTATE_ARTIFACTS_S3_PREFIX", ""),
            "file_overwrite": False,
            "default_acl": None,
        },
    }
else:
    STORAGES["artifacts"] = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": ARTIFACTS_DIR, "directory_permissions_mode": 0o700, "file_permissions_mode": 0o600},
    }

# --- REST API (agentstate.api): API keys, one JSON error shape, cursor pagination ---------------
# JSON bodies larger than this get a 413 (agentstate.api.parsers); a 500-message append fits.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("AGENTSTATE_MAX_BODY_BYTES", str(5 * 1024 * 1024)))
# A page of more than 500 rows of the history or session list (up to 2,000), and every page of an
# ADK session's events, ends early once its rows hold this much JSON (at least one row per page,
# whatever its size).
PAGE_MAX_BYTES = int(os.environ.get("AGENTSTATE_PAGE_MAX_BYTES", str(4 * 1024 * 1024)))
# Each worker keeps the vectors of the scopes it searches by meaning up to this many MiB
# (userdata_app/memory/vector_cache.py); 0 keeps none.
MEMORY_VECTOR_CACHE_MB = float(os.environ.get("AGENTSTATE_MEMORY_VECTOR_CACHE_MB", "256"))
# Verified API keys are kept in each process for this long: a revoked key keeps working in other
# processes for at most this many seconds (the process that revokes it forgets it at once).
API_KEY_CACHE_SECONDS = float(os.environ.get("AGENTSTATE_API_KEY_CACHE_SECONDS", "30"))
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "agentstate.api.authentication.ApiKeyAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["agentstate.api.permissions.IsTenantCaller"],
    "DEFAULT_PARSER_CLASSES": ["agentstate.api.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": [
        "agentstate.api.renderers.JSONRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_CONTENT_NEGOTIATION_CLASS": "agentstate.api.negotiation.ContentNegotiation",
    "DEFAULT_THROTTLE_CLASSES": ["agentstate.api.throttling.ApiKeyRateThrottle"],
    # e.g. "6000/minute" per API key (or staff user); unset means no throttling (and no cache hit).
    "DEFAULT_THROTTLE_RATES": {"api_key": os.environ.get("AGENTSTATE_API_RATE") or None},
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "agentstate.api.schema.AutoSchema",
    "EXCEPTION_HANDLER": "agentstate.api.errors.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "agentstate API",
    "DESCRIPTION": (
        "Sessions, message history, rounds, checkpoints, working state and user data of AI agents. "
        "Authenticate with `Authorization: Api-Key <key>` or `X-Api-Key: <key>`. Every error is "
        '`{"error": {"code", "message", "fields"}}`.'
    ),
    "VERSION": "1",
    # One section per resource in the docs (agentstate.api.schema.AutoSchema.get_tags), in this order.
    "TAGS": [
        {"name": "sessions", "description": "Create, read, list, update, end and delete sessions."},
        {
            "name": "messages",
            "description": "A session's ordered message history; the OpenAI Agents SDK backend "
            "(AgentStateSession) stores its items here, one message per item.",
        },
        {"name": "rounds", "description": "Per-round state snapshots."},
        {"name": "checkpoints", "description": "Labelled snapshots that outlive the session's working state."},
        {"name": "working state", "description": "A live session's short-lived scratch keys."},
        {"name": "transitions", "description": "Hand-offs between agents within a session."},
        {"name": "user data", "description": "Facts about a person, kept apart from process state."},
        {"name": "fork", "description": "Copy a session's history up to a point into a new session."},
        {
            "name": "usage",
            "description": "Model usage per turn of a session (the OpenAI Agents SDK's store_run_usage).",
        },
        {"name": "memories", "description": "Full-text search over a person's memory items."},
        {"name": "store", "description": "LangGraph's long-term store (AgentStateStore) and ADK's memory service."},
        {
            "name": "adk",
            "description": "Google ADK's session, state and artifact services (AgentStateSessionService, "
            "AgentStateArtifactService).",
        },
        {"name": "langgraph", "description": "LangGraph's checkpointer (AgentStateSaver): checkpoints and writes."},
        {"name": "compliance", "description": "Subject access exports (compliance keys)."},
        {"name": "key", "description": "The calling API key: its tenant, scope and person."},
        {"name": "health", "description": "Whether this process can serve."},
    ],
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and ReDoc come from drf-spectacular-sidecar: the docs page works offline.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Request logs: one JSON line per request (agentstate.middleware), never keys or contents ----
LOG_LEVEL = os.environ.get("DJANGO_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {
        "request_context": {"()": "agentstate.logging.RequestContextFilter"},
        "dev_server_repeat": {"()": "agentstate.logging.DevServerRepeatFilter"},
    },
    "formatters": {"json": {"()": "agentstate.logging.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "json",
            "filters": ["request_context"],
        }
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "django": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
        "django.server": {
            "handlers": ["console"],
            "level": LOG_LEVEL,
            "propagate": False,
            "filters": ["dev_server_repeat"],
        },
        "agentstate": {"handlers": ["console"], "level": LOG_LEVEL, "propagate": False},
    },
}

# --- Production (DJANGO_ENV=production): HTTPS behind a proxy, static files from WhiteNoise ----
if PRODUCTION:
    STORAGES["staticfiles"] = {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"}
    # The proxy terminates TLS and must set (never pass through) X-Forwarded-Proto.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    # Load-balancer probes, and Prometheus scraping each app server directly, may come over plain HTTP.
    SECURE_REDIRECT_EXEMPT = [r"^(livez|healthz|readyz|metrics)/?$"]
    SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_SECURE_HSTS_SECONDS", str(365 * 24 * 3600)))
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", True)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")
