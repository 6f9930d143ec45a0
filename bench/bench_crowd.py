"""The crowd simulator against gunicorn on PostgreSQL: ratings/s and serve/submit latency.

Not a test: it prints figures. For each crowd size (10 and 50 raters by default) it builds a
database of its own (``<db>_<raters>``, dropped and rebuilt, dropped again at the end),
migrates it, makes a researcher with an API token, starts gunicorn on it with the rating delay
at 0 (RATINGGAME_MIN_SECONDS_PER_RATING=0, the setting meant for tests and benchmarks) and the
API throttles raised, and runs tools.simulator.crowd with ``--setup``: the tutorial and
probation pools and ``raters x pairs-per-rater`` game pairs are uploaded through the API, then
every simulated rater signs up and plays (tutorial, probation where it fails, game) through
the HTTP API, one request at a time each, all raters at once.

Printed per size: ratings acknowledged (and stored, counted in the database afterwards),
errors, ratings/s over the play phase (after every rater signed up), and the p50/p99 latency of
``POST /api/game/next`` (serve) and ``POST /api/game/submit`` (submit) as the client saw them.

    .venv/bin/python bench/bench_crowd.py [--pg postgres://postgres@127.0.0.1:5432] [--db bench_crowd]
        [--raters 10,50] [--pairs-per-rater 10] [--workers 4] [--seed 0]
"""

import argparse
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from helpers import free_port, wait_up  # bench/helpers.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tools.simulator.crowd import CrowdConfig, crowd_simulate  # noqa: E402 - after the path

PYTHON = sys.executable
RESEARCHER_SNIPPET = """
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from annotators.roles import RESEARCHER, ensure_roles
user = get_user_model().objects.create_user(username="bench-researcher", password=None)
user.groups.add(ensure_roles()[RESEARCHER])
print(Token.objects.create(user=user).key)
"""


def psql(server: str, sql: str) -> str:
    import psycopg2

    connection = psycopg2.connect(f"{server}/postgres")
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute(sql)
            return cursor.fetchone()[0] if cursor.description else ""
    finally:
        connection.close()


def stored_ratings(db_url: str) -> int:
    import psycopg2

    connection = psycopg2.connect(db_url)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM ratinggame_rating")
            return cursor.fetchone()[0]
    finally:
        connection.close()


def server_env(db_url: str, media: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "RATINGGAME_"))}
    env.update(
        {
            "DATABASE_URL": db_url,
            "MEDIA_ROOT": media,
            "DJANGO_LOG_LEVEL": "WARNING",
            "RATINGGAME_MIN_SECONDS_PER_RATING": "0",
            "RATINGGAME_THROTTLE_USER": "1000000/min",
            "RATINGGAME_THROTTLE_ANON": "1000000/min",
            "RATINGGAME_THROTTLE_SIGNUP": "1000000/hour",
        }
    )
    return env


def one_size(args, raters: int) -> dict:
    name = f"{args.db}_{raters}"
    db_url = f"{args.pg}/{name}"
    psql(args.pg, f'DROP DATABASE IF EXISTS "{name}"')
    psql(args.pg, f'CREATE DATABASE "{name}"')
    media = tempfile.mkdtemp(prefix="bench-crowd-media-")
    env = server_env(db_url, media)
    try:
        subprocess.run([PYTHON, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        token = subprocess.run(
            [PYTHON, "manage.py", "shell", "-v0", "-c", RESEARCHER_SNIPPET],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
        port = free_port()
        command = [PYTHON, "-m", "gunicorn", "ratinggame.wsgi", "--bind", f"127.0.0.1:{port}"]
        command += ["--workers", str(args.workers), "--timeout", "120"]
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_up(url, server, "gunicorn")
            config = CrowdConfig(
                server=url,
                raters=raters,
                pairs=raters * args.pairs_per_rater,
                seed=args.seed,
                admin_token=token,
                setup=True,
                timeout=60,
            )
            result = crowd_simulate(config)
        finally:
            server.terminate()
            server.wait(timeout=30)
        report = result.report
        report["ratings_stored"] = stored_ratings(db_url)
        return report
    finally:
        if not args.keep:
            psql(args.pg, f'DROP DATABASE IF EXISTS "{name}"')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server URL, no database")
    parser.add_argument("--db", default="bench_crowd", help="database name prefix (one database per size)")
    parser.add_argument("--raters", default="10,50")
    parser.add_argument("--pairs-per-rater", type=int, default=10, help="game pairs = raters x this")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the databases")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)

    print(f"gunicorn --workers {args.workers} on PostgreSQL, delay 0 s, {os.cpu_count()} CPUs")
    header = (
        f"{'raters':>6} {'pairs':>6} {'acked':>6} {'stored':>6} {'errors':>6} {'play s':>7} {'ratings/s':>9}"
        f" {'serve p50':>9} {'serve p99':>9} {'submit p50':>10} {'submit p99':>10}  (ms)"
    )
    print(header)
    for raters in (int(n) for n in args.raters.split(",")):
        report = one_size(args, raters)
        serve, submit = report["latency"]["serve"], report["latency"]["submit"]
        print(
            f"{raters:>6} {report['pairs']:>6} {report['ratings_acknowledged']:>6} {report['ratings_stored']:>6} "
            f"{report['errors_total']:>6} {report['play_seconds']:>7.1f} {report['throughput_ratings_per_s']:>9.1f}"
            f" {serve['p50_ms']:>9.1f} {serve['p99_ms']:>9.1f} {submit['p50_ms']:>10.1f} {submit['p99_ms']:>10.1f}",
            flush=True,
        )
        if report["errors_total"]:
            print(f"       errors: {report['errors']}")


if __name__ == "__main__":
    main()
