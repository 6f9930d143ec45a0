"""The rater's journey through the services (SPEC sections 2 and 3), with the clock under control."""

from dataclasses import replace
from datetime import timedelta

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotators.journey import Window
from annotators.models import ProbationRound, RaterProfile, RaterState
from ratinggame import game
from ratinggame.game.aggregates import in_force, pair_aggregates_recompute, ratings_exclude
from ratinggame.game.assignment import assignments_release_expired
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from scoring.consensus import player_score
from tests.factories import CaptionPairFactory
from tests.ratinggame.journey_helpers import (
    T0,
    WAIT,
    Clock,
    assert_pairs_consistent,
    game_pairs,
    probation_pairs,
    rate_next,
    rater,
    seed_ratings,
    tutorial_pairs,
    value_scoring,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("three_second_rules")]

EXPERTS = [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]


def play_tutorial(user, clock: Clock, points: list[int]) -> list[tuple[game.Served, game.Feedback]]:
    return [rate_next(user, lambda pair, p=p: value_scoring(pair.expert_rating, p), clock) for p in points]


def play_probation_round(user, clock: Clock, points: list[int]) -> list[tuple[game.Served, game.Feedback]]:
    return [rate_next(user, lambda pair, p=p: value_scoring(pair.expert_rating, p), clock) for p in points]


# --- Tutorial -------------------------------------------------------------------------------


def test_tutorial_of_10_points_passes_to_the_game():
    pairs = tutorial_pairs(EXPERTS)
    user, clock = rater(), Clock()
    # 5 exact (2 points each) and 5 two steps off (0 each): 10 of 20, the pass mark.
    played = play_tutorial(user, clock, [2, 2, 2, 2, 2, 0, 0, 0, 0, 0])

    assert [served.pair_id for served, _ in played] == [pair.pk for pair in pairs]  # display order
    assert [served.position for served, _ in played] == list(range(1, 11))
    assert {served.total for served, _ in played} == {10}
    assert [fb.stage_total for _, fb in played] == [2, 4, 6, 8, 10, 10, 10, 10, 10, 10]
    assert [fb.reference for _, fb in played] == EXPERTS
    assert played[0][1].explanation == pairs[0].explanation
    assert {fb.stage_max for _, fb in played} == {20}
    assert [fb.transition for _, fb in played] == [None] * 9 + ["tutorial_passed"]
    profile = RaterProfile.objects.get(user=user)
    assert profile.state == RaterState.GAME
    assert profile.tutorial_score == 10
    assert profile.game_entered_at == played[-1][0].served_at + timedelta(seconds=4)  # the 10th submission
    assert (profile.window_count, profile.window_points, profile.game_score) == (0, 0, 0)
    assert not ProbationRound.objects.filter(profile=profile).exists()


def test_tutorial_of_9_points_puts_the_rater_on_probation():
    tutorial_pairs(EXPERTS)
    probation = probation_pairs(20)
    user, clock = rater(), Clock()
    # 4 exact (8), one a step off (1), five two steps off (0): 9 of 20.
    played = play_tutorial(user, clock, [2, 2, 2, 2, 1, 0, 0, 0, 0, 0])

    assert played[-1][1].transition == "tutorial_failed"
    assert played[-1][1].stage_total == 9
    profile = RaterProfile.objects.get(user=user)
    assert (profile.state, profile.tutorial_score) == (RaterState.PROBATION, 9)
    first_round = ProbationRound.objects.get(profile=profile)
    assert first_round.number == 1
    assert sorted(first_round.pair_order) == sorted(pair.pk for pair in probation)


def test_tutorial_points_can_be_negative():
    tutorial_pairs([1, 5])
    user, clock = rater(), Clock()
    # 2 - |1 - 5| = -2 (SPEC section 2.1).
    _, feedback = rate_next(user, 5, clock)
    assert (feedback.points, feedback.reference, feedback.stage_total) == (-2, 1, -2)


# --- Probation ------------------------------------------------------------------------------


