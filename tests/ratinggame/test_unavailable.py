"""While PostgreSQL is down (issue 15, part 6): pages answer 503 with the site's own page and
Retry-After, the API its error body with code "unavailable"; never a bare 500."""

import subprocess
import sys

import httpx
import pytest
from django.db import OperationalError
from django.db.backends.utils import CursorWrapper
from django.test import Client
from rest_framework.test import APIClient

from tests.live_process import ROOT, free_port, gunicorn_server, server_env
from tests.ratinggame.api_helpers import annotator, researcher, token_client

pytestmark = pytest.mark.django_db


@pytest.fixture
def database_down(monkeypatch):
    """From now on every query fails as it does while PostgreSQL is down."""

    def refused(*args, **kwargs):
        raise OperationalError('connection to server at "db", port 5432 failed: Connection refused')

    def go_down():
        monkeypatch.setattr(CursorWrapper, "execute", refused)
        monkeypatch.setattr(CursorWrapper, "executemany", refused)

    return go_down


def assert_unavailable_page(answer) -> None:
    assert answer.status_code == 503, answer.status_code
    assert answer["Retry-After"] == "30"
    assert answer["Content-Type"].startswith("text/html")
    assert "Back in a moment" in answer.content.decode()


def test_a_page_answers_503_with_the_sites_page_and_retry_after(database_down):
    database_down()
    assert_unavailable_page(Client(raise_request_exception=False).get("/"))


def test_a_signed_in_page_whose_session_cannot_be_read_answers_503(database_down):
    client = Client(raise_request_exception=False)
    client.force_login(annotator())
    database_down()
    assert_unavailable_page(client.get("/play/"))
    assert_unavailable_page(client.post("/me/", {"display_name": "x"}))


def test_the_api_answers_503_unavailable_in_its_error_body(database_down):
    client = token_client(researcher())
    database_down()
    for answer in (client.get("/api/pairs/"), APIClient().post("/api/auth/token", {"username": "a", "password": "b"})):
        assert answer.status_code == 503
        assert answer["Retry-After"] == "30"
        assert answer.json()["error"]["code"] == "unavailable"


def test_any_other_server_error_is_still_a_500(monkeypatch):
    import ratinggame.views

    monkeypatch.setattr(ratinggame.views, "render", lambda *a, **k: 1 / 0)
    answer = Client(raise_request_exception=False).get("/")
    assert answer.status_code == 500


@pytest.mark.slow
def test_a_real_server_without_its_database_answers_503(tmp_path):
    """gunicorn with production settings and a PostgreSQL address where nothing listens."""
    nowhere = f"postgres://x@127.0.0.1:{free_port()}/none"
    extra = {"DATABASE_URL": nowhere, "STATIC_ROOT": str(tmp_path / "static")}
    env = server_env(media_root=tmp_path / "media", min_seconds=3, extra=extra)
    # As in production, the hashed static files are collected first (their manifest names them).
    collect = [sys.executable, "manage.py", "collectstatic", "--noinput"]
    collected = subprocess.run(collect, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert collected.returncode == 0, collected.stderr[-2000:]
    with gunicorn_server(env, tmp_path / "server.log") as url:
        page = httpx.get(f"{url}/leaderboard/", timeout=30)
        api = httpx.get(f"{url}/api/pairs/", headers={"Authorization": "Token " + "0" * 40}, timeout=30)
    log = (tmp_path / "server.log").read_text()[-3000:]
    assert (page.status_code, page.headers.get("Retry-After")) == (503, "30"), log
    assert "Back in a moment" in page.text
    assert (api.status_code, api.headers.get("Retry-After"), api.json()["error"]["code"]) == (503, "30", "unavailable")
