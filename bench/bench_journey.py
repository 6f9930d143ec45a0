"""Serve + submit throughput of the game on PostgreSQL behind gunicorn, and next-pair latency at scale.

Not a test: it prints figures. For each pool size it builds a database of its own
(``bench_journey_<size>``, dropped and rebuilt), starts gunicorn on it and drives the JSON
endpoints ``POST /api/game/next`` and ``POST /api/game/submit`` with token-authenticated
simulated raters (threads, one HTTP request at a time each, no pause between requests).

- Next-pair latency: one rater, serve + submit in turn, at 10K and at 1M game pairs; the
  ratio of the medians (goal <= 1.5).
- Throughput at 10 and 50 concurrent raters on the 10K pool: ratings/s, p50/p99 latency of
  each request, and ratings acknowledged vs stored (goal: 0 lost; >= 300 ratings/s with
  p99 <= 100 ms at 50 raters).

The 3-second floor is switched off for the run only (RATINGGAME_MIN_SECONDS_PER_RATING=0),
and the per-user API throttle raised: a simulated rater rates far faster than a person may.

    .venv/bin/python bench/bench_journey.py [--pg postgres://postgres@127.0.0.1:5432]
        [--sizes 10000,1000000] [--raters 10,50] [--seconds 20] [--workers 4] [--keep]
"""

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
IMAGES = 1000  # pairs share images: 1000 captions per image at 1M pairs


# --- Building a bench database (runs in a child process: Django reads DATABASE_URL once) ---------