def test_probation_failed_round_is_reshuffled_and_a_passed_round_enters_the_game():
    pairs = probation_pairs(20)
    user, clock = rater(RaterState.PROBATION), Clock()
    # 12 exact (24 points) and 8 two steps off: 24 < 25.
    first = play_probation_round(user, clock, [2] * 12 + [0] * 8)
    profile = RaterProfile.objects.get(user=user)
    round1, round2 = ProbationRound.objects.filter(profile=profile).order_by("number")

    assert [served.pair_id for served, _ in first] == round1.pair_order
    assert [served.position for served, _ in first] == list(range(1, 21))
    assert {fb.stage_max for _, fb in first} == {40}
    assert first[-1][1].transition == "probation_failed"
    assert (round1.score, round1.rated, round1.passed) == (24, 20, False)
    assert profile.state == RaterState.PROBATION
    # A fresh shuffle of the same pairs.
    assert sorted(round2.pair_order) == sorted(pair.pk for pair in pairs)
    assert round2.pair_order != round1.pair_order

    # 12 exact + 1 one step off = 25: the pass mark.
    second = play_probation_round(user, clock, [2] * 12 + [1] + [0] * 7)
    assert [served.pair_id for served, _ in second] == round2.pair_order
    assert second[-1][1].transition == "probation_passed"
    assert second[-1][1].stage_total == 25
    round2.refresh_from_db()
    profile.refresh_from_db()
    assert round2.passed is True
    assert profile.state == RaterState.GAME
    assert profile.game_entered_at == second[-1][0].served_at + timedelta(seconds=4)


@pytest.mark.parametrize(
    ("points", "transition"), [([2, 2, 2, 1, 0], "probation_passed"), ([2, 2, 2, 0, 0], "probation_failed")]
)
def test_probation_with_fewer_than_20_pairs_scales_the_maximum_and_the_pass_mark(points, transition):
    probation_pairs(5)
    user, clock = rater(RaterState.PROBATION), Clock()
    # 5 pairs: maximum 2 * 5 = 10, pass mark ceil(25 * 5 / 20) = 7; 7 passes, 6 fails.
    played = play_probation_round(user, clock, points)
    assert {fb.stage_max for _, fb in played} == {10}
    assert {served.total for served, _ in played} == {5}
    assert played[-1][1].transition == transition


# --- Game scoring against the ratings in force ----------------------------------------------


def test_first_rater_of_an_unprimed_pair_scores_0_and_is_told_so():
    game_pairs(1)
    user, clock = rater(RaterState.GAME), Clock()
    _, feedback = rate_next(user, 2, clock)
    assert (feedback.points, feedback.reference, feedback.first_rater) == (0, None, True)
    assert feedback.explanation == ""


def test_primes_are_replaced_by_human_ratings_oldest_first():
    (pair,) = game_pairs(1, primes=[4.0, 4.0])
    clock = Clock()
    # 1st human, against the primes [4, 4] (SPEC worked example): x = 1 -> -2, consensus 4.
    _, first = rate_next(rater(RaterState.GAME), 1, clock)
    assert (first.points, first.reference, first.first_rater) == (-2, 4, False)
    # 2nd human, against [1 (human), 4 (second prime)]: mean 2.5 -> r = 3, var = 2.25, n = 3,
    # v = 1 + (1/3)(1 + 2 * 2.25 / 4) = 1.7083; x = 5: d = 2 / 1.7083 = 1.17 -> -1.
    _, second = rate_next(rater(RaterState.GAME), 5, clock)
    assert (second.points, second.reference) == (-1, 3)
    # 3rd human, purely human [1, 5] (SPEC worked example): x = 4 -> 1, consensus 3.
    # (Were the primes still counted, [1, 5, 4, 4] would give r = 4 and 2 points.)
    _, third = rate_next(rater(RaterState.GAME), 4, clock)
    assert (third.points, third.reference) == (1, 3)
    pair.refresh_from_db()
    assert (pair.human_count, pair.human_sum, pair.human_sumsq) == (3, 10, 42)
    assert_pairs_consistent()


