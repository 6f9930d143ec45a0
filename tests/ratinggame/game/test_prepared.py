"""The rating path's statements as server-side prepared statements (``ratinggame.game.prepared``):
prepared once per connection, then run with a generic plan, PostgreSQL planning them no more, each
value sent once; and on one driver cursor per thread (``ratinggame.game.cursor``): every rating of
a connection on the cursor made for it, Django's query log still seeing each statement, a new
connection with a cursor of its own and the old one let go, a rolled-back transaction leaving it
working, a finished thread leaving no connection open; elsewhere, Django's own cursor per statement."""

import gc
import threading
import time
import weakref

import pytest
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, transaction
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from annotators.models import RaterState
from ratinggame.game import cursor as game_cursor
from ratinggame.game import sql
from ratinggame.game.assignment import CLAIMS, claim_statements
from ratinggame.game.prepared import GENERIC_PLANS, is_preparation, prepared_form
from ratinggame.models import Rating
from tests.ratinggame.api_helpers import token_client
from tests.ratinggame.journey_helpers import assert_pairs_consistent, game_pairs, rater

postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's (every other database: plain SQL)"
)


def test_the_prepared_form_numbers_the_placeholders_and_keeps_a_percent_sign():
    name, prepare, run = prepared_form("SELECT %s, '100%%', %s", 2)
    assert name.startswith("rg_")
    assert prepare == f"PREPARE {name} AS SELECT $1, '100%', $2"
    assert run == f"EXECUTE {name}(%s, %s)"
    assert is_preparation(prepare) and not is_preparation(run)  # what statement counts leave out
    assert is_preparation(GENERIC_PLANS)
    assert prepared_form("SELECT 1", 0)[2] == f"EXECUTE {prepared_form('SELECT 1', 0)[0]}"
    assert prepared_form("SELECT %s", 1)[0] != prepared_form("SELECT %s + 1", 1)[0]
    with pytest.raises(ValueError, match="1 placeholders for 2 parameters"):
        prepared_form("SELECT %s", 2)


def test_a_named_parameter_is_numbered_once_however_often_the_statement_uses_it():
    name, prepare, run = prepared_form("SELECT %(a)s, %(b)s, '5%%', %(a)s + 1", None)
    assert prepare == f"PREPARE {name} AS SELECT $1, $2, '5%', $1 + 1"
    assert run == f"EXECUTE {name}(%(a)s, %(b)s)"  # the driver fills each once, from the mapping
    with pytest.raises(ValueError, match="mixes positional and named"):
        prepared_form("SELECT %(a)s, %s", None)
    with pytest.raises(ValueError, match="positional placeholders for named parameters"):
        prepared_form("SELECT %s", None)
    with pytest.raises(ValueError, match="placeholders for 1 parameters"):
        prepared_form("SELECT %(a)s", 1)


def test_the_claim_sends_each_of_its_values_once():
    """The claim's eight probes past the last image (two per rank) share the rater, the start point
    and the images: three parameters, where one per probe and value would be 24."""
    sql_text, params = next(claim_statements(7, 12345, (99,)))
    assert params == {"start": 12345, "rater": 7, "avoid_images": params["avoid_images"]}
    assert params["avoid_images"] in ([99], "[99]")  # an array on PostgreSQL, a JSON list on SQLite
    prepare = prepared_form(sql_text, None)[1]
    assert {"$1", "$2", "$3"} <= set(prepare.replace("(", " ").replace(")", " ").split()) and "$4" not in prepare
    assert sql_text.count("%(rater)s") == 8 and sql_text.count("%(start)s") == 8 and "%(avoid_images)s" in sql_text


@pytest.fixture
def client(settings):
    cache.clear()
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0, "CONTROL_EVERY": 0}
    game_pairs(14, primes=[3.0, 4.0])
    return token_client(rater(RaterState.GAME, window_count=20, window_points=40))


def _rate(client, served: dict, value: int = 3) -> tuple[dict, list[str]]:
    with CaptureQueriesContext(connection) as captured:
        answer = client.post(
            "/api/game/submit", {"assignment_id": served["assignment_id"], "value": value, "next": True}, format="json"
        )
    assert answer.status_code == 200, answer.json()
    return answer.json()["next"], [query["sql"] for query in captured.captured_queries]


