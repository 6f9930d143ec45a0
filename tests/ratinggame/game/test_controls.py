"""Control pairs in the game and the drift rule (SPEC 2.5), through the game's services."""

from datetime import timedelta

import pytest

from annotators import journey
from annotators.journey import DRIFT_REASON
from annotators.models import ProbationRound, RaterAction, RaterProfile, RaterState
from ratinggame import game
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from scoring.consensus import player_score
from scoring.export.data import export_data_collect
from tests.factories import ControlPairFactory, ImageFactory
from tests.ratinggame.journey_helpers import (
    Clock,
    assert_pairs_consistent,
    game_pairs,
    rate_next,
    rater,
)

pytestmark = pytest.mark.django_db

PAST_THE_WINDOW = {"window_count": 20, "window_points": 40}


@pytest.fixture(autouse=True)
def _settings(settings, three_second_rules):
    settings.RATINGGAME = {
        **settings.RATINGGAME,
        "CONTROL_EVERY": 10,
        "DRIFT_WINDOW": 15,
        "DRIFT_THRESHOLD": 1.1,
    }


def control_pairs(levels=(1, 2, 3, 4, 5), images: int = 1) -> list[CaptionPair]:
    """Control pairs with these expert ratings, on ``images`` images (round robin)."""
    pictures = [ImageFactory() for _ in range(images)]
    return [ControlPairFactory(image=pictures[i % images], expert_rating=level) for i, level in enumerate(levels)]


def by_expert(pair: CaptionPair) -> int:
    return pair.expert_rating or 3


def test_one_control_in_every_block_of_ten_at_a_place_drawn_per_rater(settings):
    game_pairs(80, primes=[3.0, 3.0])
    controls = {pair.pk for pair in control_pairs((1, 2, 3, 4, 5) * 2, images=5)}
    places = {}
    for seed in (11, 12):
        user, clock = rater(RaterState.GAME, order_seed=seed, **PAST_THE_WINDOW), Clock()
        served = [rate_next(user, by_expert, clock)[0] for _ in range(40)]
        control_at = [index for index, s in enumerate(served) if s.pair_id in controls]
        # One in every block of ten, where the rater's seed puts it, and nowhere else.
        assert [index // 10 for index in control_at] == [0, 1, 2, 3]
        assert control_at == [serve for serve in range(40) if journey.control_due(seed, serve)]
        # To the rater a control is a game pair like the others.
        assert {s.stage for s in served} == {"game"}
        places[seed] = [index % 10 for index in control_at]
    assert places[11] != places[12]


@pytest.mark.parametrize(("value", "points"), [(4, 2), (3, 0), (5, 0), (2, -1), (1, -2)])
def test_a_control_is_scored_by_algorithm_1_against_its_expert_rating(settings, value, points):
    """SPEC 2.5: prev = [expert, expert] (n = 3, v = 4/3): matching 2, one off 0, two off -1, more -2."""
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 1}
    (control,) = control_pairs((4,))
    user, clock = rater(RaterState.GAME, game_score=10, **PAST_THE_WINDOW), Clock()
    served, feedback = rate_next(user, value, clock)
    assert served.pair_id == control.pk
    assert points == player_score(value, [4, 4])
    assert (feedback.stage, feedback.reference, feedback.points, feedback.first_rater) == ("game", 4, points, False)
    assert feedback.explanation == ""
    rating = Rating.objects.get(pk=feedback.rating_id)
    assert (rating.stage, rating.reference) == (Pool.CONTROL, 4)
    # Its points count in the game score; the control pair has no consensus and holds no slot.
    assert RaterProfile.objects.get(user=user).game_score == 10 + points
    control.refresh_from_db()
    assert (control.human_count, control.in_flight) == (0, 0)


def test_a_rater_meets_each_control_once_before_any_repeats_then_the_least_recently_seen(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 1}
    controls = control_pairs((1, 2, 3, 4, 5), images=5)
    user, clock = rater(RaterState.GAME, order_seed=12345, **PAST_THE_WINDOW), Clock()
    served = [rate_next(user, 3, clock)[0].pair_id for _ in range(12)]
    assert sorted(served[:5]) == sorted(pair.pk for pair in controls)
    assert served[5:10] == served[:5]  # then the one seen longest ago, each time
    assert served[10:12] == served[:2]
    # Raters meet the never-seen controls in orders of their own. Two raters' orders of 5 controls
    # are the same by chance once in 120 (the pairs' ids, which the order draws on, vary from run to
    # run: one other rater made this test fail about once in 120 runs); four raters all alike,
    # once in 120**3.
    orders = {tuple(served[:5])}
    for seed in (98765, 55555, 31337):
        other, clock = rater(RaterState.GAME, order_seed=seed, **PAST_THE_WINDOW), Clock()
        orders.add(tuple(rate_next(other, 3, clock)[0].pair_id for _ in range(5)))
    assert len(orders) > 1, orders