def test_excluding_a_human_rating_brings_a_prime_back():
    (pair,) = game_pairs(1, primes=[1.0, 1.0])
    clock = Clock()
    _, excluded = rate_next(rater(RaterState.GAME), 5, clock)
    rate_next(rater(RaterState.GAME), 5, clock)
    ratings_exclude(rating_ids=[excluded.rating_id], reason="test")
    pair.refresh_from_db()
    # One human rating left, so the second prime is in force again: [5, 1].
    assert tuple(in_force(pair)) == (2, 6.0, 26.0)
    # x = 4 against [5, 1]: r = 3, var = 4, n = 3, v = 1 + (1/3)(1 + 2 * 4 / 4) = 2, d = 0.5 -> 1.
    # (Against [5] alone it would be r = 5, v = 1.5, d = 0.67 -> 0.)
    _, after = rate_next(rater(RaterState.GAME), 4, clock)
    assert (after.points, after.reference) == (1, 3)
    assert Rating.objects.get(pk=excluded.rating_id).excluded_reason == "test"
    assert_pairs_consistent()


# --- Qualification window -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("odd_value", "window_total", "transition"), [(4, 25, "window_passed"), (5, 24, "window_failed")]
)
def test_window_needs_25_points_in_the_first_20_game_ratings(odd_value, window_total, transition):
    # 12 pairs primed [4, 4] rated 4: 2 points each (24). 8 pairs primed [1, 5] (SPEC worked
    # example): 7 rated 5, 0 points each, and one rated `odd_value`: 4 scores 1 (25), 5 scores 0 (24).
    exact = {pair.pk for pair in game_pairs(12, primes=[4.0, 4.0])}
    game_pairs(8, primes=[1.0, 5.0])
    odd_given = []

    def value(pair):
        if pair.pk in exact:
            return 4
        if not odd_given:
            odd_given.append(pair.pk)
            return odd_value
        return 5

    user, clock = rater(RaterState.GAME), Clock()
    played = [rate_next(user, value, clock) for _ in range(20)]
    assert sorted(fb.points for _, fb in played) == sorted([2] * 12 + [0] * 7 + [window_total - 24])

    window = played[-1][1].window
    assert (window.count, window.points, window.size, window.needed) == (20, window_total, 20, 25)
    assert [fb.transition for _, fb in played] == [None] * 19 + [transition]
    profile = RaterProfile.objects.get(user=user)
    if transition == "window_passed":
        assert (profile.state, profile.game_score) == (RaterState.GAME, 25)
        assert not Rating.objects.filter(rater=user, excluded=True).exists()
    else:
        assert (profile.state, profile.game_score) == (RaterState.PROBATION, 0)
        assert played[-1][1].stage_total == 0
        assert Rating.objects.filter(rater=user, excluded=True).count() == 20
    assert_pairs_consistent()


# --- The whole journey ----------------------------------------------------------------------


def test_whole_journey_tutorial_probation_window_failed_and_passed():
    tutorial_pairs(EXPERTS)
    probation_pairs(20)
    # Only the 20 pairs of the first window exist until it has failed (more come later).
    game_pairs(20, primes=[4.0, 4.0])
    user, clock = rater(), Clock()

    # Tutorial: 8 points -> probation.
    assert play_tutorial(user, clock, [2, 2, 2, 2] + [0] * 6)[-1][1].transition == "tutorial_failed"
    # Round 1: 20 points -> failed, round 2 is a reshuffle.
    assert play_probation_round(user, clock, [1] * 20)[-1][1].transition == "probation_failed"
    # Round 2: 40 points -> game.
    assert play_probation_round(user, clock, [2] * 20)[-1][1].transition == "probation_passed"
    profile = RaterProfile.objects.get(user=user)
    assert profile.state == RaterState.GAME
    assert [r.passed for r in ProbationRound.objects.filter(profile=profile)] == [False, True]

    # Game, window 1: twenty 1s against primes [4, 4] score -2 each: -40 < 25 -> failed.
    window1 = [rate_next(user, 1, clock) for _ in range(20)]
    assert {fb.points for _, fb in window1} == {-2}
    assert window1[-1][1].transition == "window_failed"
    assert window1[-1][1].window == Window(count=20, points=-40)
    profile.refresh_from_db()
    assert (profile.state, profile.game_score) == (RaterState.PROBATION, 0)
    assert ProbationRound.objects.filter(profile=profile).count() == 3
    window1_ratings = Rating.objects.filter(rater=user, stage=Pool.GAME)
    assert window1_ratings.count() == 20
    assert set(window1_ratings.values_list("excluded_reason", flat=True)) == {"failed qualification window"}
    window1_pairs = CaptionPair.objects.filter(pk__in=[served.pair_id for served, _ in window1])
    # Out of consensus: the pairs are back to their two primes, and stored == recomputed.
    assert {(pair.human_count, pair.human_sum, pair.human_sumsq) for pair in window1_pairs} == {(0, 0, 0)}
    assert_pairs_consistent()
    # Another rater on one of those pairs is scored against the primes [4, 4] again:
    # x = 2 -> -1, consensus 4 (SPEC worked example).
    other = rater(RaterState.GAME)
    _, other_fb = rate_next(other, 2, clock)
    assert other_fb.pair_id in {pair.pk for pair in window1_pairs}
    assert (other_fb.points, other_fb.reference) == (-1, 4)

    # Back through probation (round 3) into the game: window 2 of twenty 4s on new pairs.
    game_pairs(25, primes=[4.0, 4.0])
    assert play_probation_round(user, clock, [2] * 20)[-1][1].transition == "probation_passed"
    window2 = [rate_next(user, 4, clock) for _ in range(20)]
    seen_before = {served.pair_id for served, _ in window1}
    assert not seen_before & {served.pair_id for served, _ in window2}  # never the same pair twice
    assert window2[-1][1].transition == "window_passed"
    assert window2[-1][1].stage_total == 40
    profile.refresh_from_db()
    assert profile.state == RaterState.GAME
    # Past the window: ratings go on, the window no longer moves.
    _, later = rate_next(user, 4, clock)
    assert later.transition is None
    assert later.window == window2[-1][1].window
    assert_pairs_consistent()


