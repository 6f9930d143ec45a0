"""Settings for the rating game: one module, driven by environment variables.

Zero-setup defaults are for a laptop (SQLite under var/, tasks inline, DEBUG on);
production (DJANGO_DEBUG=0) refuses to start without DJANGO_SECRET_KEY and
DJANGO_ALLOWED_HOSTS. docs/operators/configuration.md lists every variable.
"""

from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from annotators.competency.flag_rules import threshold_defaults
from ratinggame.env import env_bool, env_datetime, env_decimal, env_float, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("RATINGGAME_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DJANGO_DEBUG", True)

SECRET_KEY = env_str("DJANGO_SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG=0 (production). "
            'Generate one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'
        )
    SECRET_KEY = "insecure-development-key-only-for-debug-mode"  # noqa: S105 - never used with DEBUG off

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured("DJANGO_ALLOWED_HOSTS must be set when DJANGO_DEBUG=0 (comma-separated host names).")
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "csp",
    "ratinggame",
    "annotators",
    "scoring",
]

MIDDLEWARE = [
    # First: every response, redirects and errors included, carries X-Request-ID and is logged.
    "ratinggame.request_log.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "ratinggame.csp_policy.SitePolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "ratinggame.lazy_messages.LazyMessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "ratinggame.urls"
WSGI_APPLICATION = "ratinggame.wsgi.application"

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
                "annotators.context_processors.roles",
                "annotators.context_processors.study",
            ],
        },
    },
    {
        # The rating screen's fragments, which the one-request rating renders with every answer
        # (ratinggame.fragments): Jinja2 renders them in a fraction of Django's time.
        "BACKEND": "django.template.backends.jinja2.Jinja2",
        "DIRS": [BASE_DIR / "templates" / "jinja2"],
        "APP_DIRS": False,
        "OPTIONS": {"environment": "ratinggame.fragments.environment"},
    },
]


# SQLite as a server database (the embedded default serves a classroom): the write-ahead log
# lets readers go on while one connection writes; IMMEDIATE transactions take the write lock
# at BEGIN, so two read-then-write transactions queue behind each other instead of one failing
# at once with "database is locked" when it upgrades its read lock (a busy timeout cannot help
# that case); the busy timeout (seconds) is how long a transaction queues for the lock.
# synchronous=NORMAL is durable against a process crash in WAL mode (an OS crash may lose the
# last commits, never corrupt the file).
_SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": env_int("DATABASE_SQLITE_TIMEOUT", 30),
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
}


def _sqlite_test_database(name: str) -> dict:
    """The tests' SQLite database: a file beside the site's, in the same write-ahead-log mode.

    Django's default for SQLite tests is an in-memory database in shared-cache mode, which locks
    whole tables and never waits: a connection that writes while another one reads the same table
    fails at once ("database table is locked"). The site's file database lets readers go on while
    one connection writes, and queues writers behind the busy timeout. The tests whose threads share
    the database (the embedded worker, the live server of the browser tests) must meet the latter.
    """
    if name == ":memory:":
        return {}
    path = Path(name)
    return {"NAME": str(path.with_name(f"test_{path.name}"))}


def _database_config(url: str) -> dict:
    """DATABASE_URL unset -> SQLite under var/; postgres://... or sqlite:///path otherwise."""
    if not url:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
        name = str(VAR_DIR / "db.sqlite3")
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": name,
            "OPTIONS": _SQLITE_OPTIONS,
            "TEST": _sqlite_test_database(name),
        }
    scheme = url.split(":", 1)[0]
    if scheme not in {"postgres", "postgresql", "pgsql", "sqlite"}:
        raise ImproperlyConfigured(f"DATABASE_URL scheme {scheme!r} is not supported: use postgres:// or sqlite:///")
    # Persistent connections with health checks: after a PostgreSQL restart the next
    # request reconnects by itself instead of failing on a dead connection.
    config = dj_database_url.parse(url, conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60), conn_health_checks=True)
    if config["ENGINE"].endswith("sqlite3"):
        config.pop("CONN_MAX_AGE", None)
        config["CONN_HEALTH_CHECKS"] = False
        config["OPTIONS"] = {**_SQLITE_OPTIONS, **config.get("OPTIONS", {})}
        config["TEST"] = _sqlite_test_database(config["NAME"])
    # Behind a pooler in transaction mode (PgBouncer pool_mode = transaction), consecutive
    # transactions of one connection may reach different server connections: a server-side
    # cursor (QuerySet.iterator) would not survive that, so iterators fetch client-side.
    config["DISABLE_SERVER_SIDE_CURSORS"] = env_bool("DATABASE_TRANSACTION_POOLING", False)
    return config


