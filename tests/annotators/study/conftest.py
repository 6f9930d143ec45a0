"""Fixtures of the study tests: the pay rates and the worked example of a day's crowd (issue 20)."""

from decimal import Decimal

import pytest

from ratinggame.game.aggregates import pair_aggregates_recompute
from ratinggame.game.withdrawal import rater_withdraw
from ratinggame.models import Pool
from tests.annotators.study.pay_world import came_from_prolific, rate
from tests.ratinggame.api_helpers import admin, annotator


@pytest.fixture
def rates(settings):
    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "PAY_HOURLY": Decimal("9.00"),
        "PAY_PER_POINT": Decimal("0.025"),
        "ACTIVE_SECONDS_CAP": 60,
        "PLATFORM_MIN_HOURLY": Decimal("40.00"),
        "CURRENCY": "GBP",
    }


@pytest.fixture
def crowd(rates):
    """A: Prolific P1, 7 ratings (75 s and 120 s capped at 60), two sessions, 37 points last shown.
    B: Prolific P2, withdrew; 2 game ratings of 40 s, last shown -5 points. C: open sign-up, one
    10-s rating, 4 points. Staff's ratings and ratings outside the day are not paid."""
    a, b, c = annotator(), annotator(), annotator()
    came_from_prolific(a, "P1aaaaaaaaaaaaaaaaaaaaaa")
    came_from_prolific(b, "P2bbbbbbbbbbbbbbbbbbbbbb")
    for minutes, seconds in ((0, 20), (1, 75), (2, 10)):
        rate(a, seconds, minutes, pool=Pool.TUTORIAL)
    rate(a, 30, 3, shown_total=10)
    rate(a, 45, 4, shown_total=20, excluded=True)
    rate(a, 120, 5, shown_total=36)
    rate(a, 1, 180, shown_total=37)  # three hours later: a second session
    rate(a, 50, 60 * 13, shown_total=99)  # the next day: outside the period
    for rating in (rate(b, 40, 10, shown_total=3), rate(b, 40, 11, shown_total=-5)):
        # The pair's aggregates as the game keeps them: the withdrawal takes the rating back out.
        pair = rating.pair
        pair.human_count, pair.human_sum, pair.human_sumsq = pair_aggregates_recompute(pair)
        pair.save()
    rater_withdraw(user=b)
    rate(c, 10, 20, shown_total=4)
    rate(admin(), 30, 30, shown_total=50)
    return a, b, c
