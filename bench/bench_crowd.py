"""The crowd simulator against the two ways the site is served: 5xx answers, ratings/s, latency.

Not a test: it prints figures. Two setups, each on a database of its own made for the run:

- ``sqlite``: what ``make run`` serves (``manage.py migrate``, ``load_demo``, then gunicorn with
  ``ratinggame/embedded_server.py`` on SQLite under a fresh var folder, tasks inline), 30 raters
  by default;
- ``pg``: gunicorn on PostgreSQL (``<db>_<raters>``, dropped and rebuilt, dropped again at the
  end), 50 raters by default.

The rating delay is 0 (RATINGGAME_MIN_SECONDS_PER_RATING=0, the setting meant for tests and
benchmarks) and the API throttles are raised, so the raters press the server as hard as their
one request at a time allows. The researcher API uploads the missing tutorial, probation and
control pools and ``raters x pairs-per-rater`` game pairs (``--setup``), then every simulated
rater signs up, consents and plays (tutorial, probation where it fails, game) through the HTTP
API, all raters at once: each run is a burst of that many first requests. ``--runs`` repeats
each run (a fresh database each time); a connection the server resets is an "other" error.

Printed per run: ratings acknowledged (and stored, counted in the database afterwards), the
server's 5xx answers by status (the simulator retries them, so each retry that failed again
counts once more), the other errors, ratings/s over the play phase, p50/p99 latency of
``POST /api/game/next`` (serve) and ``POST /api/game/submit`` (submit) as the client saw them,
and the load average (1, 5, 15 min) when the run ended.

    .venv/bin/python bench/bench_crowd.py [--setups sqlite,pg] [--sqlite-raters 30] [--pg-raters 50]
        [--pg postgres://postgres@127.0.0.1:5432] [--db bench_crowd] [--pairs-per-rater 10]
        [--workers 4] [--seed 0] [--runs 1] [--json]

With ``--json`` the last line is one JSON object: ``{"runs": [{"setup", "raters", "ratings_per_s",
"serve_p50_ms", ...}], "command", "date", "load"}`` (``bench/figures/crowd.json`` is one, which
``bench/plots.py`` draws as ratings/s against raters for each setup).
"""

import argparse
import json
import logging
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

# bench/helpers.py, beside this script
from helpers import database_create, database_drop, embedded_server, free_port, wait_up

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
SERVER_ERROR = re.compile(r":http_(5\d\d)$")


def server_env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CELERY_", "DJANGO_", "RATINGGAME_", "DATABASE_"))}
    env.update(
        {
            "DJANGO_LOG_LEVEL": "WARNING",
            "RATINGGAME_MIN_SECONDS_PER_RATING": "0",
            "RATINGGAME_THROTTLE_USER": "1000000/min",
            "RATINGGAME_THROTTLE_ANON": "1000000/min",
            "RATINGGAME_THROTTLE_SIGNUP": "1000000/hour",
        }
    )
    env.update(settings)
    return env


def manage(env: dict[str, str], *arguments: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *arguments], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def server_errors(report: dict) -> Counter:
    """5xx answers by status, from the simulator's error records (``<kind>:http_<status>``)."""
    counts: Counter = Counter()
    for key, count in report["errors"].items():
        found = SERVER_ERROR.search(key)
        if found:
            counts[int(found.group(1))] += count
    return counts


def crowd_run(url: str, token: str, args, raters: int) -> dict:
    config = CrowdConfig(
        server=url,
        raters=raters,
        pairs=raters * args.pairs_per_rater,
        seed=args.seed,
        admin_token=token,
        setup=True,
        timeout=60,
    )
    return crowd_simulate(config).report


def served(command: list[str], env: dict[str, str], port: int, name: str, run) -> dict:
    """Start the server, ``run(url)`` against it, stop it; the server's output goes to a log file."""
    with tempfile.TemporaryFile() as log:
        server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_up(url, server, name)
            return run(url)
        finally:
            server.terminate()
            server.wait(timeout=30)


def sqlite_run(args, raters: int) -> dict:
    """``make run``'s server: migrate, load the demo, gunicorn on SQLite under a fresh var folder."""
    with tempfile.TemporaryDirectory(prefix="bench-crowd-var-") as var:
        env = server_env(RATINGGAME_VAR_DIR=var)
        manage(env, "migrate", "--noinput", "-v0")
        manage(env, "load_demo")
        token = manage(env, "shell", "-v0", "-c", RESEARCHER_SNIPPET)
        port = free_port()
        report = served(
            embedded_server(port), env, port, "make run's gunicorn", lambda url: crowd_run(url, token, args, raters)
        )
        with sqlite3.connect(Path(var) / "db.sqlite3") as db:
            report["ratings_stored"] = db.execute("SELECT count(*) FROM ratinggame_rating").fetchone()[0]
        return report