DATABASES = {"default": _database_config(env_str("DATABASE_URL"))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Database sessions whose rows name their user (ratinggame.sessions): the rating page's request
# reads its rater in one query.
SESSION_ENGINE = "ratinggame.sessions"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "home"

LANGUAGE_CODE = "en"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(VAR_DIR / "static")))
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("MEDIA_ROOT", str(VAR_DIR / "media")))
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
        if not DEBUG
        else "django.contrib.staticfiles.storage.StaticFilesStorage"
    },
}

# Content-Security-Policy (django-csp) on every response: scripts, styles, images and fonts
# from this site only, no inline script, no plugin, never framed. The pages keep their scripts
# in static files; the API documentation pages relax it for themselves (ratinggame.api.urls).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# Uploads: requests are bounded; image files are checked again by ratinggame.pairs.images.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE", 5 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
# Files in one multipart request (a manifest upload with loose images); send a zip for more.
DATA_UPLOAD_MAX_NUMBER_FILES = env_int("DJANGO_DATA_UPLOAD_MAX_NUMBER_FILES", 1000)

# E-mail (password resets): with DJANGO_EMAIL_HOST set, sent by SMTP; without, each message is
# written as a file under var/mail/ (Django's file backend), never lost and never sent to
# Django's default SMTP server on localhost, which a laptop or a bare server does not run.
EMAIL_HOST = env_str("DJANGO_EMAIL_HOST")
EMAIL_BACKEND = (
    "django.core.mail.backends.smtp.EmailBackend" if EMAIL_HOST else "django.core.mail.backends.filebased.EmailBackend"
)
EMAIL_FILE_PATH = Path(env_str("DJANGO_EMAIL_FILE_PATH", str(VAR_DIR / "mail")))
EMAIL_PORT = env_int("DJANGO_EMAIL_PORT", 587)
EMAIL_HOST_USER = env_str("DJANGO_EMAIL_HOST_USER")
EMAIL_HOST_PASSWORD = env_str("DJANGO_EMAIL_HOST_PASSWORD")
EMAIL_USE_TLS = env_bool("DJANGO_EMAIL_USE_TLS", True)
DEFAULT_FROM_EMAIL = env_str("DJANGO_DEFAULT_FROM_EMAIL", "ratings@localhost")

# Cache: throttling and the log-in limiter count in it, so with several web processes it must
# be shared (redis://...); the default is per process, fine for one process or a laptop. The
# Redis cache fails open (ratinggame.cache): a Redis outage suspends rate limits, not the site.
_CACHE_URL = env_str("DJANGO_CACHE_URL")
if _CACHE_URL and not _CACHE_URL.startswith(("redis://", "rediss://")):
    raise ImproperlyConfigured("DJANGO_CACHE_URL must be a redis:// or rediss:// URL")
CACHES = {
    "default": {"BACKEND": "ratinggame.cache.FailOpenRedisCache", "LOCATION": _CACHE_URL}
    if _CACHE_URL
    else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "ratinggame"}
}

# Log-in limiter (ratinggame.login_throttle): this many failed log-ins for one username from
# one address within the window -> 429 until the window ends. Every log-in door uses it (the
# site, the Django admin, the API token endpoint).
LOGIN_MAX_FAILURES = env_int("RATINGGAME_LOGIN_MAX_FAILURES", 10)
LOGIN_FAILURE_WINDOW_SECONDS = env_int("RATINGGAME_LOGIN_FAILURE_WINDOW_SECONDS", 15 * 60)
# Reverse proxies in front of the web processes that append to X-Forwarded-For (0: use the
# socket address). Only trusted hops are read, so a client cannot choose its own address.
NUM_PROXIES = env_int("DJANGO_NUM_PROXIES", 0)

