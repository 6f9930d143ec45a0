"""The environment switches of ratinggame.settings, each read by a fresh interpreter."""

import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "engine": db["ENGINE"], "name": str(db["NAME"]), "host": db.get("HOST", ""),
    "test_name": db.get("TEST", {}).get("NAME"),
    "eager": settings.CELERY_TASK_ALWAYS_EAGER, "broker": settings.CELERY_BROKER_URL,
    "debug": settings.DEBUG, "hosts": settings.ALLOWED_HOSTS, "media": str(settings.MEDIA_ROOT),
    "hsts": getattr(settings, "SECURE_HSTS_SECONDS", 0),
    "conn_max_age": db.get("CONN_MAX_AGE"), "health_checks": db.get("CONN_HEALTH_CHECKS"),
    "no_server_side_cursors": db.get("DISABLE_SERVER_SIDE_CURSORS"),
    "prepared_statements": settings.RATINGGAME["PREPARED_STATEMENTS"],
    "task_log": __import__("logging").getLogger("celery.app.trace").getEffectiveLevel(),
}))
"""

CLEARED = (
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "DJANGO_DEBUG",
    "DJANGO_SECRET_KEY",
    "DJANGO_ALLOWED_HOSTS",
    "MEDIA_ROOT",
    "RATINGGAME_VAR_DIR",
    "DATABASE_CONN_MAX_AGE",
    "DATABASE_TRANSACTION_POOLING",
)


def probe(tmp_path, **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environment.update({"DJANGO_SETTINGS_MODULE": "ratinggame.settings", "RATINGGAME_VAR_DIR": str(tmp_path / "var")})
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )


def settings_of(tmp_path, **env) -> dict:
    result = probe(tmp_path, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_laptop_defaults_are_sqlite_under_var_eager_and_debug(tmp_path):
    conf = settings_of(tmp_path)
    assert conf["engine"] == "django.db.backends.sqlite3"
    assert conf["name"] == str(tmp_path / "var" / "db.sqlite3")
    assert conf["test_name"] == str(tmp_path / "var" / "test_db.sqlite3")  # a file, as the site's is
    assert conf["eager"] is True
    assert conf["broker"] == "memory://"
    assert conf["debug"] is True
    assert conf["media"] == str(tmp_path / "var" / "media")
    # Inline tasks log only what goes wrong: `make run`'s demo accounts stay on the screen.
    assert conf["task_log"] == logging.WARNING


def test_postgres_url_selects_postgresql(tmp_path):
    conf = settings_of(tmp_path, DATABASE_URL="postgres://rater:pw@db.internal:5433/ratings")
    assert conf["engine"] == "django.db.backends.postgresql"
    assert conf["name"] == "ratings"
    assert conf["host"] == "db.internal"


def test_postgres_connections_persist_health_checked_and_suit_a_transaction_pooler(tmp_path):
    url = "postgres://rater:pw@db.internal:5433/ratings"
    conf = settings_of(tmp_path, DATABASE_URL=url)
    assert (conf["conn_max_age"], conf["health_checks"], conf["no_server_side_cursors"]) == (60, True, False)
    assert conf["prepared_statements"] is True
    pooled = settings_of(tmp_path, DATABASE_URL=url, DATABASE_TRANSACTION_POOLING="1", DATABASE_CONN_MAX_AGE="0")
    assert (pooled["conn_max_age"], pooled["health_checks"], pooled["no_server_side_cursors"]) == (0, True, True)
    # A transaction pooler may run the next transaction on a connection that never prepared.
    assert pooled["prepared_statements"] is False


def test_sqlite_url_selects_that_file(tmp_path):
    target = tmp_path / "elsewhere.sqlite3"
    conf = settings_of(tmp_path, DATABASE_URL=f"sqlite:///{target}")
    assert conf["engine"] == "django.db.backends.sqlite3"
    assert conf["name"] == str(target)
    assert conf["test_name"] == str(tmp_path / "test_elsewhere.sqlite3")


# Sixteen threads each run read-then-write transactions on the project's SQLite connection
# (the read of a counter, then its update: the shape of every game write). With SQLite's
# defaults (deferred transactions, rollback journal) two such transactions deadlock on the
# upgrade of their read lock and one fails at once with "database is locked", whatever the
# busy timeout; with IMMEDIATE transactions they queue, and no increment is lost.
CONCURRENT_WRITERS = """
import json, threading, django
from django.db import connection, transaction
django.setup()
THREADS, ROUNDS = 16, 15
with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE counter (v integer)")
    cursor.execute("INSERT INTO counter VALUES (0)")
    cursor.execute("PRAGMA journal_mode")
    journal = cursor.fetchone()[0]