# --- Serving is reload-safe -----------------------------------------------------------------


def test_rating_guide_examples_are_never_served():
    for level in (1, 2, 3, 4, 5):
        CaptionPairFactory(pool=Pool.GUIDE, expert_rating=level, explanation="why", primes=[3.0, 3.0])
    for state in (RaterState.TUTORIAL, RaterState.PROBATION, RaterState.GAME):
        assert game.pair_serve(rater=rater(state), now=T0) is None, state
    assert not Assignment.objects.exists()


def test_serving_again_returns_the_open_assignment_with_its_served_time():
    game_pairs(3)
    user, clock = rater(RaterState.GAME), Clock()
    first = game.pair_serve(rater=user, now=clock.now)
    again = game.pair_serve(rater=user, now=clock.tick(60))
    assert again == first
    assert Assignment.objects.filter(rater=user).count() == 1
    # Once it has expired, the next serve is a new assignment (of another pair: never twice).
    later = game.pair_serve(rater=user, now=first.expires_at)
    assert later.assignment_id != first.assignment_id
    assert later.pair_id != first.pair_id
    assert later.served_at == first.expires_at


def test_tutorial_pair_expired_unrated_is_served_again():
    tutorial_pairs(EXPERTS)
    user, clock = rater(), Clock()
    first = game.pair_serve(rater=user, now=clock.now)
    later = game.pair_serve(rater=user, now=first.expires_at)
    assert (later.pair_id, later.position) == (first.pair_id, 1)
    assert later.assignment_id != first.assignment_id


# --- One request per rating: the submission serves the next pair ------------------------------


def submit_next(user, served: game.Served, value: int, now) -> game.Feedback:
    return game.rating_submit(rater=user, assignment_id=served.assignment_id, value=value, now=now, serve_next=True)


def test_a_game_submission_with_serve_next_stores_the_rating_and_opens_the_next_pair():
    pairs = game_pairs(3, primes=[2.0, 4.0])
    user, clock = rater(RaterState.GAME), Clock()
    served = game.pair_serve(rater=user, now=clock.now)
    feedback = submit_next(user, served, 4, clock.tick(WAIT))

    # The feedback is the one a plain submission gives (scored against the primes 2 and 4).
    assert (feedback.pair_id, feedback.reference, feedback.points) == (served.pair_id, 3, player_score(4, [2.0, 4.0]))
    assert feedback == replace(game.feedback_for(rater=user, assignment_id=served.assignment_id), next=feedback.next)
    # The next pair is served as of the submission: a new pair, its own 3-second floor.
    following = feedback.next
    assert following.pair_id in {pair.pk for pair in pairs} - {served.pair_id}
    assert (following.stage, following.served_at) == ("game", clock.now)
    assert following.min_submit_at == clock.now + timedelta(seconds=3)
    # It is the rater's one open assignment: serving again answers it unchanged.
    assert game.pair_serve(rater=user, now=clock.tick(1)) == following
    assert Assignment.objects.filter(rater=user, submitted_at__isnull=True).count() == 1
    # Its floor holds like any other's.
    early = rejected(lambda: submit_next(user, following, 3, following.served_at + timedelta(seconds=2)))
    assert early.code == "too_early"
    assert_pairs_consistent()