# --- The rating game (SPEC.md) -------------------------------------------------------
RATINGGAME = {
    # Largest image accepted, in bytes and in pixels (decompression-bomb guard).
    "MAX_IMAGE_BYTES": env_int("RATINGGAME_MAX_IMAGE_BYTES", 20 * 1024 * 1024),
    "MAX_IMAGE_PIXELS": env_int("RATINGGAME_MAX_IMAGE_PIXELS", 40_000_000),
    "MAX_CAPTION_CHARS": env_int("RATINGGAME_MAX_CAPTION_CHARS", 500),
    "MAX_MANIFEST_BYTES": env_int("RATINGGAME_MAX_MANIFEST_BYTES", 50 * 1024 * 1024),
    # A whole manifest upload through the API (manifest + images or a zip), and what a zip
    # may unpack to (zip-bomb guard).
    "MAX_UPLOAD_BYTES": env_int("RATINGGAME_MAX_UPLOAD_BYTES", 500 * 1024 * 1024),
    "MAX_UNZIPPED_BYTES": env_int("RATINGGAME_MAX_UNZIPPED_BYTES", 2 * 1024 * 1024 * 1024),
    "MAX_ZIP_MEMBERS": env_int("RATINGGAME_MAX_ZIP_MEMBERS", 50_000),
    # A manifest upload over any of these is imported by a worker (a tracked job; the request
    # answers 202 with the job's address) instead of within the request
    # (ratinggame.pairs.workload). Checking an image decodes every pixel: 100 megapixels take
    # about a second or two on one core.
    "IMPORT_INLINE_MAX_ROWS": env_int("RATINGGAME_IMPORT_INLINE_MAX_ROWS", 1000),
    "IMPORT_INLINE_MAX_FILES": env_int("RATINGGAME_IMPORT_INLINE_MAX_FILES", 500),
    "IMPORT_INLINE_MAX_BYTES": env_int("RATINGGAME_IMPORT_INLINE_MAX_BYTES", 50 * 1024 * 1024),
    "IMPORT_INLINE_MAX_PIXELS": env_int("RATINGGAME_IMPORT_INLINE_MAX_PIXELS", 100_000_000),
    # A running import job writes a heartbeat this often; the sweep (Celery beat, and any read
    # of the job) settles a running job whose last heartbeat is older than IMPORT_SWEEP_SECONDS.
    "IMPORT_HEARTBEAT_SECONDS": env_int("RATINGGAME_IMPORT_HEARTBEAT_SECONDS", 15),
    "IMPORT_SWEEP_SECONDS": env_int("RATINGGAME_IMPORT_SWEEP_SECONDS", 120),
    # Without a broker, work that can outlast a request (large imports, display copies) runs in
    # a thread of the web process rather than inside the request (ratinggame.background).
    "EAGER_IN_THREADS": env_bool("RATINGGAME_EAGER_IN_THREADS", True),
    # Production image serving (ratinggame.pairs.media): empty -> the web process sends the file;
    # a prefix such as /protected-media/ -> an X-Accel-Redirect for nginx to send it.
    "MEDIA_ACCEL_REDIRECT": env_str("RATINGGAME_MEDIA_ACCEL_REDIRECT", ""),
    # The rating path's statements as server-side prepared statements on PostgreSQL
    # (ratinggame.game.prepared); not behind a transaction-mode pooler, where the next
    # transaction may run on a server connection that never prepared them.
    "PREPARED_STATEMENTS": not env_bool("DATABASE_TRANSACTION_POOLING", False),
    # SPEC section 2.4: minimum seconds between serving a pair and accepting its rating.
    # Shortened only by tests and benchmarks.
    "MIN_SECONDS_PER_RATING": env_float("RATINGGAME_MIN_SECONDS_PER_RATING", 3.0),
    "ASSIGNMENT_EXPIRY_SECONDS": env_int("RATINGGAME_ASSIGNMENT_EXPIRY_SECONDS", 30 * 60),
    # Reports of a problem with a pair (ratinggame.game.reports): a game pair that this many
    # raters reported stops being served until staff look at it; a rater skips at most this
    # many game pairs an hour by reporting them (a skip is not a rating).
    "REPORTS_TO_WITHDRAW": env_int("RATINGGAME_REPORTS_TO_WITHDRAW", 3),
    "SKIPS_PER_HOUR": env_int("RATINGGAME_SKIPS_PER_HOUR", 10),
    # Quality control in the game (annotators.journey, SPEC 2.5): one control pair in every block
    # of this many game serves (0: none); the drift rule sends a rater back to probation when the
    # mean agreement (exact 2, adjacent 1, else 0) over their latest DRIFT_WINDOW control ratings
    # falls under DRIFT_THRESHOLD (bench/bench_quality.py shows how the defaults meet the targets).
    "CONTROL_EVERY": env_int("RATINGGAME_CONTROL_EVERY", 10),
    "DRIFT_WINDOW": env_int("RATINGGAME_DRIFT_WINDOW", 15),
    "DRIFT_THRESHOLD": env_float("RATINGGAME_DRIFT_THRESHOLD", 1.1),
    # When a game pair has enough ratings (SPEC 5.1, ratinggame.game.assignment): "settled" (past 3
    # counted ratings, another only while the ordinal rater model gives more than
    # SETTLED_THRESHOLD to the chance that more ratings would change the pair's label) or
    # "unanimous" (another while its ratings are not all equal). bench/bench_cost.py compares them.
    "ASSIGNMENT_POLICY": env_str("RATINGGAME_ASSIGNMENT_POLICY", "settled"),
    "SETTLED_THRESHOLD": env_float("RATINGGAME_SETTLED_THRESHOLD", 0.1),
    # Whether the settled policy reads a pair's ratings with the level prior fitted by the periodic
    # refit (how common each level is among the study's pairs), or with a flat one.
    "LEVEL_PRIOR": env_bool("RATINGGAME_LEVEL_PRIOR", True),
    # The raters' models are fitted again once this many ratings came in since the last fit
    # (checked every 30 s; and at least every 30 minutes while any do): a careless rater counts
    # as the population's until a fit has seen them, and bench/bench_cost.py shows what each
    # rating read that way costs (with no fit during a study, a tenth fewer ratings than
    # "unanimous" instead of a quarter). A fit of a VICR-sized study (68,217 ratings, 1,000
    # raters) took 6 s here.
    "REFIT_RATINGS": env_int("RATINGGAME_REFIT_RATINGS", 50),
    # "Skip this pair" (no reason, not a report): at most this percent of a rater's game serves
    # after their first 20.
    "SKIP_PERCENT": env_int("RATINGGAME_SKIP_PERCENT", 10),
    # How many validated game pairs the study aims for: the researchers' progress page measures
    # against it and estimates when it is reached. 0: every game pair in the pool.
    "STUDY_TARGET_PAIRS": env_int("RATINGGAME_STUDY_TARGET_PAIRS", 0),
    # Demo mode prints demo account passwords; never on in production.
    "DEMO_MODE": env_bool("RATINGGAME_DEMO_MODE", DEBUG),
    # Model priming (SPEC section 4): an open_clip model name and its weights (a pretrained
    # tag, hf-hub:..., or a local checkpoint file or folder). Empty model: new game pairs
    # wait (pending, with a note) until one is set.
    "PRIMING_MODEL": env_str("RATINGGAME_PRIMING_MODEL", ""),
    "PRIMING_PRETRAINED": env_str("RATINGGAME_PRIMING_PRETRAINED", ""),
    # PAC-S: a PAC-S checkpoint file loaded over PRIMING_MODEL (its base architecture) and
    # scored with w = 2.0. PRIMING_PRETRAINED then names the base weights it was fine-tuned
    # from ("openai", "laion2b_s32b_b82k"; empty: OpenAI's), which decides QuickGELU.
    "PRIMING_PACS_CHECKPOINT": env_str("RATINGGAME_PRIMING_PACS_CHECKPOINT", ""),
    # Empty: CUDA when available, else CPU. Batch: pairs scored per encoder batch.
    "PRIMING_DEVICE": env_str("RATINGGAME_PRIMING_DEVICE", ""),
    "PRIMING_BATCH_SIZE": env_int("RATINGGAME_PRIMING_BATCH_SIZE", 64),
    # FLEUR and RefFLEUR: a LLaVA model (transformers' layout) in a local folder, or a hub name
    # where a hub is reachable; empty: no FLEUR. Its batch is smaller (a 7B-13B model). EXPLAIN:
    # each FLEUR prime also gets the model's explanation (slow: a second, longer generation).
    "PRIMING_FLEUR_MODEL": env_str("RATINGGAME_PRIMING_FLEUR_MODEL", ""),
    "PRIMING_FLEUR_BATCH_SIZE": env_int("RATINGGAME_PRIMING_FLEUR_BATCH_SIZE", 8),
    "PRIMING_FLEUR_EXPLAIN": env_bool("RATINGGAME_PRIMING_FLEUR_EXPLAIN", False),
    # A running claim older than this is taken over by another worker (or re-queued by the
    # sweep): must exceed prime_pairs' hard time limit (660 s). Shortened only by tests.
    "PRIMING_STALE_SECONDS": env_int("RATINGGAME_PRIMING_STALE_SECONDS", 900),
    # The exported dataset's licence, as the dataset card's `license` (a Hugging Face licence
    # identifier such as cc-by-4.0). No default: the images and captions are others' work, so
    # only their owners can choose it; unset, the card says "unknown" and asks readers to check.
    "DATASET_LICENSE": env_str("RATINGGAME_DATASET_LICENSE", ""),
}
if RATINGGAME["ASSIGNMENT_POLICY"] not in ("settled", "unanimous"):
    raise ImproperlyConfigured('RATINGGAME_ASSIGNMENT_POLICY must be "settled" or "unanimous".')