def test_control_ratings_never_count_toward_a_consensus_a_cap_or_the_dataset(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 1}
    (control,) = control_pairs((2,))
    for _ in range(8):  # more raters than any game pair's cap
        rate_next(rater(RaterState.GAME, **PAST_THE_WINDOW), 2, Clock())
    assert Rating.objects.filter(pair=control).count() == 8
    assert not Rating.objects.counted().exists()
    assert not CaptionPair.objects.validated().exists()
    data = export_data_collect(min_ratings=1)
    assert (data.pairs, data.ratings) == ([], [])
    assert [(c.pair_id, c.expert_rating, c.value, c.agreement) for c in data.control_ratings] == [
        (control.pk, 2, 2, 2)
    ] * 8


def test_drift_sends_a_straight_liner_back_and_excludes_what_they_rated_since_the_window_began(settings):
    """Window of 5 control ratings, threshold 1.1; controls every other serve; the rater answers 3
    everywhere. Three controls rated 3 by the experts come first (agreement 2 each), then controls
    rated 1 and 5 (agreement 0): the means of the latest five are 1.2, then 0.8, which sends the
    rater back. The window then began at the second control."""
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 2, "DRIFT_WINDOW": 5}
    game_pairs(30, primes=[3.0, 3.0])
    control_pairs((3, 3, 3), images=3)
    user, clock = rater(RaterState.GAME, game_score=50, **PAST_THE_WINDOW), Clock()
    feedbacks = [rate_next(user, 3, clock)[1] for _ in range(6)]  # the three good controls are met
    control_pairs((1, 5, 1, 5, 1, 5), images=3)  # never met yet, so they come next
    while feedbacks[-1].transition != "drift":
        assert len(feedbacks) < 30, "the drift rule never acted"
        feedbacks.append(rate_next(user, 3, clock)[1])
    controls = list(Rating.objects.filter(rater=user, stage=Pool.CONTROL).order_by("id"))
    assert [journey.control_agreement(r.value, r.reference) for r in controls] == [2, 2, 2, 0, 0, 0]
    first_of_window = controls[1]
    # Back to probation with a new round and a reset score, in the feedback and the staff log.
    profile = RaterProfile.objects.get(user=user)
    assert (profile.state, profile.game_score, feedbacks[-1].stage_total) == (RaterState.PROBATION, 0, 0)
    assert ProbationRound.objects.filter(profile=profile, finished_at__isnull=True).exists()
    (action,) = RaterAction.objects.filter(rater=profile)
    assert (action.action, action.actor, action.from_state, action.to_state) == ("drift", None, "game", "probation")
    # Every game rating since the first control of the window is excluded, with the reason;
    # the ones before it still count.
    ratings = Rating.objects.filter(rater=user).order_by("id")
    since = [r for r in ratings if r.submitted_at >= first_of_window.submitted_at]
    before = [r for r in ratings if r.submitted_at < first_of_window.submitted_at]
    assert len(since) >= 8 and len(before) >= 2  # five controls and the game ratings between them
    assert {(r.excluded, r.excluded_reason) for r in since} == {(True, DRIFT_REASON)}
    assert not any(r.excluded for r in before)
    assert_pairs_consistent()
    # On probation now: what is served next is a probation pair (none exist here: nothing).
    assert game.pair_serve(rater=user, now=clock.now) is None


def test_drift_waits_for_the_end_of_the_qualification_window(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 1, "DRIFT_WINDOW": 3}
    control_pairs((1, 5, 1, 5, 1), images=5)
    user, clock = rater(RaterState.GAME, window_count=0, window_points=0), Clock()
    transitions = [rate_next(user, 3, clock)[1].transition for _ in range(5)]
    assert transitions == [None] * 5  # three bad controls, but the window (20 ratings) is still open


def test_a_careful_rater_is_not_sent_back(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 1, "DRIFT_WINDOW": 3}
    control_pairs((1, 2, 3, 4, 5), images=5)
    user, clock = rater(RaterState.GAME, **PAST_THE_WINDOW), Clock()
    feedbacks = [rate_next(user, by_expert, clock)[1] for _ in range(10)]
    assert {f.transition for f in feedbacks} == {None}
    assert RaterProfile.objects.get(user=user).state == RaterState.GAME


