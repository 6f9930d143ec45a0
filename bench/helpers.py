"""What several benchmarks need: a free port, a server to wait for, a bench database made and dropped."""

import socket
import subprocess
import sys
import time


def embedded_server(port: int) -> list[str]:
    """``make run``'s server (ratinggame/embedded_server.py) on ``port``: the embedded default."""
    config = "python:ratinggame.embedded_server"
    return [sys.executable, "-m", "gunicorn", "-c", config, "ratinggame.wsgi", "--bind", f"127.0.0.1:{port}"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_up(url: str, process: subprocess.Popen, name: str) -> None:
    """Wait until ``url``/healthz answers; exit when ``process`` (the server, ``name``) dies or never answers."""
    import httpx

    for _ in range(300):
        if process.poll() is not None:
            raise SystemExit(f"{name} exited with {process.returncode}")
        try:
            httpx.get(f"{url}/healthz", timeout=2)
            return
        except httpx.TransportError:
            time.sleep(0.2)
    raise SystemExit(f"{name} did not answer")


def _admin(db_url: str, *statements: str) -> None:
    import psycopg2

    server, _ = db_url.rsplit("/", 1)
    admin = psycopg2.connect(f"{server}/postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    admin.close()


def database_create(db_url: str) -> None:
    """An empty database at ``db_url`` (dropped first when it exists)."""
    name = db_url.rsplit("/", 1)[1]
    _admin(db_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"')


def database_drop(db_url: str) -> None:
    name = db_url.rsplit("/", 1)[1]
    _admin(db_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def session_of(user) -> str:
    """A browser session signed in as ``user`` (in a process with Django set up), as Django's log-in
    makes it: its key, for the ``sessionid`` cookie."""
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    session = import_module(settings.SESSION_ENGINE).SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    return session.session_key
