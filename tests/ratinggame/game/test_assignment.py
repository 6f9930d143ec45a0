"""Which game pair comes next (SPEC section 5): 3 to 7 ratings, never twice, started first."""

import json
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.utils import timezone

from annotators.models import RaterState
from ratinggame import game
from ratinggame.game.assignment import assign_rank_for, game_pair_claim
from ratinggame.models import AssignRank
from ratinggame.tasks import release_expired_assignments
from tests.ratinggame.journey_helpers import (
    T0,
    Clock,
    assert_pairs_consistent,
    game_pairs,
    probation_pairs,
    rate_next,
    rater,
    seed_ratings,
    tutorial_pairs,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("three_second_rules")]


def serve(user, now=T0):
    served = game.pair_serve(rater=user, now=now)
    return None if served is None else served.pair_id


@pytest.mark.parametrize(
    ("human", "in_flight", "rank"),
    [
        ([], 0, AssignRank.FRESH),
        ([3], 0, AssignRank.STARTED),
        ([], 1, AssignRank.STARTED),  # an open assignment already started it
        ([3, 3], 0, AssignRank.NEAR_MINIMUM),
        ([3, 3], 1, None),  # 3 committed, all equal so far: wait for the third
        ([1, 5], 1, AssignRank.DISAGREEING),  # 3 committed and already disagreeing
        ([4, 4, 4], 0, None),  # 3 that agree: done
        ([4, 4, 5], 0, AssignRank.DISAGREEING),
        ([1, 2, 3, 4, 5, 5], 0, AssignRank.DISAGREEING),
        ([1, 2, 3, 4, 5, 5], 1, None),  # 7 committed: full
        ([1, 2, 3, 4, 5, 5, 5], 0, None),
    ],
)
@pytest.mark.usefixtures("unanimous_policy")
def test_rank_follows_the_rules(human, in_flight, rank):
    assert (
        assign_rank_for(
            human_count=len(human),
            human_sum=sum(human),
            human_sumsq=sum(v * v for v in human),
            in_flight=in_flight,
        )
        == rank
    )


def test_a_rater_never_gets_the_same_pair_twice():
    pairs = game_pairs(3)
    user, clock = rater(RaterState.GAME), Clock()
    seen = [rate_next(user, 3, clock)[0].pair_id for _ in range(3)]
    assert sorted(seen) == sorted(pair.pk for pair in pairs)
    assert game.pair_serve(rater=user, now=clock.now) is None


def test_no_tutorial_or_probation_pair_in_the_game():
    tutorial_pairs([3, 3])
    probation_pairs(3)
    user = rater(RaterState.GAME)
    assert serve(user) is None
    (pair,) = game_pairs(1)
    assert serve(user) == pair.pk


@pytest.mark.usefixtures("unanimous_policy")
def test_started_pairs_come_first_then_disagreeing_then_fresh_and_never_past_7():
    fresh, disagreeing, started_one, started_two = game_pairs(4)  # fresh has the lowest id
    seed_ratings(disagreeing, [1, 3, 5])
    seed_ratings(started_one, [4])
    seed_ratings(started_two, [3, 3])
    order = [serve(rater(RaterState.GAME)) for _ in range(9)]
    # started_two (2 ratings) fills to 3 committed and, agreeing so far, waits; started_one
    # takes two raters to reach 3; the disagreeing pair takes 4 more up to 7; then the fresh one.
    assert order == [
        started_two.pk,
        started_one.pk,
        started_one.pk,
        disagreeing.pk,
        disagreeing.pk,
        disagreeing.pk,
        disagreeing.pk,
        fresh.pk,
        fresh.pk,
    ]
    assert_pairs_consistent()