def _game(sent: list[str]) -> list[str]:
    return [text for text in sent if text not in ("BEGIN", "COMMIT")]


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_connection_prepares_each_statement_of_the_rating_once_and_then_runs_a_generic_plan(client):
    connection.close()  # a new connection, whatever the tests before prepared on this one
    served = client.post("/api/game/next", format="json").json()
    served, first = _rate(client, served)
    prepares = [text for text in first if text.startswith("PREPARE ")]
    executes = [text for text in first if text.startswith("EXECUTE ")]
    assert len(prepares) == len(executes) == 4  # rater, assignment with its pair, claim, writes
    names = set()
    for _ in range(10):
        served, sent = _rate(client, served)
        assert all(text.startswith("EXECUTE rg_") for text in _game(sent)), sent
        names |= {text.split()[1].split("(")[0] for text in _game(sent)}
    assert_pairs_consistent()
    with connection.cursor() as cursor:
        cursor.execute("SELECT name, generic_plans, custom_plans FROM pg_prepared_statements")
        plans = {name: (generic, custom) for name, generic, custom in cursor.fetchall()}
    # Each statement of a rating ran 11 times, all on its generic plan: PostgreSQL planned none of
    # the runs (its own rule plans the first five and may go on planning each one).
    assert len(names) == 4
    assert {plans[name] for name in names} == {(11, 0)}, plans
    # Among them the claim past the previous serve's image, the costliest to plan.
    assert prepared_form(CLAIMS[True, True, True]().sql, None)[0] in names


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_new_connection_prepares_again_and_a_rolled_back_transaction_keeps_what_was_prepared(client):
    served = client.post("/api/game/next", format="json").json()
    served, _ = _rate(client, served)
    connection.close()  # a reconnect (CONN_MAX_AGE, a restart of the database)
    served, sent = _rate(client, served)
    assert sum(text.startswith("PREPARE ") for text in sent) == 4

    key = Token.objects.get().key
    connection.close()
    with pytest.raises(RuntimeError), transaction.atomic(), CaptureQueriesContext(connection) as rolled_back:
        assert sql.rater_by_token().fetchone(key) is not None  # prepared in this transaction
        raise RuntimeError("rolled back")
    assert rolled_back.captured_queries[0]["sql"].startswith("PREPARE ")
    with CaptureQueriesContext(connection) as captured:
        row = sql.rater_by_token().fetchone(key)
    assert row is not None
    # The PREPARE outlived the transaction's rollback (PostgreSQL's are not transactional).
    assert [query["sql"][:11] for query in captured.captured_queries] == ["EXECUTE rg_"]


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_each_new_connection_runs_generic_plans_and_a_rolled_back_transaction_keeps_the_setting(client):
    connection.close()
    with pytest.raises(RuntimeError), transaction.atomic():  # the connection is made in a transaction
        connection.cursor().execute("SELECT 1")
        raise RuntimeError("rolled back")
    with connection.cursor() as cursor:
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"


@pytest.mark.django_db(transaction=True)
def test_with_prepared_statements_off_the_statements_go_as_they_are(client, settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "PREPARED_STATEMENTS": False}
    if connection.vendor == "postgresql":
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute("SHOW plan_cache_mode")
            assert cursor.fetchone()[0] == "auto"  # PostgreSQL's default: nothing set
    served = client.post("/api/game/next", format="json").json()
    for value in (2, 5):
        served, sent = _rate(client, served, value)
        assert not any(text.startswith(("PREPARE ", "EXECUTE ")) for text in sent), sent
    assert_pairs_consistent()


# --- One driver cursor per thread (ratinggame.game.cursor) ------------------------------------------


