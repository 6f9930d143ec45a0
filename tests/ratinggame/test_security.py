"""Production settings, health check, request ids and logs, log-in limiter, CSRF, media and upload limits."""

import json
import logging
import os
import re
import secrets
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import OperationalError
from django.test import Client
from rest_framework.test import APIClient

from ratinggame import health
from ratinggame.request_log import JsonFormatter, RequestIdFilter
from tests.factories import ImageFactory, UserFactory, png_bytes
from tests.ratinggame.api_helpers import PASSWORD, annotator, error_of, researcher, token_client

ROOT = Path(__file__).resolve().parents[2]
CLEARED = ("DATABASE_URL", "CELERY_BROKER_URL", "DJANGO_DEBUG", "DJANGO_SECRET_KEY", "DJANGO_ALLOWED_HOSTS")
HOST = "ratings.example.org"


@pytest.fixture(autouse=True)
def _fresh_cache(settings):
    cache.clear()
    yield
    cache.clear()


def run(tmp_path, args: list[str], **env) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in CLEARED and not k.startswith("RATINGGAME_")}
    environment.update(
        {"DJANGO_SETTINGS_MODULE": "ratinggame.settings", "RATINGGAME_VAR_DIR": str(tmp_path / "var"), **env}
    )
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=300
    )


def production(**extra) -> dict:
    return {
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": HOST,
        **extra,
    }


# --- Production settings ----------------------------------------------------------------------------


def test_production_settings_pass_the_deploy_check(tmp_path):
    result = run(tmp_path, ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **production())
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_the_deploy_check_fails_when_a_protection_is_turned_off(tmp_path):
    # The check above is meaningful: without HSTS it reports security.W004 and fails.
    env = production(DJANGO_SECURE_HSTS_SECONDS="0")
    result = run(tmp_path, ["manage.py", "check", "--deploy", "--fail-level", "WARNING"], **env)
    assert result.returncode != 0
    assert "security.W004" in result.stdout + result.stderr


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    env = production()
    del env["DJANGO_SECRET_KEY"]
    result = run(tmp_path, ["manage.py", "check"], **env)
    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


PRODUCTION_PROBE = """
import json, re, django
from django.core.management import call_command
django.setup()
call_command("collectstatic", "--noinput", verbosity=0)
from django.test import Client
client = Client(HTTP_HOST="{host}")
docs = client.get("/api/docs/", secure=True)
html = docs.content.decode()
assets = re.findall(r'/static/(drf_spectacular_sidecar/[^"]+)', html)
asset = client.get("/static/" + assets[0], secure=True) if assets else None
plain_home = client.get("/")
plain_health = client.get("/healthz")
secure_health = client.get("/healthz", secure=True)
print(json.dumps({{
    "docs": docs.status_code, "assets": assets,
    "asset_status": asset.status_code if asset else None,
    "home_http": [plain_home.status_code, plain_home.get("Location", "")],
    "healthz_http": plain_health.status_code,
    "hsts": secure_health.get("Strict-Transport-Security", ""),
}}))
"""


def test_production_serves_hashed_static_files_with_https_and_hsts(tmp_path):
    """DEBUG off: collectstatic with the manifest storage, docs assets from whitenoise, HTTPS redirect, HSTS."""
    env = production(STATIC_ROOT=str(tmp_path / "static"))
    result = run(tmp_path, ["-c", PRODUCTION_PROBE.format(host=HOST)], **env)
    assert result.returncode == 0, result.stderr
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe["docs"] == 200
    # Hashed names from the manifest (name.<12 hex>.js), served by whitenoise, no CDN.
    assert probe["assets"] and all(re.search(r"\.[0-9a-f]{12}\.(js|css|png)$", a) for a in probe["assets"])
    assert probe["asset_status"] == 200
    assert probe["home_http"] == [301, f"https://{HOST}/"]
    assert probe["healthz_http"] == 200  # the load balancer's plain-HTTP probe is not redirected
    assert "max-age=31536000" in probe["hsts"] and "includeSubDomains" in probe["hsts"]


# --- Health check ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_healthz_reports_database_ok_and_the_broker_inline_without_one(client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = True
    answer = client.get("/healthz")
    assert answer.status_code == 200
    assert answer.json() == {"database": "ok", "broker": "inline"}
    assert client.head("/healthz").status_code == 200  # monitors that probe with HEAD
    assert client.post("/healthz").status_code == 405


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the socket is: nothing listens there


@pytest.mark.django_db
def test_healthz_is_503_when_the_broker_does_not_answer(client, settings):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{closed_port()}/0"
    answer = client.get("/healthz")
    assert answer.status_code == 503
    assert answer.json() == {"database": "ok", "broker": "error"}


