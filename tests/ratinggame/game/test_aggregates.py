"""A pair's stored aggregates stay equal to its rows on every path that writes (issue 15, part 1).

The Django admin cannot change, exclude, add or delete a rating or an assignment (it would move
a pair's consensus without the pair's lock and without an audit entry); ``check_aggregates``
(command and periodic task) finds a drift made around the services, names it, and repairs it.
"""

import logging
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotators.models import RaterState
from ratinggame import game
from ratinggame.models import Assignment, CaptionPair, Rating
from tests.ratinggame.journey_helpers import T0, assert_pairs_consistent, game_pairs, rater, seed_ratings

pytestmark = pytest.mark.django_db


@pytest.fixture
def rated_pair(settings):
    """A game pair with three human ratings (3, 4, 4) stored through the game."""
    settings.RATINGGAME = {**settings.RATINGGAME, "MIN_SECONDS_PER_RATING": 0}
    (pair,) = game_pairs(1)
    for value in (3, 4, 4):
        user = rater(RaterState.GAME)
        served = game.pair_serve(rater=user, now=T0)
        game.rating_submit(rater=user, assignment_id=served.assignment_id, value=value, now=T0 + timedelta(seconds=5))
    pair.refresh_from_db()
    assert (pair.human_count, pair.human_sum, pair.human_sumsq) == (3, 11, 41)
    return pair


def counters(pair: CaptionPair) -> tuple:
    pair.refresh_from_db()
    return (pair.human_count, pair.human_sum, pair.human_sumsq, pair.in_flight, pair.assign_rank)


def test_the_admin_can_neither_change_exclude_add_nor_delete_a_rating(staff_client, rated_pair):
    rating = Rating.objects.filter(pair=rated_pair).first()
    kept = (rating.value, rating.excluded, rating.served_at, rating.submitted_at)
    before = counters(rated_pair)
    change = reverse("admin:ratinggame_rating_change", args=[rating.pk])
    page = staff_client.get(change)
    assert page.status_code == 200 and 'name="value"' not in page.content.decode()  # shown, not editable

    edit = {
        "assignment": rating.assignment_id,
        "pair": rated_pair.pk,
        "rater": rating.rater_id,
        "stage": "game",
        "value": 1,
        "served_at_0": "2030-01-01",
        "served_at_1": "12:00:00",
        "submitted_at_0": "2030-01-01",
        "submitted_at_1": "12:00:05",
        "points": 2,
        "excluded": "on",
        "feedback": "{}",
    }
    assert staff_client.post(change, edit).status_code == 403
    assert (
        staff_client.post(reverse("admin:ratinggame_rating_delete", args=[rating.pk]), {"post": "yes"}).status_code
        == 403
    )
    assert staff_client.post(reverse("admin:ratinggame_rating_add"), edit).status_code == 403
    changelist = reverse("admin:ratinggame_rating_changelist")
    staff_client.post(changelist, {"action": "delete_selected", "_selected_action": [rating.pk], "post": "yes"})

    rating.refresh_from_db()
    assert (rating.value, rating.excluded, rating.served_at, rating.submitted_at) == kept
    assert Rating.objects.filter(pair=rated_pair).count() == 3
    assert counters(rated_pair) == before
    assert_pairs_consistent()


def test_the_admin_cannot_close_or_delete_an_open_assignment(staff_client, settings):
    (pair,) = game_pairs(1)
    served = game.pair_serve(rater=rater(RaterState.GAME), now=T0)
    before = counters(pair)
    delete = reverse("admin:ratinggame_assignment_delete", args=[served.assignment_id])
    assert staff_client.post(delete, {"post": "yes"}).status_code == 403
    assert Assignment.objects.filter(pk=served.assignment_id, holds_slot=True).exists()
    assert counters(pair) == before == (0, 0, 0, 1, before[4])


def test_a_rater_holding_a_slot_cannot_be_deleted_with_it(staff_client):
    game_pairs(1)
    user = rater(RaterState.GAME)
    game.pair_serve(rater=user, now=T0)
    page = staff_client.post(reverse("admin:auth_user_delete", args=[user.pk]), {"post": "yes"})
    assert page.status_code == 200 and "cannot delete" in page.content.decode().lower()
    assert Assignment.objects.filter(rater=user, holds_slot=True).exists()
    assert_pairs_consistent()


def drift(pair: CaptionPair) -> None:
    """Rows changed around the services (an edit in a database shell, say): a rating changed, one
    excluded, one deleted."""
    first, second, third = Rating.objects.filter(pair=pair).order_by("id")
    Rating.objects.filter(pk=first.pk).update(value=1)
    Rating.objects.filter(pk=second.pk).update(excluded=True)
    Assignment.objects.filter(pk=third.assignment_id).update(holds_slot=True)


def test_check_aggregates_reports_a_drift_and_repairs_it(rated_pair):
    seed_ratings(game_pairs(1)[0], [2, 5])  # a pair in step, never reported
    drift(rated_pair)
    stale = counters(rated_pair)

    with pytest.raises(CommandError, match="1 pair"):
        call_command("check_aggregates")
    assert counters(rated_pair) == stale  # reported, not changed

    from io import StringIO

    out = StringIO()
    call_command("check_aggregates", "--repair", stdout=out)
    report = out.getvalue()
    assert (
        f"pair {rated_pair.pk}:" in report and "human_count 3 (rows: 2)" in report and "in_flight 0 (rows: 1)" in report
    )
    # The first rating is now 1 and the second excluded: 1 and 4 count; the third assignment holds a slot.
    assert counters(rated_pair)[:4] == (2, 5, 17, 1)
    assert_pairs_consistent()
    call_command("check_aggregates")  # nothing left to report


def test_the_periodic_task_repairs_and_logs_each_drift(rated_pair, caplog):
    from ratinggame.tasks import check_aggregates

    drift(rated_pair)
    with caplog.at_level(logging.ERROR, logger="ratinggame.tasks"):
        assert check_aggregates.apply().get() == 1
    assert f"pair {rated_pair.pk}" in caplog.text
    assert_pairs_consistent()
    assert check_aggregates.apply().get() == 0