errors = []
barrier = threading.Barrier(THREADS)
def writer():
    barrier.wait()
    try:
        for _ in range(ROUNDS):
            with transaction.atomic(), connection.cursor() as cursor:
                cursor.execute("SELECT v FROM counter")
                value = cursor.fetchone()[0]
                cursor.execute("UPDATE counter SET v = %s", [value + 1])
    except Exception as error:
        errors.append(str(error))
    finally:
        connection.close()
threads = [threading.Thread(target=writer) for _ in range(THREADS)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
with connection.cursor() as cursor:
    cursor.execute("SELECT v FROM counter")
    total = cursor.fetchone()[0]
print(json.dumps({"journal": journal, "errors": errors, "total": total, "expected": THREADS * ROUNDS}))
"""


@pytest.mark.parametrize("url", ["", "sqlite:///{tmp}/file.sqlite3"], ids=["default", "sqlite-url"])
def test_concurrent_writers_on_sqlite_queue_instead_of_failing_with_database_is_locked(tmp_path, url):
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environment.update({"DJANGO_SETTINGS_MODULE": "ratinggame.settings", "RATINGGAME_VAR_DIR": str(tmp_path / "var")})
    environment["DATABASE_URL"] = url.format(tmp=tmp_path)
    result = subprocess.run(
        [sys.executable, "-c", CONCURRENT_WRITERS],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["journal"] == "wal"
    assert outcome["errors"] == []
    assert outcome["total"] == outcome["expected"]


@pytest.mark.django_db(transaction=True)
def test_the_tests_database_lets_one_connection_write_while_another_reads_the_same_table():
    # The embedded worker's claim of an import job once failed at once with "database table is
    # locked" while the request's thread read the job: Django's in-memory SQLite for tests (shared
    # cache) locks whole tables and never waits. The tests run on a file in the site's own mode.
    from django.db import DatabaseError, connection, connections

    from ratinggame.models import ImportJob
    from tests.factories import UserFactory

    user = UserFactory()
    jobs = [ImportJob.objects.create(created_by=user, params={}, folder=name) for name in ("a", "b")]
    errors: list[str] = []

    def claim() -> None:
        try:
            ImportJob.objects.filter(pk=jobs[0].pk).update(progress_message="Starting")
        except DatabaseError as error:
            errors.append(str(error))
        finally:
            connections.close_all()

    with connection.cursor() as cursor:
        cursor.execute("SELECT id FROM ratinggame_importjob ORDER BY id")
        cursor.fetchone()  # the read is still under way: one row of two taken
        writer = threading.Thread(target=claim)
        writer.start()
        writer.join(timeout=60)
    assert errors == []
    assert ImportJob.objects.get(pk=jobs[0].pk).progress_message == "Starting"


def test_unsupported_database_scheme_is_a_clear_error(tmp_path):
    result = probe(tmp_path, DATABASE_URL="mysql://root@localhost/x")
    assert result.returncode != 0
    assert "DATABASE_URL scheme 'mysql' is not supported" in result.stderr


def test_broker_url_turns_off_eager_mode(tmp_path):
    conf = settings_of(tmp_path, CELERY_BROKER_URL="redis://127.0.0.1:6379/0")
    assert conf["eager"] is False
    assert conf["broker"] == "redis://127.0.0.1:6379/0"
    assert conf["task_log"] == logging.INFO  # a worker's log keeps every task


def test_media_root_from_environment(tmp_path):
    conf = settings_of(tmp_path, MEDIA_ROOT=str(tmp_path / "images"))
    assert conf["media"] == str(tmp_path / "images")


def test_production_refuses_to_start_without_secret_key(tmp_path):
    result = probe(tmp_path, DJANGO_DEBUG="0", DJANGO_ALLOWED_HOSTS="ratings.example.org")
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_production_refuses_to_start_without_allowed_hosts(tmp_path):
    result = probe(tmp_path, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="x" * 50)
    assert result.returncode != 0
    assert "DJANGO_ALLOWED_HOSTS must be set" in result.stderr


def test_production_settings_with_secret_and_hosts(tmp_path):
    conf = settings_of(
        tmp_path, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="s" * 50, DJANGO_ALLOWED_HOSTS="ratings.example.org"
    )
    assert conf["debug"] is False
    assert conf["hosts"] == ["ratings.example.org"]
    assert conf["hsts"] >= 31_536_000


@pytest.mark.parametrize("value", ["maybe", "2"])
def test_malformed_boolean_is_a_clear_error(tmp_path, value):
    result = probe(tmp_path, DJANGO_DEBUG=value)
    assert result.returncode != 0
    assert "DJANGO_DEBUG must be one of" in result.stderr


def test_web_process_never_imports_torch(tmp_path):
    """Nor sklearn, which only a calibration fit (a worker's) needs: 1.3 s and its memory in every
    web process that loaded it through the scorer registry."""
    code = (
        "import sys, django; django.setup();"
        "import ratinggame.urls, ratinggame.admin, annotators.admin, scoring.admin;"
        "from django.urls import get_resolver; get_resolver().url_patterns;"
        "heavy = [m for m in ('torch', 'open_clip', 'torchvision', 'sklearn') if m in sys.modules];"
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environment.update({"DJANGO_SETTINGS_MODULE": "ratinggame.settings", "RATINGGAME_VAR_DIR": str(tmp_path)})
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=environment, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


MAIL_PROBE = """
import django
django.setup()
from django.core.management import call_command
call_command("migrate", verbosity=0)
from django.contrib.auth import get_user_model
from django.test import Client
get_user_model().objects.create_user("forgetful", "forgetful@example.org", "a long passphrase")
answer = Client().post("/accounts/password_reset/", {"email": "forgetful@example.org"})
print(answer.status_code)
"""


def test_the_password_reset_mail_is_written_to_var_mail_by_default(tmp_path):
    """Issue 15: with the default settings the reset e-mail failed to send (SMTP on localhost)."""
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED and not k.startswith("DJANGO_EMAIL")}
    environment.update({"DJANGO_SETTINGS_MODULE": "ratinggame.settings", "RATINGGAME_VAR_DIR": str(tmp_path / "var")})
    result = subprocess.run(
        [sys.executable, "-c", MAIL_PROBE], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "302"
    assert "Failed to send" not in result.stderr
    (message,) = (tmp_path / "var" / "mail").iterdir()
    text = message.read_text()
    assert "To: forgetful@example.org" in text and "/accounts/reset/" in text


def test_smtp_is_used_when_a_mail_host_is_set(tmp_path):
    probe_mail = PROBE.replace('"hsts":', '"mail": settings.EMAIL_BACKEND, "hsts":')
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED}
    environment.update({"DJANGO_SETTINGS_MODULE": "ratinggame.settings", "RATINGGAME_VAR_DIR": str(tmp_path / "var")})
    environment["DJANGO_EMAIL_HOST"] = "smtp.example.org"
    result = subprocess.run(
        [sys.executable, "-c", probe_mail], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1])["mail"] == "django.core.mail.backends.smtp.EmailBackend"