def test_submitting_twice_with_serve_next_shows_the_first_feedback_and_the_same_open_pair():
    game_pairs(3)
    user, clock = rater(RaterState.GAME), Clock()
    served = game.pair_serve(rater=user, now=clock.now)
    first = submit_next(user, served, 3, clock.tick(WAIT))
    again = submit_next(user, served, 5, clock.tick(10))
    assert again == replace(first, already_rated=True)  # the 5 is not taken
    assert Rating.objects.filter(rater=user).count() == 1
    assert Assignment.objects.filter(rater=user).count() == 2
    assert_pairs_consistent()


def test_serve_next_when_nothing_is_left_answers_no_next_pair():
    game_pairs(1)
    user, clock = rater(RaterState.GAME), Clock()
    served = game.pair_serve(rater=user, now=clock.now)
    feedback = submit_next(user, served, 3, clock.tick(WAIT))
    assert feedback.rating_id and feedback.next is None
    assert_pairs_consistent()


def test_a_refused_submission_with_serve_next_serves_nothing():
    (pair, _) = game_pairs(2)
    seed_ratings(pair, [3, 3])
    first, second = rater(RaterState.GAME), rater(RaterState.GAME)
    served = game.pair_serve(rater=first, now=T0)
    assert served.pair_id == pair.pk
    # Expired, its slot given back (the periodic sweep) and taken by another rater: the late
    # rating is refused, and the next pair it would have opened is not taken either.
    assert assignments_release_expired(now=served.expires_at) == 1
    assert game.pair_serve(rater=second, now=served.expires_at).pair_id == pair.pk
    late = rejected(lambda: submit_next(first, served, 3, served.expires_at))
    assert late.code == "expired"
    assert not Rating.objects.filter(rater=first).exists()
    assert Assignment.objects.filter(rater=first).count() == 1
    assert_pairs_consistent()


def test_serve_next_follows_the_journey_from_the_tutorial_into_the_game():
    tutorial_pairs([3, 4])
    (game_pair,) = game_pairs(1)
    user, clock = rater(), Clock()
    served = game.pair_serve(rater=user, now=clock.now)
    feedback = submit_next(user, served, 3, clock.tick(WAIT))
    assert (feedback.next.stage, feedback.next.position, feedback.next.total) == ("tutorial", 2, 2)
    feedback = submit_next(user, feedback.next, 4, clock.tick(WAIT))
    assert feedback.transition == "tutorial_passed"
    assert (feedback.next.stage, feedback.next.pair_id) == ("game", game_pair.pk)


def test_a_failed_window_with_serve_next_serves_a_probation_pair():
    probation = probation_pairs(20)
    game_pairs(2)
    # The window's last rating, with 19 ratings worth 0 so far: it fails whatever it scores.
    user, clock = rater(RaterState.GAME, window_count=19, window_points=0), Clock()
    served = game.pair_serve(rater=user, now=clock.now)
    feedback = submit_next(user, served, 3, clock.tick(WAIT))
    assert feedback.transition == "window_failed"
    assert feedback.next.stage == "probation" and feedback.next.pair_id in {pair.pk for pair in probation}
    assert Assignment.objects.filter(rater=user, stage=Pool.GAME, submitted_at__isnull=True).count() == 0
    assert_pairs_consistent()


# --- Rejections -----------------------------------------------------------------------------


def rejected(call) -> game.RatingRejected:
    with pytest.raises(game.RatingRejected) as info:
        call()
    return info.value