@pytest.mark.django_db
def test_healthz_is_503_when_the_database_does_not_answer(client, settings, monkeypatch):
    settings.CELERY_TASK_ALWAYS_EAGER = True

    def broken_cursor(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(health.connection, "cursor", broken_cursor)
    answer = client.get("/healthz")
    assert answer.status_code == 503
    assert answer.json() == {"database": "error", "broker": "inline"}


@pytest.mark.redis
@pytest.mark.django_db
def test_healthz_reaches_a_real_broker(client, settings, redis_url):
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = redis_url
    answer = client.get("/healthz")
    assert (answer.status_code, answer.json()) == (200, {"database": "ok", "broker": "ok"})


@pytest.mark.django_db
def test_the_api_and_the_login_limiter_keep_working_when_the_redis_cache_is_down(settings, caplog):
    settings.CACHES = {
        "default": {
            "BACKEND": "ratinggame.cache.FailOpenRedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/1",
        }
    }
    client = token_client(annotator(state="game"))
    assert client.get("/api/game/step").status_code == 200  # throttled endpoint: counts fail, request does not
    failed = Client().post("/accounts/login/", {"username": "nobody", "password": "x"})
    assert failed.status_code == 200  # a wrong password, reported as such
    assert any("cache unavailable" in r.getMessage() for r in caplog.records if r.name == "ratinggame.cache")


# --- Request ids and structured logs ----------------------------------------------------------------


@pytest.mark.django_db
def test_request_ids_are_made_propagated_and_sanitised(client, caplog):
    fresh = client.get("/healthz")
    assert re.fullmatch(r"[0-9a-f]{32}", fresh["X-Request-ID"])
    assert client.get("/healthz", HTTP_X_REQUEST_ID="lb-7f3a.2:9").get("X-Request-ID") == "lb-7f3a.2:9"
    for forged in ("two words", "x" * 129, "id\nINFO forged log line"):
        replaced = client.get("/healthz", HTTP_X_REQUEST_ID=forged)["X-Request-ID"]
        assert re.fullmatch(r"[0-9a-f]{32}", replaced), forged

    user = annotator()
    client.force_login(user)
    caplog.clear()
    caplog.handler.addFilter(RequestIdFilter())  # as the console handler has it
    with caplog.at_level(logging.INFO, logger="ratinggame.request"):
        client.get("/me/", HTTP_X_REQUEST_ID="trace-42")
    record = next(r for r in caplog.records if r.name == "ratinggame.request")
    assert (record.method, record.path, record.status, record.user_id) == ("GET", "/me/", 200, user.pk)
    assert record.request_id == "trace-42" and record.duration_ms >= 0
    outside = logging.LogRecord("x", logging.INFO, __file__, 1, "after the request", (), None)
    RequestIdFilter().filter(outside)
    assert outside.request_id == "-"


def test_json_formatter_writes_one_object_per_record():
    record = logging.LogRecord("ratinggame.request", logging.INFO, __file__, 1, "GET %s", ("/x",), None)
    record.request_id, record.method, record.status, record.duration_ms = "abc", "GET", 200, 1.5
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "GET /x" and entry["level"] == "INFO" and entry["logger"] == "ratinggame.request"
    assert (entry["request_id"], entry["method"], entry["status"], entry["duration_ms"]) == ("abc", "GET", 200, 1.5)


JSON_LOG_PROBE = """
import django
django.setup()
from django.test import Client
Client().get("/healthz", HTTP_X_REQUEST_ID="probe-1")
"""


def test_json_log_format_emits_json_lines_with_the_request_fields(tmp_path):
    result = run(tmp_path, ["-c", JSON_LOG_PROBE], DJANGO_LOG_FORMAT="json")
    assert result.returncode == 0, result.stderr
    entries = [json.loads(line) for line in result.stderr.splitlines() if line.startswith("{")]
    request = next(e for e in entries if e["logger"] == "ratinggame.request")
    assert request["request_id"] == "probe-1"
    assert (request["method"], request["path"], request["status"]) == ("GET", "/healthz", 200)
    assert request["user_id"] is None and request["duration_ms"] >= 0


# --- Log-in limiter ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_the_login_page_answers_429_after_ten_failures_for_a_username_and_address(settings):
    settings.LOGIN_MAX_FAILURES = 10
    annotator(username="victim")
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(10):
        assert attacker.post("/accounts/login/", {"username": "victim", "password": "guess"}).status_code == 200
    blocked = attacker.post("/accounts/login/", {"username": "victim", "password": PASSWORD})
    assert blocked.status_code == 429
    assert "Too many failed log-in attempts" in blocked.content.decode()
    assert 0 < int(blocked["Retry-After"]) <= settings.LOGIN_FAILURE_WINDOW_SECONDS
    # The same limit at the other doors, for the same username and address.
    assert attacker.post("/admin/login/", {"username": "victim", "password": PASSWORD}).status_code == 429
    api = APIClient(REMOTE_ADDR="203.0.113.9")
    refused = api.post("/api/auth/token", {"username": "victim", "password": PASSWORD}, format="json")
    assert (refused.status_code, error_of(refused)["code"]) == (429, "throttled")
    # The rater logs in from their own address; a log-in clears their count there.
    rater = Client(REMOTE_ADDR="198.51.100.7")
    assert rater.post("/accounts/login/", {"username": "victim", "password": PASSWORD}).status_code == 302


@pytest.mark.django_db
@pytest.mark.parametrize("door", ["/accounts/login/", "/admin/login/"])
def test_another_spelling_of_a_blocked_username_is_blocked_too(settings, door):
    """Issue 15: the fullwidth spelling (NFKC-equal) of a blocked account got fresh tries and
    logged in; a case variant is the same account too."""
    settings.LOGIN_MAX_FAILURES = 3
    UserFactory(username="Victim7", is_staff=True)
    attacker = Client(REMOTE_ADDR="203.0.113.9")
    for _ in range(3):
        attacker.post(door, {"username": "Victim7", "password": "guess"})
    for spelling in ("Ｖｉｃｔｉｍ７", "victim7", " VICTIM7 "):
        answer = attacker.post(door, {"username": spelling, "password": PASSWORD})
        assert answer.status_code == 429, (spelling, answer.status_code)
    assert "_auth_user_id" not in attacker.session


@pytest.mark.django_db
def test_a_successful_login_clears_the_failures(settings):
    settings.LOGIN_MAX_FAILURES = 3
    annotator(username="forgetful")
    client = Client(REMOTE_ADDR="192.0.2.1")
    for _ in range(2):
        client.post("/accounts/login/", {"username": "forgetful", "password": "typo"})
    assert client.post("/accounts/login/", {"username": "forgetful", "password": PASSWORD}).status_code == 302
    client.logout()
    for _ in range(2):
        assert client.post("/accounts/login/", {"username": "forgetful", "password": "typo"}).status_code == 200
    assert client.post("/accounts/login/", {"username": "forgetful", "password": PASSWORD}).status_code == 302


# --- CSRF -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_csrf_is_enforced_on_session_authenticated_api_posts_but_not_token_ones():
    from tests.factories import CaptionPairFactory

    CaptionPairFactory()
    user = annotator(state="game")
    browser = APIClient(enforce_csrf_checks=True)
    browser.force_login(user)
    refused = browser.post("/api/game/next", format="json")
    assert refused.status_code == 403
    assert "CSRF" in error_of(refused)["message"]
    browser.get("/accounts/login/")  # any page with a form sets the CSRF cookie
    token = browser.cookies["csrftoken"].value
    assert browser.post("/api/game/next", format="json", HTTP_X_CSRFTOKEN=token).status_code == 200
    script = token_client(user)
    script.handler.enforce_csrf_checks = True
    assert script.post("/api/game/next", format="json").status_code == 200


@pytest.mark.django_db
def test_html_forms_need_the_csrf_token():
    annotator(username="formuser")
    client = Client(enforce_csrf_checks=True)
    assert client.post("/accounts/login/", {"username": "formuser", "password": PASSWORD}).status_code == 403


# --- Media in production ----------------------------------------------------------------------------


@pytest.mark.django_db
def test_images_are_served_in_production_and_nothing_else_under_media(client, settings):
    image = ImageFactory(seed=77)
    answer = client.get(image.file.url)
    assert answer.status_code == 200
    assert b"".join(answer.streaming_content) == png_bytes(77)
    assert answer["Content-Type"] == "image/png"
    assert "immutable" in answer["Cache-Control"]
    exports = settings.MEDIA_ROOT / "exports"
    exports.mkdir(parents=True)
    (exports / "1.zip").write_bytes(b"PK")
    for path in ("/media/exports/1.zip", f"/media/{image.file.name}/../../exports/1.zip", "/media/images/x.png"):
        assert client.get(path).status_code == 404, path


@pytest.mark.django_db
def test_images_can_be_handed_to_nginx_with_x_accel_redirect(client, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MEDIA_ACCEL_REDIRECT": "/protected-media/"}
    image = ImageFactory(seed=78)
    answer = client.get(image.file.url)
    assert answer.status_code == 200
    assert answer["X-Accel-Redirect"] == f"/protected-media/{image.file.name}"
    assert answer.content == b""


# --- Upload limits -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_manifest_uploads_over_the_size_limit_are_refused_before_reading(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MAX_UPLOAD_BYTES": 1000}
    client = token_client(researcher())
    from django.core.files.uploadedfile import SimpleUploadedFile

    big = SimpleUploadedFile("pairs.csv", b"image,caption\n" + b"a.png,x\n" * 200)
    answer = client.post("/api/pairs/import", {"manifest": big}, format="multipart")
    assert answer.status_code == 413
    assert error_of(answer)["code"] == "too_large"