if not 0 < RATINGGAME["SETTLED_THRESHOLD"] < 1:
    raise ImproperlyConfigured("RATINGGAME_SETTLED_THRESHOLD must lie between 0 and 1 (a probability).")
if RATINGGAME["STUDY_TARGET_PAIRS"] < 0:
    raise ImproperlyConfigured("RATINGGAME_STUDY_TARGET_PAIRS must be 0 (every game pair) or a number of pairs.")

# --- Running a study (SPEC 7): what raters are told, entry links, the session quota, pay ---------
# Read only through annotators.study.settings (typed, with the rules that use them); researchers see them
# on /research/study/. docs/researchers/prolific.md explains each one.
RATINGGAME_STUDY = {
    "TITLE": env_str("RATINGGAME_STUDY_TITLE", "Rate how well captions describe images"),
    # Who runs the study and how to reach them (the consent page names them). Set both in production.
    "OPERATOR": env_str("RATINGGAME_STUDY_OPERATOR", "the research team running this site"),
    "CONTACT": env_str("RATINGGAME_STUDY_CONTACT", ""),
    "MINUTES": env_int("RATINGGAME_STUDY_MINUTES", 0),  # estimated minutes per session; 0: not said
    "COMPENSATION": env_str("RATINGGAME_STUDY_COMPENSATION", ""),
    "OPEN_SIGNUP": env_bool("RATINGGAME_STUDY_OPEN_SIGNUP", True),
    "CLOSED": env_bool("RATINGGAME_STUDY_CLOSED", False),
    "CLOSES_AT": env_datetime("RATINGGAME_STUDY_CLOSES_AT"),
    # The session quota of a participant who came through a platform link: counted game ratings
    # and active minutes (0: no limit), whichever first.
    "QUOTA_RATINGS": env_int("RATINGGAME_STUDY_QUOTA_RATINGS", 100),
    "QUOTA_MINUTES": env_int("RATINGGAME_STUDY_QUOTA_MINUTES", 0),
    "CONTINUE_AFTER_COMPLETION": env_bool("RATINGGAME_STUDY_CONTINUE_AFTER_COMPLETION", False),
    # Failed probation rounds that end a session: screened out before the participant ever entered
    # the game (Prolific screens only at a study's start), completed and flagged after (0: never).
    "SCREEN_OUT_ROUNDS": env_int("RATINGGAME_STUDY_SCREEN_OUT_ROUNDS", 3),
    "COMPLETION_CODE": env_str("RATINGGAME_STUDY_COMPLETION_CODE", ""),
    "SCREEN_OUT_CODE": env_str("RATINGGAME_STUDY_SCREEN_OUT_CODE", ""),
    # Fair attention checks (Prolific's rules: instructed-response items, "For this pair choose 1"):
    # one game serve in this many is one, for a study's participants (0: none, the default); a
    # participant who fails this many becomes reject-eligible (the site never rejects by itself).
    "ATTENTION_EVERY": env_int("RATINGGAME_STUDY_ATTENTION_EVERY", 0),
    "ATTENTION_FAILS": env_int("RATINGGAME_STUDY_ATTENTION_FAILS", 2),
    # Active time: serve to accepted submit of each rating, capped at this many seconds.
    "ACTIVE_SECONDS_CAP": env_int("RATINGGAME_STUDY_ACTIVE_SECONDS_CAP", 60),
    "PAY_HOURLY": env_decimal("RATINGGAME_STUDY_PAY_HOURLY", "0"),
    "PAY_PER_POINT": env_decimal("RATINGGAME_STUDY_PAY_PER_POINT", "0"),
    "CURRENCY": env_str("RATINGGAME_STUDY_CURRENCY", "GBP"),
    # The platform's minimum hourly pay at the median session (0: no check).
    "PLATFORM_MIN_HOURLY": env_decimal("RATINGGAME_STUDY_PLATFORM_MIN_HOURLY", "0"),
    # Whether the bonus file and the bonus API carry the base pay too (off: Prolific pays the base
    # as the study's own reward, and only the points' bonus goes on top).
    "PAY_BASE_AS_BONUS": env_bool("RATINGGAME_STUDY_PAY_BASE_AS_BONUS", False),
    # The study's reward per participant on the platform, in CURRENCY (0: none set): it counts in the
    # pay judged at the median session against PLATFORM_MIN_HOURLY.
    "PLATFORM_REWARD": env_decimal("RATINGGAME_STUDY_PLATFORM_REWARD", "0"),
    # Prolific's API (annotators.study.prolific): a researcher's API token (a secret: never shown
    # back, never logged) and the study on Prolific this site's participants come from.
    "PROLIFIC_API_TOKEN": env_str("RATINGGAME_PROLIFIC_API_TOKEN", ""),
    "PROLIFIC_STUDY_ID": env_str("RATINGGAME_PROLIFIC_STUDY_ID", ""),
    "PROLIFIC_API_URL": env_str("RATINGGAME_PROLIFIC_API_URL", "https://api.prolific.com"),
    # Entry links (annotators.study.entry): the platforms whose links are taken, the generic
    # provider's participant-id parameter and its return address ({code} becomes the code).
    "PLATFORMS": env_list("RATINGGAME_STUDY_PLATFORMS", ["prolific"]),
    "GENERIC_ID_PARAM": env_str("RATINGGAME_STUDY_GENERIC_ID_PARAM", "participant_id"),
    "GENERIC_RETURN_URL": env_str("RATINGGAME_STUDY_GENERIC_RETURN_URL", ""),
}
for _key in ("MINUTES", "QUOTA_RATINGS", "QUOTA_MINUTES", "SCREEN_OUT_ROUNDS", "ATTENTION_EVERY"):
    if RATINGGAME_STUDY[_key] < 0:
        raise ImproperlyConfigured(f"RATINGGAME_STUDY_{_key} must be 0 or more.")