def test_rating_before_the_3_second_floor_is_rejected_then_accepted_at_it():
    game_pairs(1)
    user = rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=T0)
    assert served.min_submit_at == T0 + timedelta(seconds=3)
    early = rejected(
        lambda: game.rating_submit(
            rater=user, assignment_id=served.assignment_id, value=3, now=T0 + timedelta(seconds=2.999)
        )
    )
    assert (early.code, early.status) == ("too_early", 400)
    assert not Rating.objects.exists()
    feedback = game.rating_submit(
        rater=user, assignment_id=served.assignment_id, value=3, now=T0 + timedelta(seconds=3)
    )
    assert feedback.value == 3


def test_submitting_twice_returns_the_first_feedback_and_stores_one_rating():
    (pair,) = game_pairs(1, primes=[4.0, 4.0])
    user, clock = rater(RaterState.GAME), Clock()
    served, first = rate_next(user, 4, clock)
    second = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=1, now=clock.tick(10))
    assert not first.already_rated
    assert second == replace(first, already_rated=True)  # the 1 is not taken, and the answer says so
    assert (second.value, second.points) == (4, 2)
    assert Rating.objects.count() == 1
    pair.refresh_from_db()
    assert pair.human_count == 1
    profile = RaterProfile.objects.get(user=user)
    assert (profile.game_score, profile.window_count) == (2, 1)
    assert game.feedback_for(rater=user, assignment_id=served.assignment_id) == first


def test_the_last_tutorial_rating_submitted_again_after_the_stage_changed_shows_the_first_result():
    tutorial_pairs([3])
    user, clock = rater(), Clock()
    served, first = rate_next(user, 3, clock)
    assert first.transition == "tutorial_passed"
    again = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3, now=clock.now)
    assert again == replace(first, already_rated=True)


def test_someone_elses_assignment_is_refused():
    game_pairs(1)
    owner, intruder = rater(RaterState.GAME), rater(RaterState.GAME)
    served = game.pair_serve(rater=owner, now=T0)
    refusal = rejected(
        lambda: game.rating_submit(
            rater=intruder, assignment_id=served.assignment_id, value=3, now=T0 + timedelta(seconds=5)
        )
    )
    assert (refusal.code, refusal.status) == ("not_yours", 403)
    assert rejected(lambda: game.feedback_for(rater=intruder, assignment_id=served.assignment_id)).code == "not_yours"
    missing = rejected(lambda: game.rating_submit(rater=owner, assignment_id=999_999, value=3, now=T0))
    assert (missing.code, missing.status) == ("not_found", 404)
    assert not Rating.objects.exists()


def test_an_expired_assignment_is_refused():
    game_pairs(1)
    user = rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=T0)
    assert served.expires_at == T0 + timedelta(seconds=1800)
    late = rejected(
        lambda: game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3, now=served.expires_at)
    )
    assert (late.code, late.status) == ("expired", 400)
    assert not Rating.objects.exists()


@pytest.mark.parametrize("value", ["3.5", "x", "", " 3", "6", 0, 6, -1, None, True, False, 3.0, 3.5, [3], {"v": 3}])
def test_a_value_that_is_not_a_whole_number_1_to_5_is_refused_and_changes_nothing(value):
    (pair,) = game_pairs(1, primes=[4.0, 4.0])
    user = rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=T0)
    refusal = rejected(
        lambda: game.rating_submit(
            rater=user, assignment_id=served.assignment_id, value=value, now=T0 + timedelta(seconds=5)
        )
    )
    assert (refusal.code, refusal.status) == ("invalid_value", 400)
    assert not Rating.objects.exists()
    assert Assignment.objects.get(pk=served.assignment_id).submitted_at is None
    pair.refresh_from_db()
    assert (pair.human_count, pair.in_flight) == (0, 1)
    profile = RaterProfile.objects.get(user=user)
    assert (profile.game_score, profile.window_count) == (0, 0)


@pytest.mark.parametrize(("value", "stored"), [("4", 4), (4, 4), ("1", 1), (5, 5)])
def test_whole_numbers_and_their_form_text_are_accepted(value, stored):
    game_pairs(1)
    user, clock = rater(RaterState.GAME), Clock()
    _, feedback = rate_next(user, value, clock)
    assert feedback.value == stored == Rating.objects.get().value


