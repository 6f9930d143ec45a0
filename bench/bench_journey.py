"""The game's rating path on PostgreSQL behind gunicorn: throughput, latency, statements, profile.

Not a test: it prints figures. For each pool size it builds a database of its own
(``[--db-prefix]bench_journey_<size>``, dropped and rebuilt), starts gunicorn on it with
production settings and drives the JSON API with token-authenticated simulated raters
(threads, one HTTP request at a time each, no pause between ratings), in two ways of rating:

- ``one``: one request per rating, ``POST /api/game/submit`` with ``"next": true`` (the answer
  carries the feedback and the next pair);
- ``two``: ``POST /api/game/next``, then ``POST /api/game/submit``;
- ``page``: what the rating page's script sends, signed in with a browser session and its CSRF
  token: ``POST /play/submit/`` (form-encoded), whose answer carries the feedback panel and the
  next pair (a ``GET /play/game/`` only when a rater has no pair open);
- ``floor``: ``one``'s requests answered by ``floor_app.py`` (beside this script) under the same
  gunicorn: the rating's own SQL (the game's statements, built from the models) sent over
  psycopg2 by a bare WSGI app, no Django on the request: the cost of the database work alone,
  against which the API path is judged (goal: >= 0.5 of its ratings/s in the same run).

It prints, for the first pool size:

- statements per rating, counted through Django's WSGI handler (the production path: middleware,
  token authentication, the game; BEGIN and COMMIT included), and the connection health checks
  (one per request, not in Django's query log);
- for each way and each number of raters (10 and 50): ratings/s, p50 / p99 of each request and
  of each rating, the server's CPU per rating (gunicorn workers + PostgreSQL backends) and
  ratings acknowledged vs stored (goal: 0 lost);
- with ``--open-rate R``: an open loop, R ratings/s through the page for ``--seconds``, each rater
  with its rating page already open (as a browser rater has), each rating timed from when it was
  due; ``--trace FILE`` writes every rating's due time, lateness and requests;
- with ``--profile N``: a cProfile of N ratings through the WSGI handler in this machine's
  PostgreSQL, for each way: own time by layer and the top functions;

and the next-pair latency with one rater at 10K and at 1M pairs (goal: ratio of the p50 <= 1.5).
Goals (issue 14): >= 300 ratings/s with 50 raters, p99 <= 60 ms with 10 raters, <= 8 statements
per rating. The 3-second floor is switched off for the run only
(RATINGGAME_MIN_SECONDS_PER_RATING=0) and the per-user API throttle raised: a simulated rater
rates far faster than a person may. Each measured run starts from a vacuumed, analyzed database
(``vacuum``). The machine's load average is printed with every figure. A run that comes later
finds a warmer, busier machine (its load average climbs from the first run to the last), which
weighs on the ways' ratios: ``--rounds R`` repeats the throughput runs R times, the order of the
ways reversed every other round, and the goals take the median of the rounds (each ratio between
two runs of one round); a round of every way at 10 and 50 raters rates about 60,000 times, so more
rounds want a larger pool (``--sizes``) or shorter runs.

    .venv/bin/python bench/bench_journey.py [--pg postgres://postgres@127.0.0.1:5432] [--db-prefix P]
        [--sizes 10000,1000000] [--raters 10,50] [--modes one,two,page,floor] [--seconds 20] [--workers 4]
        [--profile 300] [--open-rate 100] [--trace FILE] [--rounds 2] [--keep]
"""

import argparse
import cProfile
import http.client
import io
import json
import math
import os
import pstats
import random
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlencode

from helpers import database_create, database_drop, session_of  # bench/helpers.py, beside this script

ROOT = Path(__file__).resolve().parents[1]
PYTHON = str(ROOT / ".venv" / "bin" / "python")
GUNICORN = str(ROOT / ".venv" / "bin" / "gunicorn")
IMAGES = 1000  # pairs share images: 1000 captions per image at 1M pairs
MODES = ("one", "two", "page", "floor")
MODE_NAMES = {
    "one": "one request per rating",
    "two": "next + submit",
    "page": "the rating page's one request",
    "floor": "the floor (the rating's SQL behind a bare WSGI app)",
}
CSRF_SECRET = "b" * 32  # the bench browsers' CSRF cookie; the header carries the same secret
# Production settings for the server and the in-process measures; no 3-second floor, no throttle.
SERVER_ENV = {
    "DJANGO_DEBUG": "0",
    "DJANGO_SECRET_KEY": "bench-only-" + "x" * 40,
    "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
    "DJANGO_SECURE_SSL_REDIRECT": "0",
    "RATINGGAME_MIN_SECONDS_PER_RATING": "0",
    "RATINGGAME_THROTTLE_USER": "1000000/min",
    # Random ratings of the control pairs would send every simulated rater back to probation (the
    # drift rule, SPEC 2.5) within a run; the controls are still served and scored.
    "RATINGGAME_DRIFT_THRESHOLD": "0",
    # Connections kept for the whole bench: the PostgreSQL backends whose CPU is counted live
    # through every run (one that closed during a run would take its CPU with it).
    "DATABASE_CONN_MAX_AGE": "3600",
}


