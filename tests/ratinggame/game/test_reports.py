"""Reporting a pair: in the game it is skipped (no rating, its slot given back); enough reports take
a game pair out of play until staff answer; skips are limited per hour; teaching pairs are
reported but never skipped or taken out."""

import pytest

from annotators.models import RaterState
from ratinggame import game
from ratinggame.game.reports import ReportRefused, pair_report, reports_resolve
from ratinggame.models import Assignment, CaptionPair, PairReport, Rating, ReportReason
from tests.factories import UserFactory
from tests.ratinggame.journey_helpers import (
    T0,
    Clock,
    assert_pairs_consistent,
    game_pairs,
    rate_next,
    rater,
    tutorial_pairs,
)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _rules(settings, three_second_rules):
    settings.RATINGGAME = {
        **settings.RATINGGAME,
        "REPORTS_TO_WITHDRAW": 2,
        "SKIPS_PER_HOUR": 3,
    }


def report_served(user, reason=ReportReason.BROKEN_IMAGE, text="", now=T0):
    served = game.pair_serve(rater=user, now=now)
    return served, pair_report(rater=user, assignment_id=served.assignment_id, reason=reason, text=text, now=now)


def test_a_game_report_skips_the_pair_without_a_rating_and_gives_its_slot_back():
    pairs = game_pairs(2)
    user = rater(RaterState.GAME)
    served, reported = report_served(user, ReportReason.OFFENSIVE)
    (other,) = [pair for pair in pairs if pair.pk != served.pair_id]
    assert (reported.skipped, reported.withdrawn, reported.skips_left) == (True, False, 2)
    assert not Rating.objects.exists()
    assert CaptionPair.objects.get(pk=served.pair_id).in_flight == 0
    assert_pairs_consistent()
    # The next serve is another pair, and the skipped one never comes back to this rater.
    assert game.pair_serve(rater=user, now=T0).pair_id == other.pk
    rate_next(user, 3, Clock(T0))
    assert game.pair_serve(rater=user, now=T0) is None
    # It still counts nothing toward the rater's game: no rating, no window step.
    assert user.rater.window_count == 0


def test_enough_reports_take_a_game_pair_out_of_play_until_staff_put_it_back():
    (pair,) = game_pairs(1)
    staff = UserFactory(is_staff=True)
    for _ in range(2):
        _, reported = report_served(rater(RaterState.GAME))
    assert reported.withdrawn
    pair.refresh_from_db()
    assert pair.withdrawn_at is not None and pair.assign_rank is None
    assert game.pair_serve(rater=rater(RaterState.GAME), now=T0) is None
    assert_pairs_consistent()

    with pytest.raises(ReportRefused):
        reports_resolve(pair=pair, actor=staff, back_in_play=True, note="   ")
    assert reports_resolve(pair=pair, actor=staff, back_in_play=True, note="The image loads fine.") == 2
    pair.refresh_from_db()
    assert pair.withdrawn_at is None and pair.assign_rank is not None
    assert game.pair_serve(rater=rater(RaterState.GAME), now=T0).pair_id == pair.pk
    assert set(PairReport.objects.values_list("outcome", "resolved_by")) == {("back_in_play", staff.pk)}


def test_staff_can_keep_a_reported_pair_out_of_play():
    (pair,) = game_pairs(1)
    report_served(rater(RaterState.GAME))  # one report: still in play
    assert CaptionPair.objects.get(pk=pair.pk).withdrawn_at is None
    reports_resolve(pair=pair, actor=UserFactory(is_staff=True), back_in_play=False, note="Offensive caption.")
    assert game.pair_serve(rater=rater(RaterState.GAME), now=T0) is None
    with pytest.raises(ReportRefused, match="no open report"):
        reports_resolve(pair=pair, actor=UserFactory(is_staff=True), back_in_play=True, note="again")


def test_a_withdrawn_pair_is_no_drift_and_the_periodic_repair_keeps_it_out_of_play():
    from ratinggame.game.aggregates import pairs_aggregates_check

    (pair,) = game_pairs(1)
    for _ in range(2):
        report_served(rater(RaterState.GAME))
    assert CaptionPair.objects.get(pk=pair.pk).withdrawn_at is not None
    # Out of the serving order because it was withdrawn, not because its counters drifted.
    assert pairs_aggregates_check(repair=True) == []
    assert CaptionPair.objects.get(pk=pair.pk).assign_rank is None
    assert game.pair_serve(rater=rater(RaterState.GAME), now=T0) is None


def test_skips_are_limited_per_hour_and_the_report_is_kept_past_the_limit():
    game_pairs(5)
    user = rater(RaterState.GAME)
    for _ in range(3):
        assert report_served(user)[1].skipped
    served, reported = report_served(user)
    assert (reported.skipped, reported.skips_left) == (False, 0)
    # The report is filed, and the pair stays open for the rater to rate.
    assert PairReport.objects.filter(rater=user).count() == 4
    assert Assignment.objects.get(pk=served.assignment_id).holds_slot
    assert game.pair_serve(rater=user, now=T0).assignment_id == served.assignment_id


def test_teaching_pairs_are_reported_but_never_skipped_nor_taken_out():
    (pair,) = tutorial_pairs([3])
    for _ in range(3):
        served, reported = report_served(rater(RaterState.TUTORIAL))
        assert (reported.skipped, reported.withdrawn) == (False, False)
        assert Assignment.objects.get(pk=served.assignment_id).submitted_at is None
    assert CaptionPair.objects.get(pk=pair.pk).withdrawn_at is None


@pytest.mark.parametrize(
    ("reason", "text", "message"),
    [
        ("nonsense", "", "Choose what is wrong"),
        (ReportReason.OTHER, "  ", "Say in a few words"),
        (ReportReason.OTHER, "x" * 1001, "under 1000 characters"),
    ],
)
def test_a_report_without_a_clear_reason_is_refused_and_changes_nothing(reason, text, message):
    game_pairs(1)
    user = rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=T0)
    with pytest.raises(ReportRefused, match=message):
        pair_report(rater=user, assignment_id=served.assignment_id, reason=reason, text=text, now=T0)
    assert not PairReport.objects.exists()
    assert Assignment.objects.get(pk=served.assignment_id).holds_slot


def test_only_an_open_assignment_of_ones_own_can_be_reported_and_only_once():
    game_pairs(2)
    user, other = rater(RaterState.GAME), rater(RaterState.GAME)
    served = game.pair_serve(rater=user, now=T0)
    with pytest.raises(ReportRefused, match="no longer open"):
        pair_report(rater=other, assignment_id=served.assignment_id, reason=ReportReason.BROKEN_IMAGE, now=T0)
    pair_report(rater=user, assignment_id=served.assignment_id, reason=ReportReason.BROKEN_IMAGE, now=T0)
    with pytest.raises(ReportRefused, match="no longer open"):
        pair_report(rater=user, assignment_id=served.assignment_id, reason=ReportReason.BROKEN_IMAGE, now=T0)
    assert PairReport.objects.count() == 1