if _unknown := set(RATINGGAME_STUDY["PLATFORMS"]) - {"prolific", "generic", "mturk"}:
    raise ImproperlyConfigured(f"RATINGGAME_STUDY_PLATFORMS takes prolific, generic and mturk, not {sorted(_unknown)}.")
if RATINGGAME_STUDY["ATTENTION_FAILS"] < 1:
    raise ImproperlyConfigured("RATINGGAME_STUDY_ATTENTION_FAILS must be at least 1.")
if RATINGGAME_STUDY["ACTIVE_SECONDS_CAP"] < 1:
    raise ImproperlyConfigured("RATINGGAME_STUDY_ACTIVE_SECONDS_CAP must be at least 1 second.")

# Rater behaviour flags on the staff dashboard: each flag's rule, thresholds and defaults are one
# entry of annotators.competency.flag_rules; each threshold is read from RATINGGAME_FLAG_<NAME>
# (e.g. RATINGGAME_FLAG_STRAIGHT_RUN=20). A flag is a prompt to look at the rater, never a sanction.
RATINGGAME_FLAGS = {
    name: (env_int if isinstance(default, int) else env_float)(f"RATINGGAME_FLAG_{name}", default)
    for name, default in threshold_defaults().items()
}
# The competency analysis (PCM) is refreshed after this many new game ratings (checked by a
# periodic task) and on demand from the staff dashboard.
RATINGGAME_COMPETENCY_EVERY = env_int("RATINGGAME_COMPETENCY_EVERY", 500)
RATINGGAME_COMPETENCY_CHECK_SECONDS = env_int("RATINGGAME_COMPETENCY_CHECK_SECONDS", 300)

