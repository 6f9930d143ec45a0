"""The pay tests' worked example's pieces (``conftest.crowd``): the day paid, a participant who came
from Prolific, a rating of a given length at a given minute."""

from datetime import timedelta

from annotators.models import Participation, Platform, RaterProfile
from ratinggame.models import Pool
from tests.factories import CaptionPairFactory, TutorialPairFactory, rating_record
from tests.ratinggame.journey_helpers import T0

DAY = T0.date()  # 2030-01-01; T0 is noon


def came_from_prolific(user, pid: str) -> None:
    profile = RaterProfile.objects.get(user=user)
    Participation.objects.create(
        profile=profile, platform=Platform.PROLIFIC, external_id=pid, entered_at=T0, last_entry_at=T0
    )


def rate(user, seconds: float, minutes: float, pool: str = Pool.GAME, shown_total: int | None = None, **kw):
    pair = TutorialPairFactory(expert_rating=3) if pool == Pool.TUTORIAL else CaptionPairFactory(pool=pool)
    rating = rating_record(
        rater=user, pair=pair, value=3, seconds=seconds, submitted_at=T0 + timedelta(minutes=minutes), **kw
    )
    if shown_total is not None:
        rating.feedback = {"stage_total": shown_total}
        rating.save(update_fields=["feedback"])
    return rating
