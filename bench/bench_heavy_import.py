"""A heavy but valid upload: 100 rows of 40-megapixel PNGs through ``POST /api/pairs/import``.

Not a test: it prints figures. The PNGs are made with Pillow, each one flat colour (a colour of
its own, so 100 different files) at 8000 x 5000 = 40,000,000 pixels, the site's default image
limit; flat colour compresses, so the upload weighs about 11 MB while checking and copying the
images decodes 4 billion pixels. They are made once and kept under ``--cache``.

Setups, each on a database of its own made for the run:

- ``prod``: production settings (DJANGO_DEBUG=0, secret key and allowed host set), gunicorn with
  its default 30-s worker timeout, PostgreSQL, a Redis broker and one ``default`` Celery worker;
- ``kill`` (not run by default): ``prod`` with Celery beat and a short sweep period
  (``--sweep-seconds``); the worker is killed while the job runs and a fresh one started: the
  job's states after the kill (sent again by the sweep and done, or failed with the reason when
  ``--kill-folder`` removed its upload);
- ``embedded``: what ``make run`` serves (its gunicorn, SQLite, no broker: tasks inline, large
  imports and display copies in the embedded worker's thread).

Printed per setup: the upload's size, the HTTP status and time of the answer, and then, polling
``GET /api/imports/<id>/``, the job's final status, its message and when it got there, the pairs
stored and the display copies made by then (they are tasks of their own, after the job), and the
load average (1, 5, 15 min) at the answer and at the end.

    .venv/bin/python bench/bench_heavy_import.py [--setups prod,embedded,kill] [--images 100]
        [--pg postgres://postgres@127.0.0.1:5432] [--db bench_heavy] [--redis redis://127.0.0.1:6379/11]
        [--cache /tmp/bench-heavy-pngs] [--wait 900] [--sweep-seconds 20] [--kill-folder]
"""

import argparse
import io
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import redis
from helpers import database_create, database_drop, embedded_server, free_port, wait_up  # beside this script
from PIL import Image as PILImage

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
SIZE = (8000, 5000)  # 40,000,000 pixels: RATINGGAME_MAX_IMAGE_PIXELS's default
RESEARCHER_SNIPPET = """
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from annotators.roles import RESEARCHER, ensure_roles
user = get_user_model().objects.create_user(username="bench-researcher", password=None)
user.groups.add(ensure_roles()[RESEARCHER])
print(Token.objects.create(user=user).key)
"""
COUNTS_SNIPPET = """
from ratinggame.models import CaptionPair, Image
print(CaptionPair.objects.count(), sum(len(i.derivatives) for i in Image.objects.all()))
"""


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def pngs(cache: Path, count: int) -> list[Path]:
    """``count`` flat-colour 40-Mpx PNGs, made once (about a second each) and kept in ``cache``."""
    cache.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(count):
        path = cache / f"flat-{index:03d}.png"
        if not path.exists():
            colour = ((index * 53) % 256, (index * 97) % 256, (index * 193) % 256)
            buffer = io.BytesIO()
            PILImage.new("RGB", SIZE, colour).save(buffer, format="PNG")
            path.write_bytes(buffer.getvalue())
        paths.append(path)
    return paths


def manage(env: dict[str, str], *arguments: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *arguments], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def base_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "RATINGGAME_", "DATABASE_"))}
    env.update({"DJANGO_LOG_LEVEL": "WARNING", **settings})
    return env


def upload_and_follow(url: str, token: str, images: list[Path], wait: float) -> dict:
    headers = {"Authorization": f"Token {token}", "X-Forwarded-Proto": "https"}
    manifest = "image,caption\n" + "".join(f"{path.name},a flat colour number {i}\n" for i, path in enumerate(images))
    files = [("manifest", ("pairs.csv", manifest.encode(), "text/csv"))]
    files += [("images", (path.name, path.read_bytes(), "image/png")) for path in images]
    size = sum(len(content[1]) for _, content in files)
    with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
        started = time.perf_counter()
        answer = client.post("/api/pairs/import", files=files)
        seconds = time.perf_counter() - started
        result = {"bytes": size, "status": answer.status_code, "seconds": seconds, "load_at_answer": load()}
        body = answer.json() if answer.headers.get("Content-Type", "").startswith("application/json") else {}
        job_url = body.get("url") or body.get("job_url")
        if answer.status_code == 201:
            result.update(job="done", job_seconds=seconds, message="imported within the request")
        while job_url and answer.status_code == 202 and time.perf_counter() - started < wait:
            job = client.get(job_url).json()
            if job["status"] in ("done", "failed"):
                result.update(job=job["status"], job_seconds=time.perf_counter() - started, message=job["error"] or "")
                break
            time.sleep(1)
        else:
            result.setdefault("job", "still running" if answer.status_code == 202 else "-")
    return result