# --- Celery ----------------------------------------------------------------------------
# No broker configured -> tasks run inline, explicitly; a configured broker that is down is
# an error, never a silent fallback to inline execution.
_BROKER_FROM_ENV = env_str("CELERY_BROKER_URL")
CELERY_TASK_ALWAYS_EAGER = not _BROKER_FROM_ENV
# In eager mode nothing is sent; the in-memory transport keeps kombu from guessing a host.
CELERY_BROKER_URL = _BROKER_FROM_ENV or "memory://"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES_NAMES = ("default", "gpu")
CELERY_TASK_ROUTES = {
    "scoring.tasks.prime_pairs": {"queue": "gpu"},
    "scoring.tasks.train_predictor": {"queue": "gpu"},
}
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULE: dict = {
    # Cheap check: starts the competency analysis when enough new game ratings came in.
    "maybe-refresh-competency": {
        "task": "annotators.tasks.maybe_refresh_competency",
        "schedule": float(RATINGGAME_COMPETENCY_CHECK_SECONDS),
    },
    # Model priming (scoring.tasks): re-queue pairs the broker never got or a dead worker left.
    "sweep-pending-priming": {"task": "scoring.tasks.sweep_pending_priming", "schedule": 300.0},
    "refit-calibrations": {"task": "scoring.tasks.refit_calibrations", "schedule": 6 * 3600.0},
    "train-predictor": {"task": "scoring.tasks.train_predictor", "schedule": 24 * 3600.0},
    # The game (ratinggame.tasks): slots of abandoned assignments go back to their pairs.
    "release-expired-assignments": {"task": "ratinggame.tasks.release_expired_assignments", "schedule": 60.0},
    # Pairs whose stored aggregates drifted from their ratings are repaired and logged.
    "check-aggregates": {"task": "ratinggame.tasks.check_aggregates", "schedule": 6 * 3600.0},
    # The raters' ordinal models, which the "settled" assignment policy reads (SPEC 5.1).
    # (when RATINGGAME_REFIT_RATINGS ratings came in since the last fit; a check that waited its
    # period in the queue is dropped, the next one comes).
    "refit-rater-models": {
        "task": "ratinggame.tasks.refit_rater_models",
        "schedule": 30.0,
        "options": {"expires": 30.0},
    },
    # Files and upload folders no row uses are deleted.
    "sweep-storage": {"task": "ratinggame.tasks.sweep_storage", "schedule": 3600.0},
    # Import jobs whose worker died (no heartbeat for a period) are resumed or failed with the reason.
    "sweep-imports": {"task": "ratinggame.tasks.sweep_imports", "schedule": float(RATINGGAME["IMPORT_SWEEP_SECONDS"])},
}

