"""The floor of a rating's database work: the game's own statements behind a bare WSGI app.

A cost model for ``bench_journey.py``'s ``floor`` mode, not a design: it answers ``POST
/api/game/submit`` (``{"assignment_id", "value", "next": true}``, token in the ``Authorization``
header) and ``POST /api/game/next`` by sending the SQL the game sends for a game rating and the
next pair's claim (``ratinggame.game.sql``: the rater with roles and profile locked, the assignment
with its pair locked, the claim, every write in one statement; BEGIN and COMMIT), prepared as the
game prepares them (``ratinggame.game.prepared``), over one psycopg2 connection per worker, with no
Django on the request: no middleware, no URL routing, no authentication classes, no ORM, no
serializer. The Python between the statements is the least that keeps the same rows changing as the
game changes them (the pair's counters, label evidence and serving rank, the rater's serves for the
next claim's start); points are not scored (Algorithm 1 is the project's code, which the floor leaves out),
control pairs are not served. Django is set up once, at import: the statements are the game's own
(built from the models), and so is the little game code between them that the rows must agree with
(a row read by the game's converters, ``sql.PAIR.read``; the claim's parameters; the counters,
``pair_rating_add``; the serving rank, ``pair_rank_refresh``).

    gunicorn --pythonpath bench floor_app:application   (DATABASE_URL names the bench database)
"""

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import psycopg2
import psycopg2.extras

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "ratinggame.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402

from annotators import journey  # noqa: E402
from ratinggame.game import prepared, sql  # noqa: E402
from ratinggame.game.aggregates import pair_rating_add  # noqa: E402
from ratinggame.game.assignment import first_open_pair, order_start, pair_rank_refresh, slot_take  # noqa: E402
from ratinggame.game.gameplay import images_seen, images_to_avoid  # noqa: E402

VENDOR = "postgresql"
RATER = sql.STATEMENTS["rater_by_token"](VENDOR).sql
ASSIGNMENT = sql.STATEMENTS["assignment_locking_pair"](VENDOR).sql
LATEST = sql.STATEMENTS["latest_game_assignment"](VENDOR).sql
RATE_AND_SERVE = sql._write_plan(
    VENDOR,
    (
        sql.GAME_ASSIGNMENT_CLOSE,
        sql.PAIR_RATED,
        sql.RATING_INSERT,
        sql.PAIR_SLOT_TAKEN,
        sql.ASSIGNMENT_INSERT,
        sql.PROFILE_AFTER_RATING,
    ),
).sql[0]
SERVE = sql._write_plan(VENDOR, (sql.PAIR_SLOT_TAKEN, sql.ASSIGNMENT_INSERT, sql.PROFILE_SERVED)).sql[0]
USER_WIDTH = len(sql.USER_FIELDS) + 1  # the user's columns and their roles, before the profile's
DRIFT_READ = journey.drift_window() - 1  # the rater's latest controls the drift rule reads, less this one
EXPIRY = timedelta(seconds=settings.RATINGGAME["ASSIGNMENT_EXPIRY_SECONDS"])
_connection = None


def _cursor():
    global _connection  # one connection per worker process, opened on first use
    if _connection is None or _connection.closed:
        _connection = psycopg2.connect(os.environ["DATABASE_URL"])
        # jsonb as text, as Django's backend reads it: the row shapes' field converters parse it.
        psycopg2.extras.register_default_jsonb(conn_or_curs=_connection, loads=lambda text: text)
        _connection.autocommit = True
        with _connection.cursor() as cursor:
            cursor.execute(prepared.GENERIC_PLANS)  # as the game's connections (prepared.generic_plans)
        _connection.autocommit = False
    return _connection.cursor()


def _run(cursor, statement: str, params: list) -> None:
    """As the game sends a statement: prepared on its connection (``ratinggame.game.prepared``)."""
    prepared.execute(cursor, cursor.connection, VENDOR, statement, params)


def _claim(cursor, profile: sql.ProfileRow):
    """The next pair of the rater's order, locked and counted (the game's claim, on this cursor)."""

    def fetch(statement: str, params) -> tuple | None:
        _run(cursor, statement, params)
        return cursor.fetchone()

    start = order_start(profile.order_seed, profile.game_serves)
    found = first_open_pair(fetch, profile.user_id, start, images_to_avoid(profile), locking=True)
    return None if found is None else slot_take(found[0])


