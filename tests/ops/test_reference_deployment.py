"""The reference deployment, brought up from its own files: gunicorn started with
``deploy/gunicorn.conf.py`` and production settings on the test database, behind nginx running
``deploy/nginx.conf`` as written (only its addresses, its certificate, a self-signed one, and the
media folder put to the test's). Through nginx over HTTPS: the health check, a page with HSTS, a
hashed static file, the API page's script rating a pair, an image sent by nginx from
``X-Accel-Redirect`` (the header never reaches the client), the request id made by nginx; over
plain HTTP the health check, a Let's Encrypt challenge's token from certbot's webroot and a
redirect to HTTPS; and the systemd units start what the deployment guide starts, with the queues
the site routes to, after the services they use."""

import configparser
import os
import re
import shutil
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from django.conf import settings as django_settings

from tests.conftest import service_missing
from tests.docs.api_page import needs_curl_and_jq, play_the_script
from tests.factories import TutorialPairFactory
from tests.live_process import ROOT, free_port, process_stop, server_env, wait_until_up

pytestmark = pytest.mark.django_db(transaction=True)

DEPLOY = ROOT / "deploy"


def self_signed_certificate(tmp: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (openssl), as certbot would leave them."""
    cert, key = tmp / "fullchain.pem", tmp / "privkey.pem"
    request = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    made = subprocess.run(
        [*request, "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost", "-keyout", str(key), "-out", str(cert)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    return cert, key


def nginx_config(tmp: Path, *, plain: int, tls: int, upstream: str, media_root: Path, webroot: Path) -> Path:
    """A whole nginx.conf around ``deploy/nginx.conf``, with the test's ports, certificate,
    gunicorn, media and certbot's webroot."""
    server = (DEPLOY / "nginx.conf").read_text()
    cert, key = self_signed_certificate(tmp)
    for written, here in (
        ("server 127.0.0.1:8000;", f"server {upstream};"),
        ("listen 80;", f"listen 127.0.0.1:{plain};"),
        ("listen 443 ssl http2;", f"listen 127.0.0.1:{tls} ssl http2;"),
        ("/etc/letsencrypt/live/ratings.example.org/fullchain.pem;", f"{cert};"),
        ("/etc/letsencrypt/live/ratings.example.org/privkey.pem;", f"{key};"),
        ("alias /srv/ratinggame/media/;", f"alias {media_root}/;"),
        ("root /var/www/html;", f"root {webroot};"),
        ("/var/log/nginx/ratinggame.access.log", str(tmp / "ratinggame.access.log")),
    ):
        assert written in server, written
        server = server.replace(written, here)
    (tmp / "ratinggame.conf").write_text(server)
    temp = {name: tmp / name for name in ("body", "proxy", "fastcgi", "uwsgi", "scgi")}
    for folder in temp.values():
        folder.mkdir()
    whole = f"""
daemon off;
user root;
worker_processes 1;
pid {tmp}/nginx.pid;
error_log {tmp}/error.log warn;
events {{ worker_connections 64; }}
http {{
    include /etc/nginx/mime.types;
    access_log {tmp}/access.log;
    client_body_temp_path {temp["body"]};
    proxy_temp_path {temp["proxy"]};
    fastcgi_temp_path {temp["fastcgi"]};
    uwsgi_temp_path {temp["uwsgi"]};
    scgi_temp_path {temp["scgi"]};
    include {tmp}/ratinggame.conf;
}}
"""
    (tmp / "nginx.conf").write_text(whole)
    return tmp / "nginx.conf"


@needs_curl_and_jq
def test_gunicorn_behind_nginx_from_the_deployments_own_files(require_postgres, tmp_path):
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if nginx is None:
        service_missing("needs nginx: apt-get install nginx")
    media_root = Path(django_settings.MEDIA_ROOT)
    pair = TutorialPairFactory(caption="A red box on green grass", expert_rating=4)
    image_path = media_root / pair.image.file.name
    extra = {
        "STATIC_ROOT": str(tmp_path / "static"),
        "DJANGO_NUM_PROXIES": "1",
        "DJANGO_SECURE_SSL_REDIRECT": "1",
        "RATINGGAME_MEDIA_ACCEL_REDIRECT": "/protected-media/",
    }
    env = server_env(media_root=media_root, min_seconds=3, extra=extra)
    collect = [sys.executable, "manage.py", "collectstatic", "--noinput"]
    collected = subprocess.run(collect, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert collected.returncode == 0, collected.stderr[-2000:]
    web_port, plain_port, tls_port = free_port(), free_port(), free_port()
    env |= {"GUNICORN_BIND": f"127.0.0.1:{web_port}", "GUNICORN_WORKERS": "2"}
    web_log, proxy_log = tmp_path / "gunicorn.log", tmp_path / "error.log"
    gunicorn = [sys.executable, "-m", "gunicorn", "-c", str(DEPLOY / "gunicorn.conf.py"), "ratinggame.wsgi"]
    upstream = f"127.0.0.1:{web_port}"
    webroot = tmp_path / "webroot"
    challenges = webroot / ".well-known" / "acme-challenge"
    challenges.mkdir(parents=True)
    (challenges / "a-token").write_text("a-token.a-key-thumbprint")  # as certbot --webroot writes it
    conf = nginx_config(
        tmp_path, plain=plain_port, tls=tls_port, upstream=upstream, media_root=media_root, webroot=webroot
    )
    checked = subprocess.run([nginx, "-t", "-c", str(conf)], capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    with web_log.open("wb") as log:
        web = subprocess.Popen(gunicorn, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until_up(f"http://127.0.0.1:{web_port}", web, web_log)
        proxy = subprocess.Popen([nginx, "-c", str(conf)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            plain, site = f"http://127.0.0.1:{plain_port}", f"https://127.0.0.1:{tls_port}"
            wait_until_up(plain, proxy, proxy_log)
            checked_health = httpx.get(f"{plain}/healthz", timeout=10)  # a load balancer's check, no TLS
            assert (checked_health.status_code, checked_health.json()["database"]) == (200, "ok")
            challenge = httpx.get(f"{plain}/.well-known/acme-challenge/a-token", timeout=10)
            assert (challenge.status_code, challenge.text) == (200, "a-token.a-key-thumbprint")  # not redirected
            moved = httpx.get(f"{plain}/play/", timeout=10)
            assert moved.status_code == 301 and moved.headers["Location"] == "https://127.0.0.1/play/"
            tls = httpx.Client(verify=ssl.create_default_context(cafile=tmp_path / "fullchain.pem"), timeout=10)
            health = tls.get(f"{site}/healthz")
            assert (health.status_code, health.json()["database"]) == (200, "ok")
            request_id = health.headers["X-Request-ID"]
            assert re.fullmatch(r"[0-9a-f]{32}", request_id)  # nginx's $request_id
            home = tls.get(f"{site}/")
            assert home.status_code == 200 and "Caption rating game" in home.text
            assert "max-age=" in home.headers["Strict-Transport-Security"]  # the site saw HTTPS
            static = re.search(r'href="(/static/css/site\.[0-9a-f]{12}\.css)"', home.text)
            assert static, "the page names its hashed stylesheet"
            css = tls.get(site + static[1])
            assert css.status_code == 200 and "max-age=315360000" in css.headers["Cache-Control"]
            answer = play_the_script(site, pair, env=os.environ | {"CURL_CA_BUNDLE": str(tmp_path / "fullchain.pem")})
            assert answer["points"] == 2
            image = tls.get(f"{site}{django_settings.MEDIA_URL}{pair.image.file.name}")
            assert image.status_code == 200 and image.content == image_path.read_bytes()
            assert "X-Accel-Redirect" not in image.headers  # nginx took it and sent the file
            hidden = tls.get(f"{site}/protected-media/{pair.image.file.name}")
            assert hidden.status_code == 404  # internal: never asked for from outside
            logged = (tmp_path / "ratinggame.access.log").read_text()
            assert '"GET /healthz HTTP/1.1" 200' in logged and request_id in logged  # the id, in nginx's line
        finally:
            process_stop(proxy)
    finally:
        process_stop(web)


def test_the_systemd_units_start_what_the_guide_starts():
    units = {
        path.stem: configparser.ConfigParser(interpolation=None) for path in (DEPLOY / "systemd").glob("*.service")
    }
    for name, unit in units.items():
        unit.read(DEPLOY / "systemd" / f"{name}.service")
    assert set(units) == {"ratinggame-web", "ratinggame-worker-default", "ratinggame-worker-gpu", "ratinggame-beat"}
    starts = {name: unit["Service"]["ExecStart"] for name, unit in units.items()}
    assert "gunicorn -c deploy/gunicorn.conf.py ratinggame.wsgi" in starts["ratinggame-web"]
    routed = {route["queue"] for route in django_settings.CELERY_TASK_ROUTES.values()} | {"default"}
    for name in ("ratinggame-worker-default", "ratinggame-worker-gpu"):
        queue = re.search(r"-Q (\w+)", starts[name])[1]
        assert queue in routed, (name, queue)
    assert re.search(r"celery -A ratinggame beat\b", starts["ratinggame-beat"])
    for name, unit in units.items():
        # Started after the services each uses when they run on the same machine (beat: Redis only).
        uses = {"redis-server.service"} | (set() if name == "ratinggame-beat" else {"postgresql.service"})
        assert uses | {"network-online.target"} <= set(unit["Unit"]["After"].split()), name
        assert "network-online.target" in unit["Unit"]["Wants"].split(), name
        assert unit["Service"]["EnvironmentFile"] == "/etc/ratinggame/env"
        assert unit["Service"]["ExecStart"].split()[0] in {
            "/srv/ratinggame/.venv/bin/gunicorn",
            "/srv/ratinggame/.venv/bin/celery",
        }


def test_the_environments_static_root_is_not_the_projects_static_folder():
    """collectstatic's folder must lie outside the tracked static/ that STATICFILES_DIRS names:
    Django's check staticfiles.E002 stops migrate, collectstatic and the web unit otherwise."""
    lines = (DEPLOY / "env.example").read_text().splitlines()
    written = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    project = Path("/srv/ratinggame")  # the units' WorkingDirectory
    static_root = Path(written["STATIC_ROOT"])
    sources = [project / Path(folder).relative_to(ROOT) for folder in django_settings.STATICFILES_DIRS]
    assert static_root not in sources and static_root.is_relative_to(project / "var")