# --- REST API (ratinggame.api) ----------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    # Token first: an anonymous request gets 401 with "WWW-Authenticate: Token". Session
    # requests (the browser) are CSRF-checked by SessionAuthentication.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "ratinggame.api.authentication.TokenAuthentication",  # DRF's, with the roles in the same query
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "ratinggame.api.parsers.JSONParser",  # deep nesting answers 400, not 500
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "ratinggame.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "django_filters.rest_framework.DjangoFilterBackend",
        "rest_framework.filters.OrderingFilter",
    ],
    "EXCEPTION_HANDLER": "ratinggame.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("RATINGGAME_THROTTLE_ANON", "120/min"),
        "user": env_str("RATINGGAME_THROTTLE_USER", "1200/min"),
        # POST api/auth/token and api/auth/signup, per address, on top of the log-in limiter.
        "login": env_str("RATINGGAME_THROTTLE_LOGIN", "30/min"),
        "signup": env_str("RATINGGAME_THROTTLE_SIGNUP", "60/hour"),
    },
    # Behind DJANGO_NUM_PROXIES proxies the throttles read the client from X-Forwarded-For;
    # with 0 they use the socket address (never a client-sent X-Forwarded-For).
    "NUM_PROXIES": NUM_PROXIES,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Rating game API",
    "DESCRIPTION": (
        "Validated human ratings of image captions (VICR rating game). Authenticate with a "
        "session (the browser; send the CSRF token) or with `Authorization: Token <key>` from "
        '`POST /api/auth/token`. Every error answers `{"error": {"code", "message", "details"}}`.'
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Separate request and response components: read-only fields stay out of request bodies.
    "COMPONENT_SPLIT_REQUEST": True,
    # Swagger UI and Redoc from our own static files (drf-spectacular-sidecar), never a CDN.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Pairs and ratings share one enum of pools (tutorial, probation, game, control) in the schema.
    "ENUM_NAME_OVERRIDES": {
        "StageEnum": "ratinggame.models.Pool",
        # What a rater is shown of a pair's stage: a control pair is a game pair to them.
        "ShownStageEnum": "ratinggame.api.game.SHOWN_STAGES",
    },
}

