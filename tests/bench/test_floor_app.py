"""``bench/floor_app.py``, the floor of ``bench_journey.py``: the game's own statements behind a bare
WSGI app. It sends them with its own parameters, so a statement that gains a column must be
matched there: here the floor serves and rates on the real schema (PostgreSQL, its only vendor)."""

import io
import json
import sys
from pathlib import Path

import pytest
from django.db import connection
from rest_framework.authtoken.models import Token

from annotators.models import RaterState
from ratinggame.models import Assignment, Rating
from tests.ratinggame.journey_helpers import game_pairs, rater

BENCH = Path(__file__).resolve().parents[2] / "bench"


def call(app, path: str, token: str, body: dict) -> tuple[str, dict]:
    data = json.dumps(body).encode()
    environ = {
        "PATH_INFO": path,
        "HTTP_AUTHORIZATION": f"Token {token}",
        "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data),
    }
    started: list[str] = []
    answer = b"".join(app(environ, lambda status, headers: started.append(status)))
    return started[0], json.loads(answer)


@pytest.mark.django_db(transaction=True)  # the floor reads and writes over a connection of its own
def test_the_floor_serves_a_pair_and_rates_it_with_the_next_one_served(require_postgres, monkeypatch):
    db = connection.settings_dict
    login = f"{db['USER']}:{db['PASSWORD']}" if db["PASSWORD"] else db["USER"]
    url = f"postgres://{login}@{db['HOST'] or 'localhost'}:{db['PORT'] or 5432}/{db['NAME']}"
    monkeypatch.setenv("DATABASE_URL", url)
    monkeypatch.syspath_prepend(str(BENCH))
    floor = sys.modules.get("floor_app") or __import__("floor_app")
    game_pairs(3, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, window_count=20, window_points=40)
    token = Token.objects.create(user=user).key
    try:
        status, served = call(floor.application, "/api/game/next", token, {})
        assert status.startswith("200"), served
        status, rated = call(
            floor.application, "/api/game/submit", token, {"assignment_id": served["assignment_id"], "value": 4}
        )
        assert status.startswith("200"), rated
    finally:
        if floor._connection is not None:
            floor._connection.close()
    assert Rating.objects.get(pk=rated["rating_id"]).assignment_id == served["assignment_id"]
    following = Assignment.objects.get(pk=rated["next"]["assignment_id"])
    assert following.rater_id == user.pk and following.submitted_at is None
