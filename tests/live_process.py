"""A real web server (gunicorn, production settings) in a child process, on the test database.

For the fault tests: the server must live in a process of its own so that a PostgreSQL restart
or a Redis outage hits it as it would hit production, and it must use the very database the
test reads (pytest-django's test database, from ``connection.settings_dict``). The server is
stopped before the test ends, so that pytest-django can flush and drop the database.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import httpx

ROOT = Path(__file__).resolve().parents[1]
START_SECONDS = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def current_database_url() -> str:
    """postgres://... of the database this test process uses (the test database)."""
    from django.db import connection

    conf = connection.settings_dict
    user = quote(conf.get("USER") or "", safe="")
    password = f":{quote(conf['PASSWORD'], safe='')}" if conf.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    host = conf.get("HOST") or "127.0.0.1"
    port = f":{conf['PORT']}" if conf.get("PORT") else ""
    return f"postgres://{auth}{host}{port}/{quote(conf['NAME'], safe='')}"


def server_env(*, media_root: Path, min_seconds: float, extra: dict[str, str] | None = None) -> dict[str, str]:
    """Production settings (DJANGO_DEBUG=0) for a test server on 127.0.0.1, nothing from the
    developer's own Celery or cache configuration, API throttles out of the simulator's way."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "RATINGGAME_"))}
    env.update(
        {
            "DATABASE_URL": current_database_url(),
            "DJANGO_DEBUG": "0",
            "DJANGO_SECRET_KEY": "fault-test-secret-key-not-for-production-0123456789",
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "DJANGO_LOG_LEVEL": "WARNING",
            "MEDIA_ROOT": str(media_root),
            "RATINGGAME_MIN_SECONDS_PER_RATING": str(min_seconds),
            "RATINGGAME_THROTTLE_USER": "1000000/min",
            "RATINGGAME_THROTTLE_ANON": "1000000/min",
            "RATINGGAME_THROTTLE_SIGNUP": "1000000/hour",
            "RATINGGAME_THROTTLE_LOGIN": "1000000/min",
            **(extra or {}),
        }
    )
    return env


@contextlib.contextmanager
def gunicorn_server(env: dict[str, str], log_path: Path, *, workers: int = 2, threads: int = 4) -> Iterator[str]:
    """Start gunicorn, wait for it to answer /healthz, yield its base URL; stop it afterwards."""
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "gunicorn",
        "ratinggame.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--threads",
        str(threads),
        "--timeout",
        "120",
        "--graceful-timeout",
        "5",
    ]
    url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until_up(url, process, log_path)
            yield url
        finally:
            process_stop(process)


def process_stop(process: subprocess.Popen) -> None:
    """TERM, and KILL if it outlives 15 s."""
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=15)


def wait_until_up(url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the server exited with {process.returncode}:\n{log_path.read_text()[-3000:]}")
        try:
            # Any answer will do: /healthz is 503 while the broker is down, which some tests want.
            httpx.get(f"{url}/healthz", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise RuntimeError(f"the server did not answer within {START_SECONDS} s:\n{log_path.read_text()[-3000:]}")


# --- Celery processes ---------------------------------------------------------------------------

# No gossip, mingle or heartbeat: one worker per test, started and stopped quickly.
QUIET_WORKER = ["--without-gossip", "--without-mingle", "--without-heartbeat", "-l", "info"]


def celery_start(arguments: list[str], env: dict[str, str], log_path: Path) -> subprocess.Popen:
    """``celery -A ratinggame <arguments>`` in a process group of its own, logging to ``log_path``.

    Its own group, so that a signal to the group (process_group_stop) reaches the worker's
    pool children too, as a machine's shutdown or an OOM kill of the whole worker would.
    """
    command = [sys.executable, "-m", "celery", "-A", "ratinggame", *arguments]
    with log_path.open("ab") as log:
        return subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def process_group_stop(process: subprocess.Popen, sig: int = signal.SIGTERM) -> None:
    """Send ``sig`` to the process's group and wait; KILL the group if it outlives 30 s."""
    if process.poll() is None:
        os.killpg(process.pid, sig)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)


@contextlib.contextmanager
def celery_process(arguments: list[str], env: dict[str, str], log_path: Path) -> Iterator[subprocess.Popen]:
    """A celery process (celery_start) for the block, stopped afterwards."""
    process = celery_start(arguments, env, log_path)
    try:
        yield process
    finally:
        process_group_stop(process)
