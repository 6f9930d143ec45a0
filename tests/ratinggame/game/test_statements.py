"""What a rating costs the database, through the API as a client sees it (issue 14).

Counted with ``CaptureQueriesContext`` in a test whose transactions are real (BEGIN and COMMIT
are counted, as they are round trips in production), so the numbers are those of a rating in
production. Each request also costs the connection's health check (``CONN_HEALTH_CHECKS``),
which Django runs outside its query log: one more per request.

The documented numbers, game stage, past the qualification window:

| Path | PostgreSQL | other databases |
|---|---|---|
| one request: ``POST /api/game/submit`` with ``"next": true`` | 6 | 11 |
| the rating page: ``POST /play/submit/`` (what its script sends) | 6 | 11 |
| two requests: ``POST /api/game/next``, then ``POST /api/game/submit`` | 13 | 18 |

One request: BEGIN; the token or browser session with its user, roles and rater profile, the
profile locked (1, ``ratinggame.game.signed_in``); the assignment with its pair, locked (1); the
next pair's claim (1); the writes (1 on PostgreSQL, ``ratinggame.game.sql.write_plan``; 6
elsewhere: assignment closed, pair, profile, rating, next pair, next assignment); COMMIT. The
page's answer (its feedback panel and the next pair) is rendered from what the rating returned;
for a study participant (known from the profile's read), their session's figures, read under the
profile's lock: the gate that refuses a rating once the session has ended, and that tells whether
this rating ends it (SPEC 7: ``PARTICIPANT``, 3 statements more, whatever the session's length).
Before this path (issue 22) the same rating through the pages took three requests and 34 statements.

The first time a connection runs each of these statements it also prepares it on PostgreSQL
(``ratinggame.game.prepared``): a ``PREPARE`` once per connection and statement, not per
rating, which the counts leave out (``tests/ratinggame/game/test_prepared.py`` counts them).

A serve on its own (``POST /api/game/next``) also reads the image of the rater's previous serve (the
next pair shows another image, SPEC 5), which the one-request path has in hand. A control pair's
rating costs what a game pair's does: the rater's latest control ratings (the drift rule, SPEC
2.5) come with every rating's read of its assignment, so nothing, not the time, tells a rater
which pair was the check. (A control's rating used to read them on its own, one statement more.)
"""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from annotators.models import RaterProfile, RaterState
from ratinggame.game.prepared import is_preparation
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import assert_pairs_consistent, game_pairs, rater

pytestmark = pytest.mark.django_db(transaction=True)

ONE_REQUEST = {"postgresql": 6, "sqlite": 11}
TWO_REQUESTS = {"postgresql": 13, "sqlite": 18}
PAGE = {"postgresql": 6, "sqlite": 11}
PARTICIPANT = 3  # the session-end check of a study participant, on the page


@pytest.fixture
def client(settings):
    cache.clear()
    # Game pairs only: a control pair's serve and rating are counted on their own below.
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 0}
    game_pairs(10, primes=[3.0, 4.0])
    return token_client(rater(RaterState.GAME, window_count=20, window_points=40))  # past the window


def sent(captured: CaptureQueriesContext) -> int:
    """The statements of what was captured, less the connection's one-off ``PREPARE``s."""
    return sum(not is_preparation(query["sql"]) for query in captured.captured_queries)


def counted(call) -> tuple[dict, int]:
    with CaptureQueriesContext(connection) as captured:
        answer = call()
    assert answer.status_code == 200, answer.json()
    return answer.json(), sent(captured)


def one_request_costs(client, values) -> list[int]:
    """The statements of each rating in ``values``, one request each (``"next": true``)."""
    served = client.post("/api/game/next", format="json").json()
    costs = []
    for value in values:
        answer, cost = counted(
            lambda value=value, served=served: client.post(
                "/api/game/submit",
                {"assignment_id": served["assignment_id"], "value": value, "next": True},
                format="json",
            )
        )
        served = answer["next"]
        costs.append(cost)
    return costs


