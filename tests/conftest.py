"""Shared fixtures. Service-backed tests skip with a reason locally, and fail in CI."""

import os
import shutil
import socket

import pytest
from hypothesis import settings as hypothesis_settings

# Property tests draw the same examples on every run: a test that fails, fails every time, and one
# that passes here passes in CI (a property's search still covers what its strategies describe).
hypothesis_settings.register_profile("ratinggame", derandomize=True, deadline=None)
hypothesis_settings.load_profile("ratinggame")


def _live_server_without_nagle() -> None:
    """The live server's connections send each write at once (TCP_NODELAY).

    Django's test server (wsgiref) writes a response's head and body in two sends; on a kept-alive
    connection Nagle's algorithm holds the second until the client acknowledges the first, which the
    client delays by 40 ms. Every request of a browser test or a simulated crowd took ~44 ms
    for a 0.5 ms answer (GET /healthz, measured here). Production servers (gunicorn, nginx) send
    without that wait; the tests now do too."""
    from django.core.servers.basehttp import ThreadedWSGIServer
    from django.test.testcases import LiveServerThread

    class NoDelayServer(ThreadedWSGIServer):
        def get_request(self):
            connection, address = super().get_request()
            connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return connection, address

    LiveServerThread.server_class = NoDelayServer


_live_server_without_nagle()

# CI sets RATINGGAME_REQUIRE_SERVICES=1: a missing PostgreSQL, Redis or Chromium is then a
# failure, not a skip, so a green CI run means those tests really ran.
REQUIRE_SERVICES = os.environ.get("RATINGGAME_REQUIRE_SERVICES") == "1"
# The full-size versions of the slow tests (large simulated crowds, many generated requests) run
# in CI and with RATINGGAME_FULL_TESTS=1; a developer's `make test` runs their smaller versions.
FULL_TESTS = REQUIRE_SERVICES or os.environ.get("RATINGGAME_FULL_TESTS") == "1"


# Tests that stop and restart the machine's PostgreSQL and Redis: run last, so that no test after
# them meets a connection the restart cut (a browser test's live server, a session's save).
LAST = "tests/test_faults.py"


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.nodeid.startswith(LAST))  # stable: the rest keep their order
    if FULL_TESTS:
        return
    skip = pytest.mark.skip(reason="slow, full size: runs in CI (RATINGGAME_FULL_TESTS=1 runs it here)")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


def service_missing(reason: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing in CI: {reason}")
    pytest.skip(reason)


def port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


@pytest.fixture(scope="session", autouse=True)
def _fast_password_hashing():
    """Test accounts need no strong password hashing: PBKDF2 takes a third of a second per user
    here, and the suite makes thousands. No test is about the hasher (production's is Django's
    default), and a server a test starts as a process of its own hashes as production does."""
    from django.test import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(scope="session", autouse=True)
def _test_database_dropped_whole(django_db_setup, django_db_blocker):
    """At the end of the session, before pytest-django drops the test database: on PostgreSQL, end
    the connections to it that the suite left behind (a server or worker thread a test started,
    still connected), or the drop fails with "being accessed by other users" and the database
    stays on the server, one per run and process."""
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture(autouse=True)
def _isolated_media(settings, tmp_path):
    """Every test stores images under its own temporary MEDIA_ROOT, with tasks inline (none in
    the embedded mode's thread, unless a test asks for it)."""
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.RATINGGAME = {**settings.RATINGGAME, "EAGER_IN_THREADS": False}
    from ratinggame.celery import app

    eager = app.conf.task_always_eager
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager = eager


@pytest.fixture(autouse=True)
def _level_prior_flat():
    """Each test starts with a flat level prior, read from no table (a refit it runs stores its own)."""
    from ratinggame.game.prior import level_prior_known

    level_prior_known(None)


@pytest.fixture(scope="session")
def chromium_path():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        service_missing("Chromium is not installed (apt-get install chromium)")
    return path


@pytest.fixture(scope="module")
def _module_chromium(chromium_path):
    """One Chromium for a test module: starting Playwright's driver and a browser for each test
    took longer than most browser tests' own work, and a module's tests share nothing through it,
    since each test's pages live in their own contexts (``browser`` closes them).

    Playwright's sync API keeps an event loop running in this thread while the browser is open, so
    Django would refuse the ORM's synchronous calls (SynchronousOnlyOperation) in the tests and
    fixtures of the module; they are synchronous, and allowed for as long as the browser is open."""
    from playwright.sync_api import sync_playwright

    from tests.browser import launch

    with pytest.MonkeyPatch.context() as patch, sync_playwright() as playwright:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        browser = launch(playwright.chromium, chromium_path)
        yield browser
        browser.close()


@pytest.fixture
def browser(_module_chromium):
    """Real Chromium (the module's); whatever a test opened in it is closed after the test."""
    yield _module_chromium
    for context in _module_chromium.contexts:
        context.close()


@pytest.fixture
def require_postgres(settings):
    from django.db import connection

    if connection.vendor != "postgresql":
        service_missing("needs PostgreSQL: run with DATABASE_URL=postgres://postgres@127.0.0.1:5432/ratinggame")


@pytest.fixture
def redis_url(worker_id):
    """The test Redis database, one per pytest-xdist process (15, 14, ... for gw0, gw1, ...): each
    test empties its broker's database, which must not be another process's."""
    url = os.environ.get("RATINGGAME_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    base, _, number = url.rpartition("/")
    worker = int(worker_id[2:]) if worker_id.startswith("gw") else 0
    url = f"{base}/{int(number or 15) - worker}"
    host_port = base.split("//", 1)[1]
    host, _, port = host_port.rpartition(":")
    if not port_open(host or "127.0.0.1", int(port or 6379)):
        service_missing(f"Redis is not reachable at {url}")
    return url


@pytest.fixture
def sent_tasks(monkeypatch):
    """A broker that takes every message: tasks are not run inline, their messages are recorded.

    Yields a list of (task name, args) in the order they were sent.
    """
    from ratinggame.background import BackgroundTask
    from ratinggame.celery import app

    sent: list[tuple[str, tuple]] = []
    app.conf.task_always_eager = False  # _isolated_media puts it back after the test
    monkeypatch.setattr(
        BackgroundTask, "apply_async", lambda self, args=None, kwargs=None, **options: sent.append((self.name, args))
    )
    return sent


@pytest.fixture
def unanimous_policy(settings):
    """SPEC 5.1's "unanimous" assignment policy: past 3, more ratings while they are not all equal."""
    settings.RATINGGAME = {**settings.RATINGGAME, "ASSIGNMENT_POLICY": "unanimous"}


@pytest.fixture
def three_second_rules(settings):
    """The rules most journey tests play by: the 3-second minimum per pair (SPEC 3), assignments
    that expire after 30 minutes."""
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 3.0, "ASSIGNMENT_EXPIRY_SECONDS": 1800}
