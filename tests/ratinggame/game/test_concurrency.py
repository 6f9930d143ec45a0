"""Many raters at once on PostgreSQL: no lost rating, aggregates in step, never past 7 ratings."""

import threading
from datetime import timedelta

import pytest
from django.db import connections

from annotators.models import RaterState
from ratinggame import game
from ratinggame.game.aggregates import pair_aggregates_recompute
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from scoring.consensus import consensus_rating, player_score
from tests.ratinggame.journey_helpers import FAST_HASHERS, T0, assert_pairs_consistent, game_pairs, rater, seed_ratings

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

RATERS = 50


@pytest.fixture(autouse=True)
def _three_seconds(settings, require_postgres):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 3.0, "ASSIGNMENT_EXPIRY_SECONDS": 1800}
    settings.PASSWORD_HASHERS = FAST_HASHERS


def run_at_once(work, count: int) -> list:
    """Run work(i) in ``count`` threads released together; return results (or exceptions) by i."""
    barrier = threading.Barrier(count)
    results: list = [None] * count

    def target(index: int) -> None:
        try:
            barrier.wait()
            results[index] = work(index)
        except Exception as error:  # noqa: BLE001 - reported by the test below
            results[index] = error
        finally:
            connections.close_all()

    threads = [threading.Thread(target=target, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return results


def test_fifty_raters_rating_one_pair_at_once_are_all_stored_and_scored_in_turn():
    (pair,) = game_pairs(1, primes=[3.0, 4.0])
    users = [rater(RaterState.GAME) for _ in range(RATERS)]
    # Fifty open assignments of one pair, set up directly (the cap of 7 is tested below):
    # this is about the pair's row lock keeping its aggregates right under contention.
    assignments = [
        Assignment.objects.create(
            rater=user,
            pair=pair,
            stage=Pool.GAME,
            served_at=T0,
            expires_at=T0 + timedelta(hours=1),
            holds_slot=True,
        )
        for user in users
    ]
    CaptionPair.objects.filter(pk=pair.pk).update(in_flight=RATERS)
    values = [index % 5 + 1 for index in range(RATERS)]

    results = run_at_once(
        lambda i: game.rating_submit(
            rater=users[i], assignment_id=assignments[i].pk, value=values[i], now=T0 + timedelta(seconds=5)
        ),
        RATERS,
    )

    assert not [result for result in results if isinstance(result, Exception)]
    assert Rating.objects.filter(pair=pair).count() == RATERS
    pair.refresh_from_db()
    assert (pair.human_count, pair.human_sum, pair.human_sumsq) == tuple(pair_aggregates_recompute(pair))
    assert (pair.human_count, pair.human_sum) == (RATERS, sum(values))
    assert pair.in_flight == 0
    # Each rating was scored against exactly the ratings stored before it (rating ids follow
    # the order in which the pair lock was taken) plus the primes still in place.
    previous: list[int] = []
    for rating in Rating.objects.filter(pair=pair).order_by("id"):
        in_force = previous + [3.0, 4.0][len(previous) :]
        assert rating.points == player_score(rating.value, in_force)
        assert rating.reference == consensus_rating(in_force)
        previous.append(rating.value)


def test_fifty_raters_racing_for_a_pairs_last_slots_never_push_it_past_7():
    (pair,) = game_pairs(1, primes=[2.0, 4.0])
    seed_ratings(pair, [1, 5])  # 2 stored ratings that disagree: 5 slots left
    users = [rater(RaterState.GAME) for _ in range(RATERS)]

    def serve_and_rate(index: int):
        served = game.pair_serve(rater=users[index], now=T0)
        if served is None:
            return None
        return game.rating_submit(
            rater=users[index], assignment_id=served.assignment_id, value=index % 5 + 1, now=T0 + timedelta(seconds=5)
        )

    results = run_at_once(serve_and_rate, RATERS)

    assert not [result for result in results if isinstance(result, Exception)]
    rated = [result for result in results if result is not None]
    assert len(rated) == 5
    pair.refresh_from_db()
    assert pair.human_count == Rating.objects.filter(pair=pair).count() == 7
    assert (pair.in_flight, pair.assign_rank) == (0, None)
    assert_pairs_consistent()


def test_fifty_raters_rating_in_one_request_each_never_push_a_pair_past_7():
    pairs = game_pairs(10, primes=[2.0, 4.0])
    users = [rater(RaterState.GAME, window_count=20, window_points=40) for _ in range(RATERS)]

    def rate_until_none_left(index: int) -> int:
        now = T0
        served = game.pair_serve(rater=users[index], now=now)
        rated = 0
        while served is not None:
            now += timedelta(seconds=5)
            feedback = game.rating_submit(
                rater=users[index], assignment_id=served.assignment_id, value=index % 5 + 1, now=now, serve_next=True
            )
            served, rated = feedback.next, rated + 1
        return rated

    results = run_at_once(rate_until_none_left, RATERS)

    assert not [str(result) for result in results if isinstance(result, Exception)]
    # Every pair got at least 3 ratings and none more than 7; nobody rated a pair twice, and
    # nobody holds an open assignment (the game ran dry for everyone).
    counts = [Rating.objects.filter(pair=pair).count() for pair in pairs]
    assert all(3 <= count <= 7 for count in counts), counts
    assert sum(results) == sum(counts)
    assert Rating.objects.values("rater", "pair").distinct().count() == sum(counts)
    assert not Assignment.objects.filter(holds_slot=True).exists()
    assert_pairs_consistent()