@pytest.mark.usefixtures("unanimous_policy")
def test_past_3_only_pairs_whose_ratings_disagree_get_more():
    agreeing, disagreeing = game_pairs(2)
    seed_ratings(agreeing, [4, 4, 4])
    seed_ratings(disagreeing, [4, 4, 5])
    user, clock = rater(RaterState.GAME), Clock()
    assert rate_next(user, 4, clock)[0].pair_id == disagreeing.pk
    assert game.pair_serve(rater=user, now=clock.now) is None


@pytest.mark.usefixtures("unanimous_policy")
def test_a_pair_takes_at_most_7_and_open_assignments_count():
    (pair,) = game_pairs(1)
    seed_ratings(pair, [1, 2, 3, 4, 5, 5])
    first, second = rater(RaterState.GAME), rater(RaterState.GAME)
    clock = Clock()
    assert serve(first, clock.now) == pair.pk
    assert serve(second, clock.now) is None  # 6 stored + 1 open = 7
    clock.tick(5)
    served = game.pair_serve(rater=first, now=clock.now)
    game.rating_submit(rater=first, assignment_id=served.assignment_id, value=2, now=clock.now)
    pair.refresh_from_db()
    assert (pair.human_count, pair.assign_rank) == (7, None)
    assert serve(second, clock.now) is None
    assert_pairs_consistent()


def test_an_expired_open_assignment_gives_its_slot_back():
    (pair,) = game_pairs(1)
    seed_ratings(pair, [3, 3])
    first, second = rater(RaterState.GAME), rater(RaterState.GAME)
    served = game.pair_serve(rater=first, now=T0)
    assert served.pair_id == pair.pk
    assert serve(second, T0 + timedelta(seconds=60)) is None  # 2 + 1 open = 3
    # Abandoned: after expiry the slot goes to the next rater, and the late rating is refused.
    assert serve(second, served.expires_at) == pair.pk
    with pytest.raises(game.RatingRejected) as late:
        game.rating_submit(rater=first, assignment_id=served.assignment_id, value=3, now=served.expires_at)
    assert late.value.code == "expired"
    pair.refresh_from_db()
    assert pair.in_flight == 1
    assert_pairs_consistent()


def test_the_periodic_task_gives_expired_slots_back():
    (pair,) = game_pairs(1)
    seed_ratings(pair, [3, 3])
    user = rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=timezone.now() - timedelta(hours=2))  # expired an hour ago
    assert served.pair_id == pair.pk
    assert release_expired_assignments.apply().get() == 1
    pair.refresh_from_db()
    assert (pair.in_flight, pair.assign_rank) == (0, AssignRank.NEAR_MINIMUM)
    assert release_expired_assignments.apply().get() == 0  # nothing twice
    assert_pairs_consistent()