def test_suspended_rater_can_neither_be_served_nor_submit():
    game_pairs(1)
    user = rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=T0)
    RaterProfile.objects.filter(user=user).update(state=RaterState.SUSPENDED)
    for call in (
        lambda: game.pair_serve(rater=user, now=T0),
        lambda: game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3, now=T0 + timedelta(5)),
    ):
        refusal = rejected(call)
        assert (refusal.code, refusal.status) == ("suspended", 403)
    assert not Rating.objects.exists()


def test_no_pair_before_consent():
    tutorial_pairs(EXPERTS)
    user = rater(consent_at=None)
    refusal = rejected(lambda: game.pair_serve(rater=user, now=T0))
    assert (refusal.code, refusal.status) == ("no_consent", 403)


def test_a_tutorial_assignment_submitted_after_leaving_the_tutorial_is_the_wrong_stage():
    tutorial_pairs(EXPERTS)
    user = rater()
    served = game.pair_serve(rater=user, now=T0)
    RaterProfile.objects.filter(user=user).update(state=RaterState.GAME)
    refusal = rejected(
        lambda: game.rating_submit(
            rater=user, assignment_id=served.assignment_id, value=3, now=T0 + timedelta(seconds=5)
        )
    )
    assert (refusal.code, refusal.status) == ("wrong_stage", 403)


def test_a_client_sent_served_time_is_ignored(settings):
    """Through the JSON API: a forged served_at an hour back does not get round the 3 seconds."""
    game_pairs(1)
    user = rater(RaterState.GAME)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    served = client.post("/api/game/next", format="json").json()
    forged = (T0 - timedelta(hours=1)).isoformat()
    response = client.post(
        "/api/game/submit",
        {"assignment_id": served["assignment_id"], "value": 3, "served_at": forged, "seconds_spent": 3600},
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "too_early"
    assert not Rating.objects.exists()


def test_api_session_requests_need_the_csrf_token():
    game_pairs(1)
    user = rater(RaterState.GAME)
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post("/api/game/next", format="json").status_code == 403
    assert not Assignment.objects.exists()


def test_stored_aggregates_equal_a_recomputation_after_a_mixed_session():
    pairs = game_pairs(4, primes=[3.0, 2.0])
    seed_ratings(pairs[3], [1, 5, 2])
    clock = Clock()
    for value in (1, 2, 3, 4, 5, 5, 4):
        rate_next(rater(RaterState.GAME), value, clock)
    for pair in CaptionPair.objects.filter(pk__in=[pair.pk for pair in pairs]):
        assert (pair.human_count, pair.human_sum, pair.human_sumsq) == tuple(pair_aggregates_recompute(pair))
    assert_pairs_consistent()


# --- A rating costs O(1) -------------------------------------------------------------------


@pytest.mark.usefixtures("unanimous_policy")  # six ratings that disagree keep a slot open
def test_a_game_rating_costs_the_same_queries_however_many_ratings_exist():
    """The pair's aggregates are updated in place: neither the number of queries nor their kind
    depends on how many ratings the pair (or the whole game) holds, and none re-reads them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    few, many = game_pairs(2)
    seed_ratings(few, [4, 4])
    seed_ratings(many, [1, 2, 3, 4, 5, 3])  # 6 that disagree: one more slot
    user = rater(RaterState.GAME, window_count=20, window_points=40, game_score=40)  # past the window
    clock = Clock()

    def submit_queries() -> list[str]:
        served = game.pair_serve(rater=user, now=clock.now)
        clock.tick(5)
        with CaptureQueriesContext(connection) as captured:
            game.rating_submit(rater=user, assignment_id=served.assignment_id, value=4, now=clock.now)
        return served.pair_id, [query["sql"] for query in captured.captured_queries]

    first_pair, on_few = submit_queries()  # 2 ratings before: served first (near the minimum)
    second_pair, on_many = submit_queries()  # 6 ratings before
    assert (first_pair, second_pair) == (few.pk, many.pk)
    assert len(on_few) == len(on_many)
    rating_table = Rating._meta.db_table
    for sql in on_few + on_many:
        upper = sql.upper()
        if rating_table.upper() in upper:
            assert not any(f in upper for f in ("SUM(", "COUNT(", "AVG(")), sql
    assert_pairs_consistent()