def _next(cursor, profile: sql.ProfileRow, now: datetime) -> dict:
    _run(cursor, LATEST, [profile.user_id])  # the game's read of an open pair (the floor's clients hold none)
    pair = _claim(cursor, profile)
    if pair is None:
        return {"detail": "none left", "code": "none_left"}
    _run(
        cursor,
        SERVE,
        [
            *(pair.in_flight, pair.assign_rank, pair.id),
            *(profile.user_id, pair.id, "game", now, now + EXPIRY, None, True),
            *(profile.game_serves + 1, profile.control_owed_at, profile.controls_owed),
            *(json.dumps(images_seen(profile.recent_images, pair.image_id)), profile.id),
        ],
    )
    return {"assignment_id": cursor.fetchone()[1], "caption": pair.caption}


def _submit(cursor, profile: sql.ProfileRow, assignment_id: int, value: int, now: datetime) -> tuple[int, dict]:
    _run(cursor, ASSIGNMENT, [False, DRIFT_READ, assignment_id])  # not excluded, as the game reads it
    row = cursor.fetchone()
    if row is None:
        return 404, {"code": "not_found"}
    assignment = sql.ASSIGNMENT.read(row[: sql.ASSIGNMENT.width])
    pair = sql.PAIR.read(row[sql.ASSIGNMENT.width : sql.ASSIGNMENT.width + sql.PAIR.width])
    if assignment.rater_id != profile.user_id or assignment.submitted_at is not None:
        return 409, {"code": "not_yours_or_rated"}
    pair_rating_add(pair, value, None)  # the counters and the label evidence, as the game moves them
    pair.in_flight = max(pair.in_flight - 1, 0)
    pair_rank_refresh(pair)
    following = _claim(cursor, profile)
    if following is None:
        return 409, {"code": "none_left"}
    shown = {"stage_total": profile.game_score, "window": [profile.window_count, profile.window_points]}
    _run(
        cursor,
        RATE_AND_SERVE,
        [
            *(False, now, assignment.id, True),
            *(pair.human_count, pair.human_sum, pair.human_sumsq, json.dumps(pair.label_evidence)),
            *(pair.in_flight, pair.assign_rank, pair.id),
            *(assignment.id, pair.id, profile.user_id, "game", value, assignment.served_at, now),
            *(0, None, json.dumps(shown), False, ""),
            *(following.in_flight, following.assign_rank, following.id),
            *(profile.user_id, following.id, "game", now, now + EXPIRY, None, True),
            *(profile.game_score, profile.window_count, profile.window_points, profile.game_serves + 1),
            *(profile.control_owed_at, profile.controls_owed),
            *(json.dumps(images_seen(profile.recent_images, following.image_id)), profile.id),
        ],
    )
    results = cursor.fetchone()
    return 200, {
        "rating_id": results[2],
        "points": 0,
        "next": {"assignment_id": results[4], "caption": following.caption},
    }


def application(environ, start_response):
    path = environ["PATH_INFO"]
    if path == "/healthz":
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [b"ok"]
    token = environ.get("HTTP_AUTHORIZATION", "").removeprefix("Token ")
    body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)) or b"{}")
    cursor = _cursor()
    try:
        _run(cursor, RATER, [token])
        row = cursor.fetchone()
        if row is None:
            status, answer = 401, {"code": "not_authenticated"}
        else:
            profile = sql.profile_with_participant(row[USER_WIDTH:])
            now = datetime.now(UTC)
            if path == "/api/game/next":
                status, answer = 200, _next(cursor, profile, now)
            else:
                status, answer = _submit(cursor, profile, int(body["assignment_id"]), int(body["value"]), now)
        cursor.connection.commit()
    except Exception:
        cursor.connection.rollback()
        raise
    finally:
        cursor.close()
    data = json.dumps(answer).encode()
    start_response(
        f"{status} {'OK' if status == 200 else 'Refused'}",
        [("Content-Type", "application/json"), ("Content-Length", str(len(data)))],
    )
    return [data]