def build(db_url: str, pairs: int, raters: int, out: str) -> None:
    """Create the database, migrate, add `pairs` fresh game pairs and `raters` game raters with tokens."""
    import psycopg2

    server, name = db_url.rsplit("/", 1)
    admin = psycopg2.connect(f"{server}/postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        cursor.execute(f'CREATE DATABASE "{name}"')
    admin.close()

    os.environ["DATABASE_URL"] = db_url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratinggame.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from annotators.models import RaterProfile, RaterState
    from annotators.roles import ANNOTATOR, ensure_roles
    from ratinggame.models import CaptionPair, Image

    call_command("migrate", verbosity=0)
    started = time.perf_counter()
    images = Image.objects.bulk_create(
        Image(file=f"images/bench/{i}.png", sha256=f"{i:064x}", width=640, height=480, original_name=f"{i}.png")
        for i in range(IMAGES)
    )
    _insert_pairs(connection, CaptionPair, [image.pk for image in images], pairs)
    now = timezone.now()
    annotator = ensure_roles()[ANNOTATOR]
    tokens = []
    for i in range(raters):
        user = get_user_model().objects.create_user(username=f"bench{i}", password=None)
        user.groups.add(annotator)
        # In the game with the qualification window already passed: random ratings would fail it.
        RaterProfile.objects.create(
            user=user,
            state=RaterState.GAME,
            consent_at=now,
            game_entered_at=now,
            window_count=20,
            window_points=40,
        )
        tokens.append(Token.objects.create(user=user).key)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    build_seconds = time.perf_counter() - started
    query_ms = _candidate_query_ms(connection, get_user_model().objects.get(username="bench0"))
    Path(out).write_text(json.dumps({"tokens": tokens, "build_seconds": build_seconds, "query_ms": query_ms}))


def drop_database(db_url: str) -> None:
    import psycopg2

    server, name = db_url.rsplit("/", 1)
    admin = psycopg2.connect(f"{server}/postgres")
    admin.autocommit = True
    with admin.cursor() as cursor:
        cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    admin.close()


def _candidate_query_ms(connection, user) -> float:
    """Median execution time PostgreSQL reports for the next-pair query (EXPLAIN ANALYZE, 30 runs)."""
    from django.db import transaction

    from ratinggame.game.assignment import claim_query

    times = []
    with transaction.atomic(), connection.cursor() as cursor:
        sql, params = claim_query(rater=user)[:1].query.sql_with_params()
        for _ in range(30):
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            times.append(cursor.fetchone()[0][0]["Execution Time"])
    return statistics.median(times)


def _insert_pairs(connection, model, image_ids: list[int], count: int) -> None:
    """`count` fresh game pairs in one INSERT ... SELECT generate_series (a million in seconds).

    Every column but image, caption and created_at gets the model's default, as bulk_create
    would give it, so the rows are what the site itself creates.
    """
    from ratinggame.models import Pool, PrimingStatus

    chosen = {"pool": Pool.GAME, "primes": [3.0, 4.0], "priming_status": PrimingStatus.DONE}
    fixed = {
        field.column: field.get_db_prep_save(chosen.get(field.name, field.get_default()), connection)
        for field in model._meta.concrete_fields
        if not field.primary_key and field.name not in {"image", "caption", "created_at"}
    }
    columns = ", ".join(f'"{column}"' for column in ["image_id", "caption", "created_at", *fixed])
    values = ", ".join(["%s"] * len(fixed))
    sql = (
        f'INSERT INTO "{model._meta.db_table}" ({columns}) '  # noqa: S608 - names from the model, not input
        f"SELECT (%s::bigint[])[1 + g %% {len(image_ids)}], "
        f"'bench caption ' || g || ': a person riding a bicycle down a city street', now(), {values} "
        "FROM generate_series(0, %s - 1) AS g"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [image_ids, *fixed.values(), count])


# --- Driving the server -----------------------------------------------------------------------------


class Rater:
    """One simulated rater: next, submit, next, ... over a persistent HTTP connection."""

    def __init__(self, port: int, token: str) -> None:
        self.port = port
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.next_ms: list[float] = []
        self.submit_ms: list[float] = []
        self.acked: list[int] = []
        self.errors: dict[str, int] = {}
        self.done = False

    def _post(self, path: str, body: dict | None) -> tuple[int, dict]:
        payload = json.dumps(body or {})
        for attempt in range(2):
            try:
                self.connection.request("POST", path, payload, self.headers)
                response = self.connection.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    self.connection.close()
                return response.status, json.loads(data or b"{}")
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # A keep-alive connection the server closed between requests: reconnect once.
                self.connection.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def step(self) -> None:
        started = time.perf_counter()
        status, served = self._post("/api/game/next", None)
        self.next_ms.append((time.perf_counter() - started) * 1000)
        if status != 200 or "assignment_id" not in served:
            code = served.get("code") or served.get("error", {}).get("code") or str(status)
            self.errors[f"next:{code}"] = self.errors.get(f"next:{code}", 0) + 1
            self.done = code == "none_left"
            return
        started = time.perf_counter()
        status, feedback = self._post(
            "/api/game/submit", {"assignment_id": served["assignment_id"], "value": random.randint(1, 5)}
        )
        self.submit_ms.append((time.perf_counter() - started) * 1000)
        if status == 200:
            self.acked.append(feedback["rating_id"])
        else:
            code = feedback.get("error", {}).get("code") or str(status)
            self.errors[f"submit:{code}"] = self.errors.get(f"submit:{code}", 0) + 1


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def drive(port: int, tokens: list[str], seconds: float) -> dict:
    raters = [Rater(port, token) for token in tokens]
    stop = threading.Event()

    def loop(rater: Rater) -> None:
        while not stop.is_set() and not rater.done:
            rater.step()

    threads = [threading.Thread(target=loop, args=(rater,)) for rater in raters]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    next_ms = [ms for rater in raters for ms in rater.next_ms]
    submit_ms = [ms for rater in raters for ms in rater.submit_ms]
    errors: dict[str, int] = {}
    for rater in raters:
        for code, count in rater.errors.items():
            errors[code] = errors.get(code, 0) + count
    return {
        "elapsed": elapsed,
        "acked": [rating_id for rater in raters for rating_id in rater.acked],
        "next_ms": next_ms,
        "submit_ms": submit_ms,
        "errors": errors,
    }


def server_pids(server: subprocess.Popen, db_url: str) -> list[int]:
    """The gunicorn workers and the PostgreSQL backends serving the bench database."""
    import psycopg2

    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    with psycopg2.connect(db_url) as connection, connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        backends = [row[0] for row in cursor.fetchall()]
    return [int(pid) for pid in children] + backends


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes (from /proc; gone processes count 0)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / ticks


def stored_count(db_url: str, rating_ids: list[int]) -> int:
    import psycopg2

    with psycopg2.connect(db_url) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM ratinggame_rating WHERE id = ANY(%s)", (rating_ids,))
        return cursor.fetchone()[0]


def start_server(db_url: str, port: int, workers: int, log_path: Path) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "DJANGO_DEBUG": "0",
        "DJANGO_SECRET_KEY": "bench-only-" + "x" * 40,
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "RATINGGAME_MIN_SECONDS_PER_RATING": "0",
        "RATINGGAME_THROTTLE_USER": "1000000/min",
    }
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise SystemExit(f"port {port} is in use: choose another with --port")
    command = [
        GUNICORN,
        "ratinggame.wsgi",
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--timeout",
        "120",
    ]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log_path.open("w"), stderr=subprocess.STDOUT)
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            connection.request("GET", "/healthz")
            if connection.getresponse().status == 200:
                return server
        except OSError:
            time.sleep(0.3)
    server.terminate()
    raise SystemExit(f"gunicorn did not start; see {log_path}")


