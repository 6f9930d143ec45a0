"""What a rating costs the database, through the API as a client sees it (issue 14).

Counted with ``CaptureQueriesContext`` in a test whose transactions are real (BEGIN and COMMIT
are counted, as they are round trips in production), so the numbers are those of a rating in
production. Each request also costs the connection's health check (``CONN_HEALTH_CHECKS``),
which Django runs outside its query log: one more per request.

The documented numbers, game stage, past the qualification window:

| Path | PostgreSQL | other databases |
|---|---|---|
| one request: ``POST /api/game/submit`` with ``"next": true`` | 7 | 12 |
| two requests: ``POST /api/game/next``, then ``POST /api/game/submit`` | 14 | 19 |

One request: the token with its user and roles (1); BEGIN; the rater's profile, locked (1);
the assignment with its pair, locked (1); the next pair's claim (1); the writes (1 on
PostgreSQL, ``ratinggame.game.writes``; 6 elsewhere: assignment closed, pair, profile, rating,
next pair, next assignment); COMMIT. A serve on its own (``POST /api/game/next``) also reads the
image of the rater's previous serve (the next pair shows another image, SPEC 5), which the
one-request path has in hand. The rating of a control pair reads the rater's latest control
ratings (the drift rule, SPEC 2.5): one statement more, once in every ten ratings.
"""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotators.models import RaterState
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import assert_pairs_consistent, game_pairs, rater

pytestmark = pytest.mark.django_db(transaction=True)

ONE_REQUEST = {"postgresql": 7, "sqlite": 12}
TWO_REQUESTS = {"postgresql": 14, "sqlite": 19}


@pytest.fixture
def client(settings):
    cache.clear()
    # Game pairs only: a control pair's serve and rating are counted on their own below.
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 0}
    game_pairs(10, primes=[3.0, 4.0])
    return token_client(rater(RaterState.GAME, window_count=20, window_points=40))  # past the window


def counted(call) -> tuple[dict, int]:
    with CaptureQueriesContext(connection) as captured:
        answer = call()
    assert answer.status_code == 200, answer.json()
    return answer.json(), len(captured.captured_queries)


def test_a_game_rating_in_one_request_costs_at_most_the_documented_statements(client):
    served = client.post("/api/game/next", format="json").json()
    costs = []
    for value in (1, 4, 5):
        answer, cost = counted(
            lambda value=value, served=served: client.post(
                "/api/game/submit",
                {"assignment_id": served["assignment_id"], "value": value, "next": True},
                format="json",
            )
        )
        served = answer["next"]
        costs.append(cost)
    assert len(set(costs)) == 1, costs  # the same every time: nothing sampled, nothing swept on the way
    assert costs[0] <= ONE_REQUEST[connection.vendor], costs
    assert_pairs_consistent()


def test_a_game_rating_in_two_requests_costs_at_most_the_documented_statements(client):
    costs = []
    for value in (2, 3, 4):
        served, serve_cost = counted(lambda: client.post("/api/game/next", format="json"))
        _, submit_cost = counted(
            lambda value=value, served=served: client.post(
                "/api/game/submit", {"assignment_id": served["assignment_id"], "value": value}, format="json"
            )
        )
        costs.append(serve_cost + submit_cost)
    assert len(set(costs)) == 1, costs
    assert costs[0] <= TWO_REQUESTS[connection.vendor], costs
    assert_pairs_consistent()


def test_a_control_pair_costs_one_statement_more_to_rate(settings):
    """A control's serve replaces the claim of a game pair; its rating also reads the rater's
    latest control ratings (the drift rule): one statement more than a game pair's."""
    from tests.factories import ControlPairFactory

    cache.clear()
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 1}
    ControlPairFactory(expert_rating=3)
    client = token_client(rater(RaterState.GAME, window_count=20, window_points=40))
    served = client.post("/api/game/next", format="json").json()
    costs = []
    for value in (3, 2):
        answer, cost = counted(
            lambda value=value, served=served: client.post(
                "/api/game/submit",
                {"assignment_id": served["assignment_id"], "value": value, "next": True},
                format="json",
            )
        )
        served = answer["next"]
        costs.append(cost)
    assert len(set(costs)) == 1, costs
    assert costs[0] <= ONE_REQUEST[connection.vendor] + 1, costs