# --- Logs --------------------------------------------------------------------------------
# Every record carries the request id (ratinggame.request_log); DJANGO_LOG_FORMAT=json writes
# one JSON object a line (for a log collector), the default is plain text.
LOG_FORMAT = env_str("DJANGO_LOG_FORMAT", "plain")
if LOG_FORMAT not in {"plain", "json"}:
    raise ImproperlyConfigured(f"DJANGO_LOG_FORMAT must be plain or json, not {LOG_FORMAT!r}")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "ratinggame.request_log.RequestIdFilter"}},
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
        "json": {"()": "ratinggame.request_log.JsonFormatter"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
    "loggers": {
        # The request log line replaces Django's own for 4xx/5xx responses, which has no id.
        "django.request": {"level": "ERROR"},
        "django.server": {"level": "WARNING"},
        # Tasks run inline (no broker): a line per task that succeeded is noise on a laptop (the demo's
        # twenty image copies pushed its accounts off the screen); a task that fails still logs.
        **({"celery.app.trace": {"level": "WARNING"}} if CELERY_TASK_ALWAYS_EAGER else {}),
    },
}

if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", True)
    # Load balancers probe /healthz over plain HTTP inside the network.
    SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = True
    SECURE_HSTS_PRELOAD = True
    SECURE_CONTENT_TYPE_NOSNIFF = True
    SECURE_REFERRER_POLICY = "same-origin"
    X_FRAME_OPTIONS = "DENY"