def summary(label: str, result: dict, stored: int) -> str:
    acked = len(result["acked"])
    both = result["next_ms"] + result["submit_ms"]
    return (
        f"{label}: {acked / result['elapsed']:.0f} ratings/s over {result['elapsed']:.1f} s | "
        f"next p50 {percentile(result['next_ms'], 50):.1f} ms p99 {percentile(result['next_ms'], 99):.1f} ms | "
        f"submit p50 {percentile(result['submit_ms'], 50):.1f} ms p99 {percentile(result['submit_ms'], 99):.1f} ms | "
        f"all requests p50 {percentile(both, 50):.1f} ms p99 {percentile(both, 99):.1f} ms | "
        f"acknowledged {acked}, stored {stored}, lost {acked - stored}"
        + (f" | refused {result['errors']}" if result["errors"] else "")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL (no db)")
    parser.add_argument("--sizes", default="10000,1000000", help="game pool sizes; the first one carries the load")
    parser.add_argument("--raters", default="10,50", help="concurrent raters of the throughput runs")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each throughput run")
    parser.add_argument("--latency-steps", type=int, default=300, help="serve + submit steps of the latency run")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn sync workers")
    parser.add_argument("--port", type=int, default=18437)
    parser.add_argument("--db-prefix", default="", help="prefix of the bench databases' names (bench_journey_<size>)")
    parser.add_argument("--keep", action="store_true", help="keep the bench databases (a 1M-pair one is ~1 GB)")
    parser.add_argument("--build", nargs=4, metavar=("DB_URL", "PAIRS", "RATERS", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build:
        build(args.build[0], int(args.build[1]), int(args.build[2]), args.build[3])
        return

    sizes = [int(size) for size in args.sizes.split(",")]
    concurrency = [int(n) for n in args.raters.split(",")]
    print(f"gunicorn sync workers: {args.workers}; CPUs: {os.cpu_count()}", flush=True)
    medians: dict[int, float] = {}
    for index, size in enumerate(sizes):
        db_url = f"{args.pg}/{args.db_prefix}bench_journey_{size}"
        raters = 1 + (max(concurrency) if index == 0 else 0)
        out = Path(f"/tmp/{args.db_prefix}bench_journey_{size}.json")
        started = time.perf_counter()
        subprocess.run([PYTHON, __file__, "--build", db_url, str(size), str(raters), str(out)], check=True)
        built = json.loads(out.read_text())
        print(
            f"[{size:,} game pairs] database built in {time.perf_counter() - started:.0f} s "
            f"(pairs and raters inserted in {built['build_seconds']:.0f} s); next-pair query in PostgreSQL "
            f"(EXPLAIN ANALYZE, median of 30): {built['query_ms']:.3f} ms",
            flush=True,
        )
        tokens = built["tokens"]
        server = start_server(db_url, args.port, args.workers, Path(f"/tmp/{args.db_prefix}bench_journey_{size}.log"))
        try:
            latency_rater = Rater(args.port, tokens[0])
            for _ in range(30):  # warm-up: imports, connections, caches
                latency_rater.step()
            latency_rater.next_ms.clear()
            latency_rater.submit_ms.clear()
            for _ in range(args.latency_steps):
                latency_rater.step()
            medians[size] = statistics.median(latency_rater.next_ms)
            print(
                f"[{size:,} game pairs] next-pair latency, one rater: p50 {medians[size]:.2f} ms, "
                f"p99 {percentile(latency_rater.next_ms, 99):.2f} ms ({len(latency_rater.next_ms)} serves)",
                flush=True,
            )
            if index == 0:
                for count in concurrency:
                    pids = server_pids(server, db_url)
                    cpu_before = cpu_seconds(pids)
                    result = drive(args.port, tokens[1 : 1 + count], args.seconds)
                    cpu_ms = (cpu_seconds(pids) - cpu_before) * 1000 / max(len(result["acked"]), 1)
                    stored = stored_count(db_url, result["acked"])
                    print(f"[{size:,} game pairs] " + summary(f"{count} raters", result, stored), flush=True)
                    print(
                        f"[{size:,} game pairs] {count} raters: server CPU per rating (gunicorn workers + "
                        f"PostgreSQL backends, next + submit) {cpu_ms:.1f} ms; load average during the run "
                        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs",
                        flush=True,
                    )
        finally:
            server.terminate()
            server.wait(timeout=30)
            if not args.keep:
                drop_database(db_url)
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        print(
            f"next-pair latency ratio {large:,} / {small:,} pairs (p50): {medians[large] / medians[small]:.2f} "
            "(goal <= 1.5)"
        )


if __name__ == "__main__":
    main()