def test_a_failed_window_excludes_its_control_ratings_too_and_is_logged(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 2}
    game_pairs(30, primes=[1.0, 1.0])
    control_pairs((1, 1, 1, 1, 1, 1, 1, 1, 1, 1), images=5)
    user, clock = rater(RaterState.GAME, window_count=0, window_points=0), Clock()
    feedbacks = [rate_next(user, 5, clock)[1] for _ in range(20)]
    assert feedbacks[-1].transition == "window_failed"
    ratings = Rating.objects.filter(rater=user)
    assert ratings.filter(stage=Pool.CONTROL).count() == 10
    assert set(ratings.values_list("excluded", flat=True)) == {True}
    assert RaterAction.objects.get().action == "window_failed"
    assert_pairs_consistent()


def test_an_abandoned_control_expires_without_holding_anything(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "CONTROL_EVERY": 1, "ASSIGNMENT_EXPIRY_SECONDS": 60}
    control_pairs((3, 4))
    user, clock = rater(RaterState.GAME, **PAST_THE_WINDOW), Clock()
    first = game.pair_serve(rater=user, now=clock.now)
    later = game.pair_serve(rater=user, now=clock.now + timedelta(seconds=61))
    assert later.assignment_id != first.assignment_id
    assert not Assignment.objects.filter(holds_slot=True).exists()


def test_the_drift_rules_sql_and_the_staff_figures_read_the_one_definition_of_counted_control_ratings(settings):
    """The game reads a rater's counted control ratings in SQL, with every rating's assignment
    (``sql.assignment_with_pair``), the staff figures and the export through
    ``counted_control_ratings``: the same ratings, for ratings before and after the rater's entry to
    the game, excluded or not."""
    from annotators.competency.flags import control_agreements
    from ratinggame.game.gateway import assignment_read
    from ratinggame.game.sql import rater_controls_read
    from ratinggame.models import SINCE_GAME_ENTRY, counted_control_ratings

    entered = Clock().now
    user = rater(RaterState.GAME, game_entered_at=entered)
    pairs = control_pairs(images=2)
    assignment = _hourly_control_ratings(user, pairs, entered)
    fields = ("submitted_at", "value", "reference")
    counted = Rating.objects.filter(rater=user).counted_controls(since=entered).order_by("-submitted_at", "-id")

    read, _pair, _rating = assignment_read(assignment.pk, lock=False)
    assert rater_controls_read(read.rater_controls) == list(counted.values_list(*fields))  # 13, under 14
    settings.RATINGGAME = {**settings.RATINGGAME, "DRIFT_WINDOW": 5}
    read, _pair, _rating = assignment_read(assignment.pk, lock=False)
    assert rater_controls_read(read.rater_controls) == list(counted.values_list(*fields)[:4])
    assert counted.count() == 13  # the 16 since the entry, less the 3 excluded
    assert Rating.objects.filter(counted_control_ratings(SINCE_GAME_ENTRY)).count() == counted.count()
    window = journey.drift_window()
    assert control_agreements([user.rater])[user.pk][2] == min(counted.count(), window)

    # A rater with no entry to the game (moved there by staff before it was recorded): since their
    # sign-up, in the SQL and in the definition alike.
    signed_up = rater(RaterState.GAME, game_entered_at=None)
    RaterProfile.objects.filter(user=signed_up).update(created_at=entered)
    assignment = _hourly_control_ratings(signed_up, pairs, entered)
    since_sign_up = Rating.objects.filter(rater=signed_up).counted_controls(since=entered)
    read, _pair, _rating = assignment_read(assignment.pk, lock=False)
    assert rater_controls_read(read.rater_controls) == list(
        since_sign_up.order_by("-submitted_at", "-id").values_list(*fields)[:4]
    )
    assert Rating.objects.filter(counted_control_ratings(SINCE_GAME_ENTRY), rater=signed_up).count() == 13
    assert control_agreements([signed_up.rater])[signed_up.pk][2] == min(13, window)


def _hourly_control_ratings(user, pairs, entered) -> Assignment:
    """24 control ratings of ``user``'s, one an hour from 8 hours before ``entered`` on, every fifth
    excluded (16 since ``entered``, 13 of them counted); the last one's assignment."""
    for index in range(24):
        at = entered + timedelta(hours=index - 8, microseconds=index * 1001)  # the text keeps microseconds
        pair = pairs[index % len(pairs)]
        assignment = Assignment.objects.create(
            rater=user, pair=pair, stage=Pool.CONTROL, served_at=at, expires_at=at, submitted_at=at
        )
        Rating.objects.create(
            assignment=assignment,
            pair=pair,
            rater=user,
            stage=Pool.CONTROL,
            value=1 + index % 5,
            served_at=at,
            submitted_at=at,
            reference=pair.expert_rating,
            excluded=index % 5 == 0,
        )
    return assignment
