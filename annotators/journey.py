"""Where a rater is on the journey, and the moves between its steps (SPEC section 2).

``current_step`` is the one state machine: views, the API and the game services all ask it
where a rater may be. The moves (``game_enter``, ``probation_enter``) are called by
``ratinggame.game`` while it holds the rater's profile row lock.

Consent -> tutorial (10 expert-rated pairs, pass mark 10 of 20) -> game, or probation
(rounds of 20 expert-rated pairs, pass mark 25 of 40, reshuffled every round) -> game. A
failed qualification window in the game sends the rater back to probation.
"""

import math
import random
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db import models
from django.db.models import Sum
from django.utils import timezone

from annotators.models import ProbationRound, RaterProfile, RaterState
from ratinggame.models import CaptionPair, Pool, Rating, Stage

TUTORIAL_SIZE = 10
TUTORIAL_PASS_POINTS = 10  # of 2 * TUTORIAL_SIZE
PROBATION_SIZE = 20
PROBATION_PASS_POINTS = 25  # of 2 * PROBATION_SIZE

_random = random.SystemRandom()


class Step(models.TextChoices):
    CONSENT = "consent", "Consent"
    TUTORIAL = "tutorial", "Tutorial"
    PROBATION = "probation", "Probation"
    GAME = "game", "Game"
    SUSPENDED = "suspended", "Suspended"


def profile_for(user: AbstractBaseUser) -> RaterProfile:
    """The rater's profile, created on first use (users made by staff have none yet)."""
    profile, _ = RaterProfile.objects.get_or_create(user=user)
    return profile


def step_of(profile: RaterProfile) -> Step:
    """The state machine on a profile already in hand (the game services lock it first)."""
    if profile.state == RaterState.SUSPENDED:
        return Step.SUSPENDED
    if profile.consent_at is None:
        return Step.CONSENT
    return Step(profile.state)


def current_step(user: AbstractBaseUser | AnonymousUser) -> Step:
    """Where ``user`` may be: no consent -> CONSENT; suspended -> SUSPENDED; else the profile's state."""
    if not user.is_authenticated:
        return Step.CONSENT
    return step_of(profile_for(user))


def consent_give(*, user: AbstractBaseUser) -> None:
    """Record consent once; giving it again keeps the first time."""
    profile = profile_for(user)
    if profile.consent_at is None:
        profile.consent_at = timezone.now()
        profile.save(update_fields=["consent_at"])


# --- Tutorial ------------------------------------------------------------------------------


def tutorial_pair_ids() -> list[int]:
    """The tutorial pairs in display order (the first TUTORIAL_SIZE with an expert rating)."""
    return list(
        CaptionPair.objects.filter(pool=Pool.TUTORIAL, expert_rating__isnull=False)
        .order_by("display_order", "id")
        .values_list("id", flat=True)[:TUTORIAL_SIZE]
    )


def tutorial_pass_mark(size: int) -> int:
    """10 of 20 points; scaled (half the maximum) when fewer than 10 tutorial pairs exist."""
    return math.ceil(TUTORIAL_PASS_POINTS * size / TUTORIAL_SIZE)


def tutorial_progress(user: AbstractBaseUser) -> tuple[int, int, int]:
    """(pairs rated, pairs in the tutorial, points so far)."""
    ratings = Rating.objects.filter(rater=user, stage=Stage.TUTORIAL)
    done = ratings.count()
    score = ratings.aggregate(total=Sum("points"))["total"] or 0
    return done, len(tutorial_pair_ids()), score


# --- Probation -----------------------------------------------------------------------------


def probation_pass_mark(size: int) -> int:
    """25 of 40 points; scaled (5/8 of the maximum, rounded up) when fewer than 20 pairs exist."""
    return math.ceil(PROBATION_PASS_POINTS * size / PROBATION_SIZE)


def probation_round_current(profile: RaterProfile) -> ProbationRound | None:
    return profile.probation_rounds.order_by("-number").first()


def probation_round_start(*, profile: RaterProfile) -> ProbationRound:
    """A new round: PROBATION_SIZE probation pairs (all of them when fewer exist) in a fresh order.

    The order differs from the previous round's whenever it can, so a rater who failed does
    not see the same sequence again.
    """
    previous = probation_round_current(profile)
    pool = list(
        CaptionPair.objects.filter(pool=Pool.PROBATION, expert_rating__isnull=False).values_list("id", flat=True)
    )
    order = _random.sample(pool, min(PROBATION_SIZE, len(pool)))
    if previous is not None and len(order) > 1:
        while order == previous.pair_order:
            _random.shuffle(order)
    number = previous.number + 1 if previous is not None else 1
    return ProbationRound.objects.create(profile=profile, number=number, pair_order=order)


def probation_progress(user: AbstractBaseUser) -> tuple[int, int, int, int]:
    """(round number, pairs rated this round, pairs in the round, points this round)."""
    current = probation_round_current(profile_for(user))
    if current is None:
        pool = CaptionPair.objects.filter(pool=Pool.PROBATION, expert_rating__isnull=False)
        size = min(PROBATION_SIZE, pool.count())
        return 0, 0, size, 0
    return current.number, current.rated, len(current.pair_order), current.score


# --- Moves between steps (the caller holds the profile row lock) ----------------------------


def game_enter(*, profile: RaterProfile, now: datetime) -> None:
    """Into the game: a new qualification window starts (SPEC section 2.3)."""
    profile.state = RaterState.GAME
    profile.game_entered_at = now
    profile.window_count = 0
    profile.window_points = 0
    profile.save(update_fields=["state", "game_entered_at", "window_count", "window_points"])


def probation_enter(*, profile: RaterProfile) -> ProbationRound:
    """Onto probation, with a new round."""
    profile.state = RaterState.PROBATION
    profile.save(update_fields=["state"])
    return probation_round_start(profile=profile)