def prod_run(args, images: list[Path]) -> dict:
    db_url = f"{args.pg}/{args.db}"
    database_create(db_url)
    media = tempfile.mkdtemp(prefix="bench-heavy-media-")
    env = base_env(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="bench-only-" + "x" * 40,
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=db_url,
        CELERY_BROKER_URL=args.redis,
        MEDIA_ROOT=media,
    )
    redis.Redis.from_url(args.redis).flushdb()  # no message of an earlier run
    processes = []
    try:
        manage(env, "migrate", "-v0")
        token = manage(env, "shell", "-v0", "-c", RESEARCHER_SNIPPET)
        port = free_port()
        quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT, "env": env}
        server = subprocess.Popen(
            [PYTHON, "-m", "gunicorn", "ratinggame.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "2"], **quiet
        )
        processes.append(server)
        worker = [PYTHON, "-m", "celery", "-A", "ratinggame", "worker", "-Q", "default", "--concurrency", "1"]
        processes.append(subprocess.Popen([*worker, "--loglevel", "WARNING"], **quiet))
        wait_up(f"http://127.0.0.1:{port}", server, "gunicorn")
        result = upload_and_follow(f"http://127.0.0.1:{port}", token, images, args.wait)
        result["pairs"], result["copies"] = manage(env, "shell", "-v0", "-c", COUNTS_SNIPPET).split()
        return result
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
        database_drop(db_url)


def kill_run(args, images: list[Path]) -> dict:
    """Production setup with Celery beat and a short sweep period; the worker is killed (SIGKILL,
    its whole process group) while the job runs, and a fresh worker started: when does the sweep
    settle the job, and how does it end? With ``--kill-folder`` the upload's folder is removed
    too, as in the issue, so the job cannot be run again and must fail with its reason."""
    db_url = f"{args.pg}/{args.db}"
    database_create(db_url)
    media = tempfile.mkdtemp(prefix="bench-heavy-media-")
    period = args.sweep_seconds
    env = base_env(
        DJANGO_DEBUG="0",
        DJANGO_SECRET_KEY="bench-only-" + "x" * 40,
        DJANGO_ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=db_url,
        CELERY_BROKER_URL=args.redis,
        MEDIA_ROOT=media,
        RATINGGAME_IMPORT_SWEEP_SECONDS=str(period),
        RATINGGAME_IMPORT_HEARTBEAT_SECONDS=str(max(1, period // 5)),
    )
    redis.Redis.from_url(args.redis).flushdb()
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "cwd": ROOT, "env": env}
    worker = [PYTHON, "-m", "celery", "-A", "ratinggame", "worker", "-Q", "default", "--concurrency", "1"]
    processes = []
    try:
        manage(env, "migrate", "-v0")
        token = manage(env, "shell", "-v0", "-c", RESEARCHER_SNIPPET)
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        server = subprocess.Popen([PYTHON, "-m", "gunicorn", "ratinggame.wsgi", "--bind", f"127.0.0.1:{port}"], **quiet)
        processes.append(server)
        beat = [PYTHON, "-m", "celery", "-A", "ratinggame", "beat", "-s", str(Path(media) / "beat-schedule")]
        processes.append(subprocess.Popen(beat, **quiet))
        doomed = subprocess.Popen(worker, start_new_session=True, **quiet)
        wait_up(url, server, "gunicorn")
        headers = {"Authorization": f"Token {token}", "X-Forwarded-Proto": "https"}
        manifest = "image,caption\n" + "".join(f"{path.name},colour {i}\n" for i, path in enumerate(images))
        files = [("manifest", ("pairs.csv", manifest.encode(), "text/csv"))]
        files += [("images", (path.name, path.read_bytes(), "image/png")) for path in images]
        with httpx.Client(base_url=url, headers=headers, timeout=600) as client:
            answer = client.post("/api/pairs/import", files=files)
            job_url = answer.json()["url"]
            while client.get(job_url).json()["status"] != "running":
                time.sleep(0.5)
            time.sleep(3)
            os.killpg(doomed.pid, signal.SIGKILL)
            doomed.wait()
            killed = time.perf_counter()
            killed_at = client.get(job_url).json()
            if args.kill_folder:
                for folder in (Path(media) / "imports").iterdir():
                    shutil.rmtree(folder)
            processes.append(subprocess.Popen(worker, **quiet))
            states = [f"killed at {killed_at['progress']:.0%} ({killed_at['status']})"]
            while time.perf_counter() - killed < args.wait:
                job = client.get(job_url).json()
                if job["status"] != "running" and not states[-1].startswith(job["status"]):
                    states.append(f"{job['status']} after {time.perf_counter() - killed:.1f} s")
                if job["status"] in ("done", "failed"):
                    break
                time.sleep(0.5)
        return {"period": period, "states": states, "error": job["error"], "answer": answer.status_code}
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
        database_drop(db_url)


def embedded_run(args, images: list[Path]) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-heavy-var-") as var:
        env = base_env(RATINGGAME_VAR_DIR=var)
        manage(env, "migrate", "-v0")
        token = manage(env, "shell", "-v0", "-c", RESEARCHER_SNIPPET)
        port = free_port()
        server = subprocess.Popen(
            embedded_server(port),
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_up(f"http://127.0.0.1:{port}", server, "make run's gunicorn")
            result = upload_and_follow(f"http://127.0.0.1:{port}", token, images, args.wait)
            result["pairs"], result["copies"] = manage(env, "shell", "-v0", "-c", COUNTS_SNIPPET).split()
        finally:
            server.terminate()
            server.wait(timeout=60)
        return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setups", default="prod,embedded")
    parser.add_argument("--images", type=int, default=100)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server URL, no database")
    parser.add_argument("--db", default="bench_heavy")
    parser.add_argument("--redis", default="redis://127.0.0.1:6379/11", help="a Redis database of its own (emptied)")
    parser.add_argument("--cache", default=str(Path(tempfile.gettempdir()) / "bench-heavy-pngs"))
    parser.add_argument("--wait", type=float, default=900, help="seconds to follow the job")
    parser.add_argument("--sweep-seconds", type=int, default=20, help="kill: the sweep's period (beat)")
    parser.add_argument("--kill-folder", action="store_true", help="kill: remove the upload's folder too")
    args = parser.parse_args()

    started = time.perf_counter()
    images = pngs(Path(args.cache), args.images)
    ready = time.perf_counter() - started
    print(f"{len(images)} PNGs of {SIZE[0]}x{SIZE[1]} px ready in {ready:.0f} s; {os.cpu_count()} CPUs; load {load()}")
    runs = {
        "prod": ("gunicorn, PostgreSQL, Celery", prod_run),
        "embedded": ("make run, SQLite, no broker", embedded_run),
    }
    for setup in args.setups.split(","):
        if setup == "kill":
            result = kill_run(args, images)
            print(
                f"worker killed mid-import (gunicorn, PostgreSQL, Celery + beat; sweep period {result['period']} s"
                f"{', upload folder removed' if args.kill_folder else ''}): HTTP {result['answer']}; "
                f"{'; '.join(result['states'])}{' (' + result['error'] + ')' if result['error'] else ''}; "
                f"load {load()}",
                flush=True,
            )
            continue
        name, run = runs[setup]
        result = run(args, images)
        print(
            f"{name}: upload {result['bytes'] / 1e6:.1f} MB -> HTTP {result['status']} in {result['seconds']:.2f} s "
            f"(load {result['load_at_answer']}); job {result['job']} after {result.get('job_seconds', 0):.1f} s"
            f"{' (' + result['message'] + ')' if result.get('message') else ''}; "
            f"{result.get('pairs', '?')} pairs, {result.get('copies', '?')} display copies so far; "
            f"load at the end {load()}",
            flush=True,
        )


if __name__ == "__main__":
    main()