def pg_run(args, raters: int) -> dict:
    """gunicorn with ``--workers`` processes on a PostgreSQL database made for the run."""
    db_url = f"{args.pg}/{args.db}_{raters}"
    database_create(db_url)
    try:
        with tempfile.TemporaryDirectory(prefix="bench-crowd-media-") as media:
            env = server_env(DATABASE_URL=db_url, MEDIA_ROOT=media)
            manage(env, "migrate", "-v0")
            token = manage(env, "shell", "-v0", "-c", RESEARCHER_SNIPPET)
            port = free_port()
            command = [PYTHON, "-m", "gunicorn", "ratinggame.wsgi", "--bind", f"127.0.0.1:{port}"]
            command += ["--workers", str(args.workers), "--timeout", "120"]
            report = served(command, env, port, "gunicorn", lambda url: crowd_run(url, token, args, raters))
        import psycopg2

        with psycopg2.connect(db_url) as connection, connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM ratinggame_rating")
            report["ratings_stored"] = cursor.fetchone()[0]
        connection.close()
        return report
    finally:
        if not args.keep:
            database_drop(db_url)


def figures_of(setup: str, raters: int, report: dict) -> dict:
    """One run's figures, as ``--json`` keeps them."""
    fives = sum(server_errors(report).values())
    return {
        "setup": setup,
        "raters": raters,
        "ratings_acknowledged": report["ratings_acknowledged"],
        "ratings_stored": report["ratings_stored"],
        "server_errors": fives,
        "other_errors": report["errors_total"] - fives,
        "ratings_per_s": report["throughput_ratings_per_s"],
        "serve_p50_ms": report["latency"]["serve"]["p50_ms"],
        "submit_p50_ms": report["latency"]["submit"]["p50_ms"],
    }


def print_row(setup: str, raters: int, report: dict) -> None:
    fives = server_errors(report)
    by_status = " ".join(f"{status}:{count}" for status, count in sorted(fives.items())) or "-"
    serve, submit = report["latency"]["serve"], report["latency"]["submit"]
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"{setup:<24} {raters:>6} {report['pairs']:>6} {report['ratings_acknowledged']:>6} "
        f"{report['ratings_stored']:>6} {sum(fives.values()):>5} {by_status:<14} "
        f"{report['errors_total'] - sum(fives.values()):>6} {report['play_seconds']:>7.1f} "
        f"{report['throughput_ratings_per_s']:>9.1f} {serve['p50_ms']:>9.1f} {serve['p99_ms']:>9.1f} "
        f"{submit['p50_ms']:>10.1f} {submit['p99_ms']:>10.1f}  {load}",
        flush=True,
    )
    if report["errors_total"]:
        print(f"    errors: {report['errors']}")
    if report["gave_up"]:
        print(f"    gave up: {report['gave_up']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--setups", default="sqlite,pg", help="sqlite (make run), pg (gunicorn)")
    parser.add_argument("--sqlite-raters", default="30", help="comma-separated crowd sizes for sqlite")
    parser.add_argument("--pg-raters", default="50", help="comma-separated crowd sizes for pg")
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="server URL, no database")
    parser.add_argument("--db", default="bench_crowd", help="database name prefix (one database per size)")
    parser.add_argument("--pairs-per-rater", type=int, default=10, help="game pairs = raters x this")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL databases")
    parser.add_argument("--runs", type=int, default=1, help="runs of each setup and size (bursts)")
    parser.add_argument("--json", action="store_true", help="end with the runs' figures as one JSON line")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)

    runs = {
        "sqlite": (sqlite_run, args.sqlite_raters, "make run, SQLite"),
        "pg": (pg_run, args.pg_raters, f"gunicorn x{args.workers}, PostgreSQL"),
    }
    print(f"delay 0 s, {os.cpu_count()} CPUs; load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(
        f"{'setup':<24} {'raters':>6} {'pairs':>6} {'acked':>6} {'stored':>6} {'5xx':>5} {'5xx by status':<14} "
        f"{'other':>6} {'play s':>7} {'ratings/s':>9} {'serve p50':>9} {'serve p99':>9} {'submit p50':>10} "
        f"{'submit p99':>10}  load average (1 5 15 min) at the end; latencies in ms"
    )
    figures = []
    for setup in args.setups.split(","):
        run, sizes, name = runs[setup]
        for raters in (int(n) for n in sizes.split(",")):
            for _ in range(args.runs):
                report = run(args, raters)
                print_row(name, raters, report)
                figures.append(figures_of(name, raters, report))
    if args.json:
        command = " ".join([".venv/bin/python", "bench/bench_crowd.py", *sys.argv[1:]])
        when = datetime.now(UTC).date().isoformat()
        print(json.dumps({"runs": figures, "command": command, "date": when, "load": os.getloadavg()}))


if __name__ == "__main__":
    main()