def test_a_game_rating_in_one_request_costs_at_most_the_documented_statements(client):
    costs = one_request_costs(client, (1, 4, 5))
    assert len(set(costs)) == 1, costs  # the same every time: nothing sampled, nothing swept on the way
    assert costs[0] <= ONE_REQUEST[connection.vendor], costs
    assert_pairs_consistent()


def test_a_game_rating_through_the_rating_page_costs_at_most_the_documented_statements(settings):
    """Through Django's whole handler (middleware, session, CSRF) as the page's script sends it."""
    cache.clear()
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 0}
    game_pairs(10, primes=[3.0, 4.0])
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(rater(RaterState.GAME, window_count=20, window_points=40))
    page = browser.get("/play/game/", follow=True)
    token = browser.cookies["csrftoken"].value
    assignment = page.context["served"].assignment_id
    costs = []
    for value in (1, 4, 5):
        with CaptureQueriesContext(connection) as captured:
            answer = browser.post(
                "/play/submit/", {"assignment": assignment, "value": value}, headers={"X-CSRFToken": token}
            )
        assert answer.status_code == 200, answer.content
        body = answer.json()
        assert "feedback" in body, body  # shown in place, not a page to open
        assignment = body["next"]["assignment_id"]
        costs.append(sent(captured))
    assert len(set(costs)) == 1, costs
    assert costs[0] <= PAGE[connection.vendor], costs
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


def test_a_control_pair_costs_the_statements_of_a_game_pair_to_rate(settings):
    """A control's serve replaces the claim of a game pair, and the rater's latest control ratings
    (the drift rule) come with every rating's read of its assignment: a rater cannot tell the
    quality check by the time its rating takes (SPEC 2.5). On SQLite (in the process, no round
    trips) each write of the batch is its own statement."""
    from tests.factories import ControlPairFactory

    def rating_costs(control_every: int) -> list[int]:
        cache.clear()
        settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": control_every}
        return one_request_costs(token_client(rater(RaterState.GAME, window_count=20, window_points=40)), (3, 2, 4))

    game_pairs(10, primes=[3.0, 4.0])
    game = rating_costs(0)
    ControlPairFactory(expert_rating=3)
    control = rating_costs(1)  # every serve a control
    assert RaterProfile.objects.filter(state=RaterState.GAME).count() == 2  # no drift on the way
    assert len(set(game)) == len(set(control)) == 1, (game, control)
    if connection.vendor == "postgresql":  # each statement a round trip to the database server
        assert control == game
    else:  # in the process: a game pair's slot and aggregates are two writes more than a control's
        assert control[0] == game[0] - 2, (game, control)


def test_a_study_participants_rating_through_the_page_costs_the_documented_statements_more(settings):
    """Whether the rating ended the participant's session (SPEC 7), with the active-minutes quota
    on: the same number of statements for every rating, however many came before."""
    cache.clear()
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 0}
    settings.RATINGGAME_STUDY = {**settings.RATINGGAME_STUDY, "QUOTA_RATINGS": 0, "QUOTA_MINUTES": 600}
    game_pairs(12, primes=[3.0, 4.0])
    browser = Client(enforce_csrf_checks=True)
    browser.get("/study/enter/", {"PROLIFIC_PID": "60a1b2c3d4e5f60718293a4b", "STUDY_ID": "s", "SESSION_ID": "x"})
    RaterProfile.objects.filter(participation__isnull=False).update(
        consent_at=timezone.now(),
        state=RaterState.GAME,
        game_entered_at=timezone.now(),
        window_count=20,
        window_points=40,
    )
    page = browser.get("/play/game/", follow=True)
    token = browser.cookies["csrftoken"].value
    assignment = page.context["served"].assignment_id
    costs = []
    for value in (1, 4, 5, 2, 3):
        with CaptureQueriesContext(connection) as captured:
            answer = browser.post(
                "/play/submit/", {"assignment": assignment, "value": value}, headers={"X-CSRFToken": token}
            )
        body = answer.json()
        assert "feedback" in body, body
        assignment = body["next"]["assignment_id"]
        costs.append(sent(captured))
    assert len(set(costs)) == 1, costs
    assert costs[0] <= PAGE[connection.vendor] + PARTICIPANT, costs
