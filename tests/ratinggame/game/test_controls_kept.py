"""A control pair cannot be skipped or reported away, and says after rating what a game pair says
(issue 35, item 2; SPEC 2.5): a skipped or reported control is answered as a game pair is, and
another control comes within the next block's length of serves; a control's feedback names its
consensus in the words a game pair's feedback uses."""

import pytest

from annotators.journey import control_due, control_owed_after, control_owed_serve
from annotators.models import RaterProfile, RaterState
from ratinggame import game
from ratinggame.game.reports import pair_report
from ratinggame.models import Assignment, Pool, ReportReason
from tests.factories import ControlPairFactory
from tests.ratinggame.journey_helpers import T0, Clock, game_pairs, rater

pytestmark = pytest.mark.django_db

EVERY = 10


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0.0, "CONTROL_EVERY": EVERY}


def _stage(served) -> str:
    return str(Assignment.objects.get(pk=served.assignment_id).stage)


def _serve_until_control(user, clock: Clock, limit: int = 3 * EVERY):
    """Rate game pairs until a control is served (returned unrated), at most ``limit`` serves."""
    for _ in range(limit):
        served = game.pair_serve(rater=user, now=clock.now)
        if _stage(served) == Pool.CONTROL:
            return served
        game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3, now=clock.tick(1))
    raise AssertionError("no control served")


def _serves_to_next_control(user, clock: Clock) -> int:
    for count in range(1, 3 * EVERY):
        served = game.pair_serve(rater=user, now=clock.tick(1))
        if _stage(served) == Pool.CONTROL:
            return count
        game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3, now=clock.tick(1))
    raise AssertionError("no control served")


@pytest.mark.parametrize("how", ["skip", "report"])
def test_a_control_skipped_or_reported_is_answered_as_a_game_pair_and_another_comes_soon(how):
    """For eight raters (eight seeds): without the owed control, the next one comes in the next
    block, more than a block's length later for about half of them."""
    game_pairs(5 * EVERY * 8, primes=[3.0, 3.0])
    for expert in (1, 2, 3, 4, 5):
        ControlPairFactory(expert_rating=expert)
    for _ in range(8):
        user, clock = rater(RaterState.GAME, game_serves=40, window_count=20, window_points=40), Clock(T0)
        control = _serve_until_control(user, clock)
        if how == "skip":
            skipped = game.pair_skip(rater=user, assignment_id=control.assignment_id, now=clock.tick(1))
            assert skipped.assignment_id == control.assignment_id
        else:
            reported = pair_report(
                rater=user,
                assignment_id=control.assignment_id,
                reason=ReportReason.OTHER,
                text="odd",
                now=clock.tick(1),
            )
            assert reported.skipped  # "reported and skipped", as a game pair's report says
        closed = Assignment.objects.get(pk=control.assignment_id)
        assert (closed.expires_at <= clock.now and not hasattr(closed, "rating_id")) or closed.submitted_at is None
        assert _serves_to_next_control(user, clock) <= EVERY


def test_the_owed_control_is_drawn_among_the_next_serves_and_one_serve_takes_one_check():
    seed = 12345
    draws = {control_owed_serve(seed + k, 40) for k in range(200)}
    assert draws == set(range(40, 40 + EVERY))  # every place of the next block's length, none before
    assert control_owed_after(seed, 45, owed_at=47, owed=1) == (47, 1)  # the block's own came first: still owed
    owed_at, owed = control_owed_after(seed, 47, owed_at=47, owed=2)
    assert owed in (1, 2) and owed_at in range(48, 48 + EVERY)  # one taken (2 left if 47 was the block's own)
    assert control_owed_after(seed, 50, owed_at=None, owed=0) == (None, 0)


def test_an_owed_control_on_the_first_serve_is_taken_and_reads_as_a_game_pair():
    ControlPairFactory(expert_rating=4)
    game_pairs(2, primes=[3.0, 3.0])
    user = rater(RaterState.GAME, window_count=20, window_points=40)
    RaterProfile.objects.filter(user=user).update(control_owed_at=0, controls_owed=1)  # the first serve: a control
    served = game.pair_serve(rater=user, now=T0)
    assert _stage(served) == Pool.CONTROL and served.stage == Pool.GAME
    feedback = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=4, now=T0)
    assert (feedback.stage, feedback.reference, feedback.points, feedback.first_rater) == (Pool.GAME, 4, 2, False)
    profile = RaterProfile.objects.get(user=user)
    # The owed one taken, unless serve 0 was also the block's own check (then it is still owed).
    assert profile.controls_owed == (1 if control_due(profile.order_seed, 0) else 0)


def test_every_skipped_control_is_replaced():
    """Two controls skipped in a row: when the second was the block's own (served before the owed
    one), two are owed (the audit's case: the second skip overwrote the first's); when it was the
    owed one, one. Either way every owed control comes."""
    game_pairs(6 * EVERY, primes=[3.0, 3.0])
    for expert in (1, 2, 3, 4, 5):
        ControlPairFactory(expert_rating=expert)
    user, clock = rater(RaterState.GAME, game_serves=40, window_count=20, window_points=40), Clock(T0)
    for _ in range(2):
        control = _serve_until_control(user, clock)
        game.pair_skip(rater=user, assignment_id=control.assignment_id, now=clock.tick(1))
    owed_now = RaterProfile.objects.get(user=user).controls_owed
    assert owed_now in (1, 2)
    served_controls = 0
    for _ in range(4 * EVERY):
        served = game.pair_serve(rater=user, now=clock.tick(1))
        served_controls += _stage(served) == Pool.CONTROL
        game.rating_submit(rater=user, assignment_id=served.assignment_id, value=3, now=clock.tick(1))
        if RaterProfile.objects.get(user=user).controls_owed == 0:
            break
    assert RaterProfile.objects.get(user=user).controls_owed == 0 and served_controls >= owed_now