@pytest.fixture
def cursors_made(monkeypatch):
    """Each driver cursor Django makes, and each of Django's own cursors (``connection.cursor()``)."""
    made = {"driver": 0, "django": 0}
    wrapper = type(connections[DEFAULT_DB_ALIAS])
    create, django_cursor = wrapper.create_cursor, wrapper.cursor

    def counted_create(self, name=None):
        made["driver"] += 1
        return create(self, name)

    def counted_cursor(self):
        made["django"] += 1
        return django_cursor(self)

    monkeypatch.setattr(wrapper, "create_cursor", counted_create)
    monkeypatch.setattr(wrapper, "cursor", counted_cursor)
    return made


@pytest.mark.django_db(transaction=True)
def test_every_rating_of_a_connection_runs_on_its_one_cursor_and_the_query_log_sees_each_statement(
    client, cursors_made
):
    served = client.post("/api/game/next", format="json").json()
    served, _ = _rate(client, served)  # the connection's first rating: prepared statements, the cursor
    before = dict(cursors_made)
    with CaptureQueriesContext(connection) as captured:
        for _ in range(5):
            served, _ = _rate(client, served)
    made = {kind: cursors_made[kind] - before[kind] for kind in before}
    executes = [query["sql"] for query in captured.captured_queries if query["sql"] not in ("BEGIN", "COMMIT")]
    if connection.vendor == "postgresql":
        assert made["driver"] == 0  # the cursor of the first rating, every time (its 4 statements each)
        assert len(executes) == 5 * 4 and all(text.startswith("EXECUTE ") for text in executes), executes
        assert made["django"] == 0  # none per statement (the health check runs on the driver connection)
    else:
        assert made["django"] >= 5 * 8  # Django's cursor for each statement
    assert Rating.objects.count() == 6
    assert_pairs_consistent()


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_new_connection_gets_a_cursor_of_its_own_and_lets_the_old_one_go(client):
    """The kept cursor is replaced with its connection, and nothing of the module keeps the old
    connection alive (a table of cursors by connection kept every connection it ever made)."""
    served = client.post("/api/game/next", format="json").json()
    served, _ = _rate(client, served)
    first, old_connection = game_cursor._kept.cursor, weakref.ref(connection.connection)
    connection.close()  # a reconnect (CONN_MAX_AGE, a restart of the database)
    served, _ = _rate(client, served)
    second = game_cursor._kept.cursor
    assert second is not first and first.closed and not second.closed
    del first
    assert old_connection() is None  # no cycle, no table: gone without the garbage collector

    with pytest.raises(IntegrityError), transaction.atomic():
        assert sql.profile_locked().fetchone(Rating.objects.first().rater_id) is not None  # on the kept cursor
        Rating.objects.create(**{**Rating.objects.values().first(), "id": None})  # one rating per assignment
    served, _ = _rate(client, served)  # the same cursor, after the rollback
    assert game_cursor._kept.cursor is second
    assert Rating.objects.count() == 3
    assert_pairs_consistent()


@postgresql_only
@pytest.mark.django_db(transaction=True)
def test_a_thread_that_ends_leaves_no_database_connection_open():
    """A thread's kept cursor goes with the thread, and its connection with Django's wrapper of it
    (a table of cursors by connection kept every thread's connection open for good)."""
    backends: list[int] = []
    seen: list[tuple] = []  # what the thread found (an assertion failing in a thread would not fail the test)

    def rate_in_a_thread() -> None:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                backends.append(cursor.fetchone()[0])
            row = sql.profile_locked().fetchone(-1)  # a game statement, on the thread's kept cursor
            seen.append((row, getattr(game_cursor._kept, "cursor", None) is not None))

    thread = threading.Thread(target=rate_in_a_thread)
    thread.start()
    thread.join()
    assert seen == [(None, True)] and len(backends) == 1
    gc.collect()  # Django's wrapper of a connection is a cycle of its own: the collector frees it
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", backends)
            if cursor.fetchone()[0] == 0:
                return
        time.sleep(0.05)
    pytest.fail("the thread's database connection stayed open")


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_a_statement_takes_djangos_cursor(client, cursors_made):
    before = dict(cursors_made)
    assert sql.profile_locked().fetchone(-1) is None  # autocommit: no transaction to keep a cursor in
    assert cursors_made["django"] == before["django"] + 1