# --- Building a bench database (runs in a child process: Django reads DATABASE_URL once) ---------


def build(db_url: str, pairs: int, raters: int, out: str, profile_ratings: int, modes: list[str]) -> None:
    """Create the database, migrate, add `pairs` fresh game pairs and `raters` game raters with tokens;
    then count the statements of a rating (and profile ratings) through Django's WSGI handler."""
    database_create(db_url)

    os.environ.update(SERVER_ENV, DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="ratinggame.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    call_command("collectstatic", "--noinput", verbosity=0)  # production settings: the rating page's assets
    started = time.perf_counter()
    _pool_insert(connection, pairs)
    # The bench raters, then one for each in-process measure (statement counts, profiles).
    tokens, sessions = _raters_create(raters + 2 * len(modes) + 1)
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    build_seconds = time.perf_counter() - started
    query_ms = _candidate_query_ms(connection, get_user_model().objects.get(username="bench0"))
    own = iter(range(raters, len(tokens)))
    credentials = lambda index: (tokens[index], sessions[index])  # noqa: E731
    statements = {mode: _statements_per_rating(_wsgi_post(*credentials(next(own))), mode) for mode in modes}
    floors = _floors(_wsgi_post(*credentials(next(own))), 200) if profile_ratings else {}
    profiles = {
        mode: _profile(_wsgi_post(*credentials(next(own))), mode, profile_ratings) if profile_ratings else ""
        for mode in modes
    }
    Path(out).write_text(
        json.dumps(
            {
                "tokens": tokens[:raters],
                "sessions": sessions[:raters],
                "build_seconds": build_seconds,
                "query_ms": query_ms,
                "statements": statements,
                "profiles": profiles,
                "floors": floors,
            }
        )
    )


def _pool_insert(connection, pairs: int) -> None:
    """IMAGES images, `pairs` fresh game pairs over them, and the control pairs."""
    from ratinggame.models import CaptionPair, Image, Pool, PrimingStatus

    images = Image.objects.bulk_create(
        Image(file=f"images/bench/{i}.png", sha256=f"{i:064x}", width=640, height=480, original_name=f"{i}.png")
        for i in range(IMAGES)
    )
    _insert_pairs(connection, CaptionPair, [image.pk for image in images], pairs)
    # The game's control pairs (SPEC 2.5), as the demo has them: five images, one caption per level.
    CaptionPair.objects.bulk_create(
        CaptionPair(
            image=images[i // 5],
            caption=f"bench control caption {i}",
            pool=Pool.CONTROL,
            expert_rating=1 + i % 5,
            priming_status=PrimingStatus.NOT_NEEDED,
        )
        for i in range(25)
    )


def _raters_create(count: int) -> tuple[list[str], list[str]]:
    """`count` annotators in the game (``bench0``, ``bench1``, ...): their API tokens and their
    browser sessions."""
    from django.contrib.auth import get_user_model
    from django.utils import timezone
    from rest_framework.authtoken.models import Token

    from annotators.models import RaterProfile, RaterState
    from annotators.roles import ANNOTATOR, ensure_roles

    now = timezone.now()
    annotator = ensure_roles()[ANNOTATOR]
    tokens, sessions = [], []
    for i in range(count):
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
        sessions.append(session_of(user))
    return tokens, sessions


def _candidate_query_ms(connection, user) -> float:
    """Median execution time PostgreSQL reports for the next-pair claim (EXPLAIN ANALYZE, 30 runs,
    each from another point of the rater's order, rolled back)."""
    from django.db import transaction

    from ratinggame.game.assignment import claim_statements, order_start

    times = []
    with transaction.atomic(), connection.cursor() as cursor:
        for serve in range(30):
            # The first statement, the windows: what a claim runs unless every window misses.
            sql, params = next(claim_statements(user.pk, order_start(user.rater.order_seed, serve), ()))
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            times.append(cursor.fetchone()[0][0]["Execution Time"])
        transaction.set_rollback(True)
    return statistics.median(times)


def _insert_pairs(connection, model, image_ids: list[int], count: int) -> None:
    """`count` fresh game pairs in one INSERT ... SELECT generate_series (a million in seconds).

    Every column but image, caption, created_at and the random order key gets the model's default,
    as bulk_create would give it, so the rows are what the site itself creates.
    """
    from ratinggame.models import Pool, PrimingStatus

    chosen = {"pool": Pool.GAME, "primes": [3.0, 4.0], "priming_status": PrimingStatus.DONE}
    own = {"image", "caption", "created_at", "order_key"}  # drawn per row below
    fixed = {
        field.column: field.get_db_prep_save(chosen.get(field.name, field.get_default()), connection)
        for field in model._meta.concrete_fields
        if not field.primary_key and field.name not in own
    }
    columns = ", ".join(f'"{column}"' for column in ["image_id", "caption", "created_at", "order_key", *fixed])
    values = ", ".join(["%s"] * len(fixed))
    sql = (
        f'INSERT INTO "{model._meta.db_table}" ({columns}) '  # noqa: S608 - names from the model, not input
        f"SELECT (%s::bigint[])[1 + g %% {len(image_ids)}], "
        f"'bench caption ' || g || ': a person riding a bicycle down a city street', now(), "
        f"floor(random() * 2147483648)::integer, {values} "
        "FROM generate_series(0, %s - 1) AS g"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [image_ids, *fixed.values(), count])


# --- A simulated rater, over HTTP (the load) or through the WSGI handler (counts, profiles) ---------

Post = Callable[[str, dict | None], tuple[int, dict]]


class Player:
    """One simulated rater rating in a loop, in one of the ways (MODES; the floor as "one")."""

    def __init__(self, post: Post, mode: str) -> None:
        self.post = post
        self.mode = mode
        self.pending: int | None = None  # "one": the assignment served with the last feedback
        self.next_ms: list[float] = []  # POST next
        self.request_ms: list[float] = []  # every request
        self.rating_ms: list[float] = []  # from the first request of a rating to its feedback
        self.acked: list[int] = []
        self.errors: dict[str, int] = {}
        self.done = False

    def _request(self, path: str, body: dict | None) -> tuple[int, dict]:
        started = time.perf_counter()
        answer = self.post(path, body)
        self.request_ms.append((time.perf_counter() - started) * 1000)
        if path.endswith("/next"):
            self.next_ms.append(self.request_ms[-1])
        return answer

    def _refused(self, what: str, status: int, body: dict) -> None:
        code = body.get("code") or body.get("error", {}).get("code") or str(status)
        self.errors[f"{what}:{code}"] = self.errors.get(f"{what}:{code}", 0) + 1
        self.done = code == "none_left"

    def step(self) -> None:
        if self.mode == "page":
            self._page_step()
            return
        started = time.perf_counter()
        if self.pending is None:
            status, served = self._request("/api/game/next", None)
            if status != 200 or "assignment_id" not in served:
                self._refused("next", status, served)
                return
            self.pending = served["assignment_id"]
        submission = {"assignment_id": self.pending, "value": random.randint(1, 5)}
        if self.mode in ("one", "floor"):
            submission["next"] = True
        status, feedback = self._request("/api/game/submit", submission)
        self.pending = None
        if status != 200:
            self._refused("submit", status, feedback)
            return
        self.rating_ms.append((time.perf_counter() - started) * 1000)
        self.acked.append(feedback["rating_id"])
        if self.mode in ("one", "floor"):
            following = feedback["next"]
            self.pending = following["assignment_id"] if following else None
            self.done = following is None

    def open_page(self) -> None:
        """GET /play/game/, as a browser opens the rating page: the pair it shows becomes pending."""
        status, page = self._request("GET /play/game/", None)
        found = re.search(r'name="assignment" value="(\d+)"', page.get("html", ""))
        if status != 200 or found is None:
            # 200 without a pair: none left; a redirect: the rater left the game (random
            # ratings of control pairs send a rater back to probation, SPEC 2.5). Either way: done.
            self._refused("page", status, {"code": "none_left" if status == 200 else "left_the_game"})
            self.done = True
            return
        self.pending = int(found.group(1))

    def _page_step(self) -> None:
        """As the rating page's script: POST /play/submit/, the next pair in its answer."""
        started = time.perf_counter()
        if self.pending is None:
            self.open_page()
            if self.done:
                return
        status, answer = self._request("/play/submit/", {"assignment": self.pending, "value": random.randint(1, 5)})
        self.pending = None
        if status != 200:
            self._refused("submit", status, answer)
            return
        self.rating_ms.append((time.perf_counter() - started) * 1000)
        if "feedback" in answer:
            self.acked.append(answer["feedback"]["rating_id"])
            self.pending = answer["next"]["assignment_id"]
        # {"page": ...}: the end of something the page shows as a page; the next step opens /play/game/.


def _request_parts(path: str, body: dict | None, token: str, session: str) -> tuple[str, str, bytes, dict]:
    """Method, path, body and headers of a bench request: the API's with the token, JSON; the
    rating page's (``/play/...``) with the browser session and its CSRF token, form-encoded."""
    method, _, path = path.rpartition(" ") if " " in path else ("POST", "", path)
    if path.startswith("/play/"):
        headers = {
            "Cookie": f"sessionid={session}; csrftoken={CSRF_SECRET}",
            "X-CSRFToken": CSRF_SECRET,
            "Content-Type": "application/x-www-form-urlencoded",
        }
        return method, path, urlencode(body or {}).encode(), headers
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
    return method, path, json.dumps(body or {}).encode(), headers


def _answer_of(data: bytes, content_type: str) -> dict:
    if content_type.startswith("text/html"):
        return {"html": data.decode()}
    return json.loads(data or b"{}")


def http_post(port: int, token: str, session: str = "") -> Post:
    """POST over one persistent HTTP connection (reconnecting once when the server closed it)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def post(path: str, body: dict | None) -> tuple[int, dict]:
        nonlocal connection
        method, path, payload, headers = _request_parts(path, body, token, session)
        for attempt in range(2):
            try:
                connection.request(method, path, payload, headers)
                response = connection.getresponse()
                data = response.read()
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
                return response.status, _answer_of(data, response.getheader("Content-Type", ""))
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                connection.close()
                if attempt:
                    raise
        raise AssertionError("unreachable")

    return post


def _wsgi_post(token: str, session: str = "") -> Post:
    """POST through Django's WSGI handler in this process: the server's path less gunicorn's HTTP."""
    from django.core.wsgi import get_wsgi_application

    application = get_wsgi_application()

    def post(path: str, body: dict | None, method: str = "POST") -> tuple[int, dict]:
        method, path, data, headers = _request_parts(path if " " in path else f"{method} {path}", body, token, session)
        environ = {
            "REQUEST_METHOD": method,
            "PATH_INFO": path,
            "SERVER_NAME": "127.0.0.1",
            "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1",
            "HTTP_HOST": "127.0.0.1",
            "CONTENT_TYPE": headers.pop("Content-Type"),
            "CONTENT_LENGTH": str(len(data)),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(data),
            "wsgi.errors": sys.stderr,
            **{"HTTP_" + name.upper().replace("-", "_"): value for name, value in headers.items()},
        }
        answered: list[str] = []
        response = application(environ, lambda line, headers, exc_info=None: answered.append((line, dict(headers))))
        try:
            payload = b"".join(response)
        finally:
            response.close()  # request_finished: what a WSGI server does after each response
        line, response_headers = answered[0]
        return int(line[:3]), _answer_of(payload, response_headers.get("Content-Type", ""))

    return post


def _statements_per_rating(post: Post, mode: str, ratings: int = 10) -> dict:
    """Statements Django sends per rating (its query log: BEGIN and COMMIT included), and the
    connection health checks (one per request, run outside the query log)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    player = Player(post, mode)
    player.step()  # the first rating of "one" also asks for its first pair
    checks: list[int] = []
    usable = connection.is_usable
    connection.is_usable = lambda: checks.append(1) is None and usable()
    with CaptureQueriesContext(connection) as captured:
        for _ in range(ratings):
            player.step()
    del connection.is_usable
    assert len(player.acked) == ratings + 1, player.errors
    # A connection's first run of each statement also prepares it: once per connection and
    # statement, not per rating.
    from ratinggame.game.prepared import is_preparation

    sent = sum(not is_preparation(query["sql"]) for query in captured.captured_queries)
    return {"statements": sent / ratings, "health_checks": len(checks) / ratings}


# Own time of a profile, by layer: the first layer whose fragment is in the function's file (or,
# for a C function, its name) takes it.
LAYERS = (
    ("PostgreSQL round trips (psycopg2 send / wait / receive)", ("psycopg2",)),
    ("Django ORM (querysets, SQL compiled, rows to objects)", ("django/db/",)),
    ("DRF (request, authentication, permissions, serializers)", ("rest_framework/",)),
    ("Django request handling, middleware, logging", ("django/", "whitenoise/", "logging/")),
    ("the project's code", ("/ratinggame/", "/annotators/", "/scoring/")),
)


def _cpu_ms(call: Callable[[], object], times: int) -> float:
    """This process's CPU per call (no profiler): the web side of a request, less gunicorn's HTTP."""
    started = time.process_time()
    for _ in range(times):
        call()
    return (time.process_time() - started) * 1000 / times


def _floors(post: Post, times: int) -> dict:
    """What a request costs before any game work: the framework's floor, measured the same way."""
    refused = {"assignment_id": "x", "value": 3}  # 400 from the view: token, roles, DRF, JSON; no game
    return {
        "drf": _cpu_ms(lambda: post("/api/game/submit", refused), times),
        "django": _cpu_ms(lambda: post("/healthz", None, "GET"), times),
    }


def _profile(post: Post, mode: str, ratings: int) -> str:
    """cProfile of ``ratings`` ratings: own time per layer and the top functions, per rating."""
    player = Player(post, mode)
    for _ in range(20):  # warm-up: imports, connections, caches
        player.step()
    plain_cpu_ms = _cpu_ms(player.step, ratings)
    profile = cProfile.Profile()
    cpu = time.process_time()
    wall = time.perf_counter()
    profile.enable()
    for _ in range(ratings):
        player.step()
    profile.disable()
    cpu_ms = (time.process_time() - cpu) * 1000 / ratings
    wall_ms = (time.perf_counter() - wall) * 1000 / ratings
    stats = pstats.Stats(profile)
    by_layer: dict[str, float] = {}
    functions = []
    for (filename, line, name), (_, calls, own, _, _) in stats.stats.items():
        where = filename if filename != "~" else name
        layer = next((label for label, parts in LAYERS if any(part in where for part in parts)), "other")
        by_layer[layer] = by_layer.get(layer, 0.0) + own
        functions.append((own, calls, f"{Path(filename).name}:{line}({name})" if filename != "~" else name))
    total = sum(by_layer.values())
    lines = [
        f"  {MODE_NAMES[mode]}: web process CPU {plain_cpu_ms:.1f} ms per rating without the profiler; "
        f"{ratings} ratings under cProfile: {wall_ms:.1f} ms wall, {cpu_ms:.1f} ms CPU per rating"
    ]
    for label, own in sorted(by_layer.items(), key=lambda item: -item[1]):
        lines.append(f"    {own * 1000 / ratings:6.2f} ms {100 * own / total:4.0f}%  {label}")
    lines.append("    top functions by own time, per rating:")
    for own, calls, where in sorted(functions, reverse=True)[:12]:
        lines.append(f"    {own * 1000 / ratings:6.2f} ms {calls / ratings:6.1f} calls  {where}")
    return "\n".join(lines)


# --- Driving the server -----------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))] if ordered else float("nan")


def drive(port: int, credentials: list[tuple[str, str]], mode: str, seconds: float) -> dict:
    players = [Player(http_post(port, token, session), mode) for token, session in credentials]
    stop = threading.Event()

    def loop(player: Player) -> None:
        while not stop.is_set() and not player.done:
            player.step()

    threads = [threading.Thread(target=loop, args=(player,)) for player in players]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    errors: dict[str, int] = {}
    for player in players:
        for code, count in player.errors.items():
            errors[code] = errors.get(code, 0) + count
    return {
        "elapsed": time.perf_counter() - started,
        "acked": [rating_id for player in players for rating_id in player.acked],
        "request_ms": [ms for player in players for ms in player.request_ms],
        "rating_ms": [ms for player in players for ms in player.rating_ms],
        "errors": errors,
    }


def server_pids(server: subprocess.Popen, db_url: str) -> dict[str, list[int]]:
    """The gunicorn workers and the PostgreSQL backends serving the bench database."""
    import psycopg2

    children = Path(f"/proc/{server.pid}/task/{server.pid}/children").read_text().split()
    with psycopg2.connect(db_url) as connection, connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        backends = [row[0] for row in cursor.fetchall()]
    return {"gunicorn": [int(pid) for pid in children], "postgresql": backends}


def cpu_seconds(pids: list[int]) -> dict[int, float]:
    """User + system CPU time of each of these processes (from /proc; gone processes are left out)."""
    ticks = os.sysconf("SC_CLK_TCK")
    seconds = {}
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        seconds[pid] = (int(fields[11]) + int(fields[12])) / ticks  # utime, stime (fields 14 and 15 of stat)
    return seconds


def server_cpu(server: subprocess.Popen, db_url: str, before: dict | None = None) -> dict:
    """CPU seconds of the server's processes by kind; with ``before``, what they used since then
    (a backend that connected meanwhile counts from 0)."""
    now = {kind: cpu_seconds(pids) for kind, pids in server_pids(server, db_url).items()}
    if before is None:
        return now
    return {kind: sum(t - before[kind].get(pid, 0.0) for pid, t in times.items()) for kind, times in now.items()}


def vacuum(db_url: str) -> None:
    """VACUUM ANALYZE the bench database before a measured run, as autovacuum keeps a production
    one: with autovacuum off (as on the development machine's PostgreSQL) the dead row versions of
    the runs before (every rating updates its pair, assignment and profile) weigh on the later
    runs' PostgreSQL CPU, and the order of the ways would decide their ratios (the rating page
    measured 0.63-0.74 of the API run before it, 0.93-1.07 run first)."""
    import psycopg2

    connection = psycopg2.connect(db_url)
    try:
        connection.autocommit = True
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
    finally:
        connection.close()


def stored_count(db_url: str, rating_ids: list[int]) -> int:
    import psycopg2

    with psycopg2.connect(db_url) as connection, connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM ratinggame_rating WHERE id = ANY(%s)", (rating_ids,))
        return cursor.fetchone()[0]


def start_server(
    db_url: str, port: int, workers: int, threads: int, log_path: Path, app: tuple[str, ...] = ("ratinggame.wsgi",)
) -> subprocess.Popen:
    env = {**os.environ, **SERVER_ENV, "DATABASE_URL": db_url}
    with socket.socket() as probe:
        if probe.connect_ex(("127.0.0.1", port)) == 0:
            raise SystemExit(f"port {port} is in use: choose another with --port")
    command = [
        GUNICORN,
        *app,
        "--bind",
        f"127.0.0.1:{port}",
        "--workers",
        str(workers),
        "--timeout",
        "120",
        # Threads: gunicorn's gthread worker, which also keeps client connections open.
        *(["--worker-class", "gthread", "--threads", str(threads)] if threads > 1 else []),
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


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg()) + f" on {os.cpu_count()} CPUs"


def throughput(
    args, server: subprocess.Popen, db_url: str, tokens: list[tuple[str, str]], mode: str, count: int, port: int
) -> dict:
    """One throughput run; prints its line and returns its figures."""
    vacuum(db_url)
    before = load()
    cpu_before = server_cpu(server, db_url)
    result = drive(port, tokens[:count], mode, args.seconds)
    acked = len(result["acked"])
    cpu_ms = {kind: used * 1000 / max(acked, 1) for kind, used in server_cpu(server, db_url, cpu_before).items()}
    stored = stored_count(db_url, result["acked"])
    figures = {
        "rate": acked / result["elapsed"],
        "request_p99": percentile(result["request_ms"], 99),
        "rating_p99": percentile(result["rating_ms"], 99),
        "lost": acked - stored,
        "web_cpu_ms": cpu_ms["gunicorn"],
        "errors": result["errors"],
    }
    print(
        f"  {MODE_NAMES[mode]}, {count} raters: {figures['rate']:.0f} ratings/s over {result['elapsed']:.1f} s | "
        f"request p50 {percentile(result['request_ms'], 50):.1f} ms p99 {figures['request_p99']:.1f} ms | "
        f"rating p50 {percentile(result['rating_ms'], 50):.1f} ms p99 {figures['rating_p99']:.1f} ms | "
        f"server CPU per rating {sum(cpu_ms.values()):.1f} ms (gunicorn {cpu_ms['gunicorn']:.1f}, "
        f"PostgreSQL {cpu_ms['postgresql']:.1f}) | acknowledged {acked}, stored {stored}, lost {acked - stored}"
        + (f" | refused {result['errors']}" if result["errors"] else "")
        + f" | {before} before, {load()} after",
        flush=True,
    )
    return figures


def floor(args, db_url: str, credentials: list[tuple[str, str]], concurrency: list[int]) -> dict:
    """The ``floor`` mode's throughput runs: ``floor_app.py`` (the rating's SQL behind a bare WSGI
    app) under gunicorn as the project's server is, on the next port, beside it."""
    log_path = Path(f"/tmp/{args.db_prefix}bench_journey_floor.log")
    app = ("--pythonpath", str(ROOT / "bench"), "floor_app:application")
    server = start_server(db_url, args.port + 1, args.workers, args.threads, log_path, app)
    try:
        return {
            ("floor", count): throughput(args, server, db_url, credentials, "floor", count, args.port + 1)
            for count in concurrency
        }
    finally:
        server.terminate()
        server.wait(timeout=30)


def open_loop(args, db_url: str, credentials: list[tuple[str, str]], mode: str) -> dict:
    """Ratings arriving at a fixed rate (``--open-rate``), each taken by a rater who is free, not
    raters looping without pause; a rating's time counts from when it was due (a late start is
    counted in it), so a server that falls behind shows in the tail."""
    import queue
    from concurrent.futures import ThreadPoolExecutor

    vacuum(db_url)
    rate, before = args.open_rate, load()
    players = [Player(http_post(args.port, token, session), mode) for token, session in credentials]
    free: queue.SimpleQueue = queue.SimpleQueue()
    for player in players:
        # Each rater has the rating page open before the clock starts, as a browser rater has:
        # otherwise the first second is 50 page loads at once and the tail measures that start.
        player.open_page()
        if not player.done:
            free.put(player)
    latencies: list[float] = []
    trace: list[dict] = []
    missed = 0

    def rate_once(player: Player, due: float) -> None:
        began, first = time.perf_counter(), len(player.request_ms)
        player.step()
        latencies.append((time.perf_counter() - due) * 1000)
        trace.append(
            {"due_s": due - started, "start_late_ms": (began - due) * 1000, "ms": latencies[-1]}
            | {"requests_ms": player.request_ms[first:]}
        )
        if not player.done:
            free.put(player)

    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=len(players)) as pool:
        for index in range(int(rate * args.seconds)):
            due = started + index / rate
            time.sleep(max(0.0, due - time.perf_counter()))
            try:
                player = free.get_nowait()
            except queue.Empty:
                missed += 1  # every rater busy: this rating could not even start
                continue
            pool.submit(rate_once, player, due)
    if args.trace:
        Path(args.trace).write_text(json.dumps(sorted(trace, key=lambda entry: entry["due_s"]), indent=0))
    acked = [rating_id for player in players for rating_id in player.acked]
    stored = stored_count(db_url, acked)
    figure = {"p99": percentile(latencies, 99), "missed": missed, "lost": len(acked) - stored}
    print(
        f"  open loop, {rate:g} ratings/s through the rating page for {args.seconds:g} s, {len(players)} raters: "
        f"p50 {percentile(latencies, 50):.1f} ms, p99 {figure['p99']:.1f} ms from when each was due | "
        f"{len(latencies)} done, {missed} could not start (every rater busy) | acknowledged {len(acked)}, "
        f"stored {stored} | {before} before, {load()} after",
        flush=True,
    )
    return figure


def arguments() -> argparse.Namespace:
    """The command line (``--build``, hidden: the child process that builds a bench database)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pg", default="postgres://postgres@127.0.0.1:5432", help="PostgreSQL server URL (no db)")
    parser.add_argument("--db-prefix", default="", help="prefix of the bench databases' names (bench_journey_<size>)")
    parser.add_argument("--sizes", default="10000,1000000", help="game pool sizes; the first one carries the load")
    parser.add_argument("--raters", default="10,50", help="concurrent raters of the throughput runs")
    parser.add_argument("--modes", default=",".join(MODES), help="ways of rating: one, two, page, floor")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each throughput run")
    parser.add_argument(
        "--rounds", type=int, default=1, help="throughput rounds, the ways' order reversed every other round"
    )
    parser.add_argument("--latency-steps", type=int, default=300, help="serve + submit steps of the latency run")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=1, help="threads per worker (> 1: gthread workers)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="profile N ratings of each way")
    parser.add_argument(
        "--open-rate", type=float, default=0, metavar="R", help="also an open loop: R ratings/s through the page"
    )
    parser.add_argument(
        "--trace", metavar="FILE", help="write each open-loop rating (due time, lateness, requests) as JSON to FILE"
    )
    parser.add_argument("--port", type=int, default=18437)
    parser.add_argument("--keep", action="store_true", help="keep the bench databases (a 1M-pair one is ~1 GB)")
    parser.add_argument(
        "--build", nargs=6, metavar=("DB_URL", "PAIRS", "RATERS", "OUT", "PROFILE", "MODES"), help=argparse.SUPPRESS
    )
    return parser.parse_args()


def main() -> None:
    args = arguments()
    if args.build:
        db_url, pairs, raters, out, profile, modes = args.build
        build(db_url, int(pairs), int(raters), out, int(profile), modes.split(","))
        return

    sizes = [int(size) for size in args.sizes.split(",")]
    concurrency = [int(n) for n in args.raters.split(",")]
    modes = args.modes.split(",")
    kind = f"gthread workers of {args.threads} threads" if args.threads > 1 else "sync workers"
    print(f"gunicorn {kind}: {args.workers}; CPUs: {os.cpu_count()}; {load()}", flush=True)
    medians: dict[int, float] = {}
    figures: dict[tuple[str, int], dict] = {}
    statements: dict = {}
    for index, size in enumerate(sizes):
        db_url = f"{args.pg}/{args.db_prefix}bench_journey_{size}"
        raters = 1 + (max(concurrency) * len(modes) if index == 0 else 0)
        built = database_build(args, db_url, size, raters, args.profile if index == 0 else 0, modes)
        if index == 0:
            statements = built["statements"]
            in_process_print(size, built)
        tokens = list(zip(built["tokens"], built["sessions"], strict=True))
        log_path = Path(f"/tmp/{args.db_prefix}bench_journey_{size}.log")
        server = start_server(db_url, args.port, args.workers, args.threads, log_path)
        try:
            medians[size] = next_pair_latency(args, tokens[0], size)
            if index == 0:
                print(f"[{size:,} game pairs] throughput:", flush=True)
                figures = throughput_rounds(args, server, db_url, tokens, modes, concurrency)
        finally:
            server.terminate()
            server.wait(timeout=30)
            if not args.keep:
                database_drop(db_url)
    if len(sizes) >= 2:
        small, large = sizes[0], sizes[-1]
        print(
            f"next-pair latency ratio {large:,} / {small:,} pairs (p50): {medians[large] / medians[small]:.2f} "
            "(goal <= 1.5)"
        )
    goals(figures, statements)


def database_build(args, db_url: str, size: int, raters: int, profile: int, modes: list[str]) -> dict:
    """The bench database of one pool size, built by a child process of this script (Django reads
    DATABASE_URL once), and what it measured in process; prints how long it took."""
    out = Path(f"/tmp/{args.db_prefix}bench_journey_{size}.json")
    started = time.perf_counter()
    measured = ",".join(mode for mode in modes if mode != "floor")  # the floor is not Django's
    command = [PYTHON, __file__, "--build", db_url, str(size), str(raters), str(out), str(profile), measured]
    subprocess.run(command, check=True)
    built = json.loads(out.read_text())
    print(
        f"[{size:,} game pairs] database built in {time.perf_counter() - started:.0f} s "
        f"(pairs and raters inserted in {built['build_seconds']:.0f} s); next-pair query in PostgreSQL "
        f"(EXPLAIN ANALYZE, median of 30): {built['query_ms']:.3f} ms",
        flush=True,
    )
    return built


def in_process_print(size: int, built: dict) -> None:
    """What the build measured through Django's WSGI handler: statements per rating of each way, the
    profiles (``--profile``) and the framework's floor."""
    for mode, counted in built["statements"].items():
        print(
            f"[{size:,} game pairs] statements per rating, {MODE_NAMES[mode]}: {counted['statements']:.1f} "
            f"(BEGIN and COMMIT included) + {counted['health_checks']:.1f} connection health checks",
            flush=True,
        )
    for text in built["profiles"].values():
        if text:
            print(f"[{size:,} game pairs] profile ({load()}):\n{text}", flush=True)
    if built["floors"]:
        print(
            f"[{size:,} game pairs] the framework's floor, web process CPU per request: "
            f"{built['floors']['drf']:.1f} ms for an API request refused before any game work "
            f"(middleware, token and roles, DRF, JSON: 1 statement), {built['floors']['django']:.1f} ms "
            f"for GET /healthz (Django, SELECT 1)",
            flush=True,
        )


def next_pair_latency(args, credentials: tuple[str, str], size: int) -> float:
    """One rater serving and rating (``two``) after a warm-up: the p50 of its next-pair requests,
    printed with its p99 (the pool size's effect on the serve, apart from any load)."""
    latency = Player(http_post(args.port, *credentials), "two")
    for _ in range(30):  # warm-up: imports, connections, caches
        latency.step()
    latency.next_ms.clear()
    for _ in range(args.latency_steps):
        latency.step()
    median = statistics.median(latency.next_ms)
    print(
        f"[{size:,} game pairs] next-pair latency, one rater: p50 {median:.2f} ms, "
        f"p99 {percentile(latency.next_ms, 99):.2f} ms ({len(latency.next_ms)} serves; {load()})",
        flush=True,
    )
    return median


def throughput_rounds(
    args, server: subprocess.Popen, db_url: str, tokens: list[tuple[str, str]], modes: list[str], concurrency: list[int]
) -> dict:
    """The throughput runs of every way, ``--rounds`` times (and the open loop, once): each way and
    number of raters with the list of its rounds' figures. Each way rates with raters of its own."""
    figures: dict = {}
    for round_ in range(args.rounds):
        # Later runs find a warmer, busier machine: rounds alternate the order of the
        # ways (forward, then backward), so that no way always runs first.
        order = list(enumerate(modes))
        if round_ % 2:
            order.reverse()
        if args.rounds > 1:
            print(f"  round {round_ + 1} of {args.rounds}: {', '.join(mode for _, mode in order)}")
        for number, mode in order:
            own = tokens[1 + number * max(concurrency) : 1 + (number + 1) * max(concurrency)]
            if mode == "floor":
                for key, figure in floor(args, db_url, own, concurrency).items():
                    figures.setdefault(key, []).append(figure)
                continue
            for count in concurrency:
                figure = throughput(args, server, db_url, own, mode, count, args.port)
                figures.setdefault((mode, count), []).append(figure)
            if args.open_rate and mode == "page" and round_ == 0:
                figures["open", args.open_rate] = [open_loop(args, db_url, own, mode)]
    return figures


def goals(figures: dict, statements: dict) -> None:
    """The issues' goals beside what this run measured (one request per rating, the page). With
    several rounds, each figure is the median of the rounds', and each ratio the median of the
    rounds' ratios (each taken between runs of the same round)."""
    one = {count: runs for (mode, count), runs in figures.items() if mode == "one"}
    for (_, rate), (figure,) in ((key, runs) for key, runs in figures.items() if key[0] == "open"):
        met = figure["p99"] <= 100 and not figure["missed"]
        print(f"goal open loop at {rate:g} ratings/s, p99 <= 100 ms: {figure['p99']:.1f} ms" + _met(met))
    figures = {key: runs for key, runs in figures.items() if key[0] != "open"}
    dry = sorted({f"{mode}, {count} raters" for (mode, count), runs in figures.items() for run in runs if _dry(run)})
    if dry:
        # Told none_left: the pool ran out of pairs to rate, and those runs measured no rating path
        # (the ratios leave their rounds out; the runs before them may have found the pool thinning).
        print(f"WARNING: the pool ran out of pairs in {'; '.join(dry)}: rerun with a larger --sizes")
    if 50 in one:
        rate = _median(one[50], "rate")
        print(f"goal >= 300 ratings/s with 50 raters: {rate:.0f}" + _met(rate >= 300))
    if 10 in one:
        p99 = _median(one[10], "rating_p99")
        print(f"goal p99 <= 60 ms with 10 raters: {p99:.1f} ms" + _met(p99 <= 60))
    if "one" in statements:
        count = statements["one"]["statements"]
        print(f"goal <= 8 statements per rating: {count:.1f}" + _met(count <= 8))
    if "page" in statements:
        count = statements["page"]["statements"]
        print(f"goal <= 10 statements per rating through the rating page: {count:.1f}" + _met(count <= 10))
    for count in sorted({count for (mode, count) in figures if mode == "page"} & set(one)):
        ratio, rounds = _ratio(figures["page", count], one[count])
        met = _met(ratio >= 0.8)
        print(f"goal rating page >= 0.8 of the API's ratings/s, {count} raters: {ratio:.2f}{rounds}" + met)
    for count, runs in sorted(one.items()):
        web = _median(runs, "web_cpu_ms")
        each = _rounds([run["web_cpu_ms"] for run in runs], "{:.1f}")
        print(f"goal web CPU per rating <= 3 ms (API, {count} raters): {web:.1f} ms{each}" + _met(web <= 3))
    for count in sorted({count for (mode, count) in figures if mode == "floor"} & set(one)):
        ratio, rounds = _ratio(one[count], figures["floor", count])
        met = _met(ratio >= 0.5)
        print(f"goal API >= 0.5 of the floor's ratings/s, {count} raters: {ratio:.2f}{rounds}" + met)
    lost = sum(figure["lost"] for runs in figures.values() for figure in runs)
    print(f"acknowledged ratings lost, all runs: {lost}" + _met(lost == 0))


def _median(runs: list[dict], name: str) -> float:
    return statistics.median(run[name] for run in runs)


def _dry(run: dict) -> bool:
    return any(code.endswith(":none_left") for code in run["errors"])


def _ratio(runs: list[dict], against: list[dict]) -> tuple[float, str]:
    """The median of the rounds' ratios of ratings/s, and the rounds' own (when there are several);
    rounds in which either run found the pool empty are left out (NaN when none is left)."""
    ratios = [
        run["rate"] / other["rate"]
        for run, other in zip(runs, against, strict=True)
        if other["rate"] and not (_dry(run) or _dry(other))
    ]
    return (statistics.median(ratios) if ratios else math.nan), _rounds(ratios, "{:.2f}")


def _rounds(values: list[float], form: str) -> str:
    """Each round's value, when there are several rounds."""
    return f" (rounds: {', '.join(form.format(value) for value in values)})" if len(values) > 1 else ""


def _met(met: bool) -> str:
    return " (met)" if met else " (NOT met)"


if __name__ == "__main__":
    main()
