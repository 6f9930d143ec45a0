"""The pay report on a seeded crowd equals an independent computation from the ratings table
(issue 20): active time capped as SPEC 7 says, the bonus from the points last shown."""

import random
from collections import defaultdict
from datetime import timedelta
from decimal import ROUND_HALF_UP, Decimal

import pytest

from annotators.study.report import pay_period, pay_report
from ratinggame.models import GAME_STAGES, Pool, Rating
from tests.factories import CaptionPairFactory, TutorialPairFactory, rating_record
from tests.ratinggame.api_helpers import annotator
from tests.ratinggame.journey_helpers import T0

pytestmark = pytest.mark.django_db

HOURLY, PER_POINT, CAP = Decimal("10.50"), Decimal("0.013"), 45


def test_the_report_equals_the_ratings_table(settings):
    settings.RATINGGAME_STUDY = {
        **settings.RATINGGAME_STUDY,
        "PAY_HOURLY": HOURLY,
        "PAY_PER_POINT": PER_POINT,
        "ACTIVE_SECONDS_CAP": CAP,
    }
    rng = random.Random(20)
    tutorial = [TutorialPairFactory(expert_rating=3) for _ in range(5)]
    game = [CaptionPairFactory(pool=Pool.GAME) for _ in range(30)]
    raters = [annotator() for _ in range(8)]
    day_start = T0.replace(hour=0)
    for user in raters:
        total = 0
        mine = rng.sample(game, len(game))  # a rater rates a game pair once
        for index in range(rng.randint(3, 30)):
            stage = Pool.TUTORIAL if index < 3 else Pool.GAME
            pair = tutorial[index] if stage == Pool.TUTORIAL else mine[index]
            rating = rating_record(
                rater=user,
                pair=pair,
                value=3,
                stage=stage,
                seconds=rng.uniform(1, 150),
                excluded=stage == Pool.GAME and rng.random() < 0.2,
                submitted_at=day_start + timedelta(hours=rng.uniform(-6, 30)),  # some outside the day
            )
            total += rng.randint(-2, 2)
            rating.feedback = {"stage_total": total}
            rating.save(update_fields=["feedback"])

    start, end = pay_period(T0.date(), T0.date())
    report = pay_report(start=start, end=end)

    seconds, counted, excluded = defaultdict(float), defaultdict(int), defaultdict(int)
    for rating in Rating.objects.filter(submitted_at__gte=start, submitted_at__lt=end):
        seconds[rating.rater_id] += min(CAP, (rating.submitted_at - rating.served_at).total_seconds())
        if rating.stage in GAME_STAGES:
            counted[rating.rater_id] += not rating.excluded
            excluded[rating.rater_id] += rating.excluded
    by_user = {row.username: row for row in report.rows}
    assert len(by_user) == len(seconds) > 0
    for user in raters:
        if user.pk not in seconds:
            assert user.username not in by_user
            continue
        row = by_user[user.username]
        last = (
            Rating.objects.filter(rater=user, stage__in=GAME_STAGES, submitted_at__lt=end)
            .order_by("-submitted_at")
            .first()
        )
        points = last.feedback["stage_total"] if last else 0
        cent = Decimal("0.01")
        base = (HOURLY * Decimal(repr(seconds[user.pk])) / 3600).quantize(cent, ROUND_HALF_UP)
        bonus = (max(0, points) * PER_POINT).quantize(cent, ROUND_HALF_UP)
        assert row.active_seconds == pytest.approx(seconds[user.pk], abs=1e-6)
        assert (row.counted, row.excluded, row.points) == (counted[user.pk], excluded[user.pk], points)
        assert (row.base, row.bonus) == (base, bonus), user.username