def test_the_claim_reads_the_serving_order_index_once_per_probe_on_postgresql(require_postgres):
    """The claim can be answered from the partial serving-order index and the (rater, pair) index.

    Sequential scans are switched off so that the plan shows whether the indexes fit the
    statement at all (on a few rows the planner would rightly prefer a scan). The probes after
    the first one that finds a pair are never run, and only what is found is locked.
    """
    from ratinggame.game.assignment import claim_statements, order_start

    pairs = game_pairs(3)
    user = rater(RaterState.GAME)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
        sql, params = next(claim_statements(user.pk, order_start(user.rater.order_seed, 0), ()))
        cursor.execute("EXPLAIN (ANALYZE, FORMAT TEXT) " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        transaction.set_rollback(True)
    assert "pair_serving_order_idx" in plan
    assert "assignment_game_once" in plan
    assert "Sort" not in plan  # the index order is the serving order: no sort of the pool
    assert "LockRows" in plan  # the row comes back locked (FOR NO KEY UPDATE SKIP LOCKED)
    assert "never executed" in plan  # the probes after the one that found a pair
    assert "random" not in sql.lower()
    with transaction.atomic():
        claimed = game_pair_claim(rater_id=user.pk, start=order_start(user.rater.order_seed, 0))
        assert claimed[0].id in {pair.pk for pair in pairs}


def _plan_nodes(plan: dict) -> list[dict]:
    """Every node of a JSON plan."""
    return [plan] + [node for child in plan.get("Plans", []) for node in _plan_nodes(child)]


def _assignment_scans(plan: dict) -> list[dict]:
    """Every node of a JSON plan that reads the assignments."""
    return [node for node in _plan_nodes(plan) if node.get("Relation Name") == "ratinggame_assignment"]


def test_the_pairs_a_rater_has_seen_are_looked_up_by_pair_whatever_the_statistics_say(require_postgres):
    """Each candidate pair of a claim asks the (rater, pair) index about that one pair.

    Planned as an anti-join, the check depended on the table's statistics: where they said the
    rater had next to no assignments (a new study, statistics taken before the rush, autovacuum
    behind or off), PostgreSQL read all of the rater's assignments for every candidate pair, a
    claim grew with the rater's ratings, and a claim of a rater with 1,000 ratings took 200 ms. The
    check is now a subplan run per candidate (``OFFSET 0`` keeps it one), both in the claim's
    statement read on past the windows, and without a lock (the waiting claim, the next image's
    guess).
    """
    from ratinggame.game.assignment import claim_statements, order_start

    game_pairs(30)
    user = rater(RaterState.GAME)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ANALYZE ratinggame_assignment")  # statistics of an empty table: no assignments
        clock = Clock(T0)
        for _ in range(20):  # then the rater rates
            rate_next(user, 3, clock)
        cursor.execute("SET LOCAL enable_seqscan = off")  # as on a table of many pages
        start = order_start(user.rater.order_seed, 20)
        statements = [*claim_statements(user.pk, start, ()), *claim_statements(user.pk, start, (1,), locking=False)]
        for statement, values in statements:
            cursor.execute("EXPLAIN (FORMAT JSON) " + statement, values)
            scans = _assignment_scans(cursor.fetchone()[0][0]["Plan"])
            assert scans, statement
            for scan in scans:
                assert "pair_id = " in scan.get("Index Cond", ""), scan
        transaction.set_rollback(True)


def test_a_claim_reads_a_window_of_each_rank_however_many_of_its_pairs_the_rater_has_seen(require_postgres):
    """A rater rating alone leaves every pair they rate in the started ranks; each probe still
    reads at most ``PROBE_WINDOW`` entries of the serving index, and the claim goes on to a fresh
    pair. Without the window a probe read every started pair the rater had rated: a claim grew
    with the rater's ratings (2.6 ms at 1,000, 6.4 ms at 2,000).
    The next image's guess (the claim without a lock) reads the same window and finds the same pair.
    """
    from ratinggame.game.assignment import PROBE_WINDOW, Lock, claim_statements, order_start

    user = rater(RaterState.GAME)
    seen = game_pairs(4 * PROBE_WINDOW)  # more than the two probes of a rank (from the start, the wrap) read
    fresh = game_pairs(3)
    for pair in seen:
        seed_ratings(pair, [3], raters=[user])
    assert {pair.assign_rank for pair in seen} == {AssignRank.STARTED}
    start = order_start(user.rater.order_seed, len(seen))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # as on a table of many pages
        sql, params = next(claim_statements(user.pk, start, ()))
        cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        plan = cursor.fetchone()[0][0]["Plan"]
        transaction.set_rollback(True)
    reads = [
        node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0)
        for node in _plan_nodes(plan)
        if node.get("Index Name") == "pair_serving_order_idx"
    ]
    assert reads and max(reads) <= PROBE_WINDOW, json.dumps(plan, indent=1)
    with transaction.atomic():
        claimed = game_pair_claim(rater_id=user.pk, start=start)
        transaction.set_rollback(True)
    assert claimed[0].id in {pair.pk for pair in fresh}
    assert game_pair_claim(rater_id=user.pk, start=start, lock=Lock.NONE)[0].id == claimed[0].id
