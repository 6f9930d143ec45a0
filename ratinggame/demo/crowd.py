"""A demo crowd: eight raters who have already played, so that a fresh demo has a game in
progress, a dataset to export and raters for the staff pages to judge.

Demo mode only (like the demo accounts): it writes ratings that no person gave. Each crowd
rater signs up (no usable password: nobody can log in as one), consents, and plays through
the very services the pages and the API use (``ratinggame.game``), on a simulated clock in
the past three days: the tutorial, probation where it fails, and a few game ratings. Its
ratings are those of the crowd simulator's rater model (``tools.simulator.crowd``): the
written level of a demo game caption (``demo_content.GAME[...]["level"]``) or the expert
rating of a teaching pair, plus noise that grows as the rater's competency falls. Seeded,
so every demo starts alike.

Twelve game ratings each (96 in all) complete about thirty of the 62 game pairs to the
3-rating minimum and leave the rest for the people trying the demo.
"""

import random
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
from django.contrib.auth import get_user_model
from django.db import transaction

from annotators.models import RaterProfile
from annotators.roles import ANNOTATOR, ensure_roles
from ratinggame import game
from ratinggame.models import CaptionPair, Pool
from tools.simulator.crowd import simulated_rating

# One competency per crowd rater (1 = always the true level): mostly good raters, one weak.
COMPETENCIES = (0.95, 0.9, 0.85, 0.8, 0.75, 0.65, 0.55, 0.35)
GAME_RATINGS_EACH = 12
SEED = 2023
USERNAME = "crowd{}"
SERVES_EACH = 200  # bound on one rater's serves, whatever the rules decide


@dataclass
class CrowdReport:
    raters: int = 0
    ratings: int = 0
    game_ratings: int = 0


def demo_crowd_play(*, levels: dict[int, int], now: datetime) -> CrowdReport:
    """Create the crowd and let it play; nothing when it exists already (idempotent).

    ``levels`` maps demo game pair ids to the level their caption was written for.
    """
    report = CrowdReport()
    user_model = get_user_model()
    if user_model.objects.filter(username=USERNAME.format(1)).exists():
        return report
    annotators = ensure_roles()[ANNOTATOR]
    rng = np.random.default_rng(SEED)
    pace = random.Random(SEED)
    start = now - timedelta(days=3)
    for index, competency in enumerate(COMPETENCIES, start=1):
        with transaction.atomic():
            user = user_model(username=USERNAME.format(index), email="")
            user.set_unusable_password()
            user.save()
            user.groups.add(annotators)
            clock = start + timedelta(hours=6 * index)
            RaterProfile.objects.create(
                user=user, consent_at=clock, display_name=f"Demo crowd {index}", on_leaderboard=True
            )
        report.raters += 1
        game_ratings = 0
        for _ in range(SERVES_EACH):
            if game_ratings >= GAME_RATINGS_EACH:
                break
            served = game.pair_serve(rater=user, now=clock)
            if served is None:
                break
            truth = _truth(served, levels)
            clock += timedelta(seconds=pace.uniform(4.0, 12.0))  # looking at the pair
            feedback = game.rating_submit(
                rater=user,
                assignment_id=served.assignment_id,
                value=simulated_rating(truth, competency, rng),
                now=clock,
            )
            clock += timedelta(seconds=pace.uniform(1.0, 3.0))  # reading the feedback
            report.ratings += 1
            if feedback.stage == Pool.GAME:
                game_ratings += 1
        report.game_ratings += game_ratings
    return report


def _truth(served: game.Served, levels: dict[int, int]) -> int:
    if served.pair_id in levels:
        return levels[served.pair_id]
    expert = CaptionPair.objects.values_list("expert_rating", flat=True).get(pk=served.pair_id)
    # A game pair that is not demo content (imported beside it): its middle level.
    return expert if expert is not None else 3
