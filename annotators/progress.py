"""Where each rater is on the journey, how far along, and the moves between its steps.

The rules and numbers are in ``annotators.journey``; this module reads and writes the rater's
profile and probation rounds by them. ``current_step`` is the one state machine: the pages, the
API and the game services all ask it where a rater may be. ``stage_progress`` is the one
progress read that the rating pages and the API show. The moves (``game_enter``,
``probation_enter``) are called by ``ratinggame.game`` while it holds the rater's profile row
lock, and by the staff actions.
"""

import random
from dataclasses import dataclass
from datetime import datetime

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.db.models import Max, Sum
from django.utils import timezone

from annotators import journey
from annotators.journey import PROBATION_SIZE, TUTORIAL_SIZE, Step, Window
from annotators.models import ProbationRound, RaterProfile, RaterState
from ratinggame.models import CaptionPair, Pool, Rating

_random = random.SystemRandom()


def profile_for(user: AbstractBaseUser) -> RaterProfile:
    """The rater's profile, created on first use (users made by staff have none yet)."""
    profile, _ = RaterProfile.objects.get_or_create(user=user)
    return profile


def current_step(user: AbstractBaseUser | AnonymousUser) -> Step:
    """Where ``user`` may be: no consent -> CONSENT; suspended -> SUSPENDED; else the profile's state."""
    if not user.is_authenticated:
        return Step.CONSENT
    return journey.step_of(profile_for(user))


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


def tutorial_progress(user: AbstractBaseUser) -> tuple[int, int, int]:
    """(pairs rated, pairs in the tutorial, points so far)."""
    ratings = Rating.objects.filter(rater=user, stage=Pool.TUTORIAL)
    done = ratings.count()
    score = ratings.aggregate(total=Sum("points"))["total"] or 0
    return done, len(tutorial_pair_ids()), score


# --- Probation -----------------------------------------------------------------------------


def probation_round_current(profile: RaterProfile) -> ProbationRound | None:
    return profile.probation_rounds.order_by("-number").first()


def probation_round_start(*, profile: RaterProfile) -> ProbationRound:
    """A new round: PROBATION_SIZE probation pairs (all of them when fewer exist), in a random order.

    SPEC 2.2: a retry measures skill, not memory of the answers just shown. The round takes
    first the probation pairs this rater has never rated, then those rated longest ago. With
    the demo's 60 pairs three rounds never repeat a pair; with a set of PROBATION_SIZE pairs every
    round repeats the last one, in a different order whenever it can.
    """
    previous = probation_round_current(profile)
    pool = list(
        CaptionPair.objects.filter(pool=Pool.PROBATION, expert_rating__isnull=False).values_list("id", flat=True)
    )
    last_rated = dict(
        Rating.objects.filter(rater_id=profile.user_id, stage=Pool.PROBATION)
        .values("pair_id")
        .annotate(last=Max("submitted_at"))
        .values_list("pair_id", "last")
    )
    if previous is not None:
        # The round just finished counts as seen even where its last rating is still being
        # stored (a failed round starts the next one in the same transaction).
        seen_at = previous.finished_at or timezone.now()
        for pair_id in previous.pair_order:
            last_rated.setdefault(pair_id, seen_at)
    never = [pair_id for pair_id in pool if pair_id not in last_rated]
    _random.shuffle(never)
    longest_ago = sorted((pair_id for pair_id in pool if pair_id in last_rated), key=last_rated.__getitem__)
    order = (never + longest_ago)[:PROBATION_SIZE]
    _random.shuffle(order)
    if previous is not None and len(order) > 1:
        while order == previous.pair_order:
            _random.shuffle(order)
    number = previous.number + 1 if previous is not None else 1
    return ProbationRound.objects.create(profile=profile, number=number, pair_order=order)


def probation_round_after_failing(profile: RaterProfile, failed_at: datetime) -> tuple[ProbationRound, int] | None:
    """The round that followed the round failed at ``failed_at`` (its last rating's time), and how
    many of its pairs the rater had rated by then; None when there is no such round."""
    failed = profile.probation_rounds.filter(finished_at=failed_at, passed=False).first()
    following = failed and profile.probation_rounds.filter(number=failed.number + 1).first()
    if following is None:
        return None
    repeats = (
        Rating.objects.filter(
            rater_id=profile.user_id,
            stage=Pool.PROBATION,
            pair_id__in=following.pair_order,
            submitted_at__lte=failed_at,
        )
        .values("pair_id")
        .distinct()
        .count()
    )
    return following, repeats


def probation_progress(user: AbstractBaseUser) -> tuple[int, int, int, int]:
    """(round number, pairs rated this round, pairs in the round, points this round)."""
    current = probation_round_current(profile_for(user))
    if current is None:
        pool = CaptionPair.objects.filter(pool=Pool.PROBATION, expert_rating__isnull=False)
        size = min(PROBATION_SIZE, pool.count())
        return 0, 0, size, 0
    return current.number, current.rated, len(current.pair_order), current.score


# --- Progress of the current stage, as the pages and the API show it --------------------------


@dataclass(frozen=True)
class StageProgress:
    """How far a rater is in a stage.

    Tutorial and probation: pairs ``done`` of ``total``, ``score`` of ``max_score`` points with
    ``pass_mark`` needed (probation also gives its ``round``). Game: the game ``score``, its
    ``level``, and the qualification ``window``.
    """

    stage: str
    score: int
    done: int | None = None
    total: int | None = None
    round: int | None = None
    window: Window | None = None

    @property
    def max_score(self) -> int | None:
        return None if self.total is None else 2 * self.total

    @property
    def pass_mark(self) -> int | None:
        if self.stage == Pool.TUTORIAL:
            return journey.tutorial_pass_mark(self.total)
        if self.stage == Pool.PROBATION:
            return journey.probation_pass_mark(self.total)
        return None

    @property
    def level(self) -> int:
        return journey.level_for(self.score)


def stage_progress(user: AbstractBaseUser, stage: str) -> StageProgress:
    """The rater's progress in ``stage`` ("tutorial", "probation" or "game")."""
    if stage == Pool.TUTORIAL:
        done, total, score = tutorial_progress(user)
        return StageProgress(stage=Pool.TUTORIAL, score=score, done=done, total=total)
    if stage == Pool.PROBATION:
        number, done, total, score = probation_progress(user)
        return StageProgress(stage=Pool.PROBATION, score=score, done=done, total=total, round=number)
    profile = profile_for(user)
    return StageProgress(
        stage=Pool.GAME,
        score=profile.game_score,
        window=Window(count=profile.window_count, points=profile.window_points),
    )


# --- Moves between steps (the caller holds the profile row lock) ----------------------------


def game_enter(*, profile: RaterProfile, now: datetime) -> None:
    """Into the game: a new qualification window starts (SPEC section 2.3)."""
    profile.state = RaterState.GAME
    profile.game_entered_at = now
    profile.window_count = 0
    profile.window_points = 0
    profile.save(update_fields=["state", "game_entered_at", "window_count", "window_points"])


def tutorial_finish(*, profile: RaterProfile, score: int, passed: bool, now: datetime) -> None:
    """The tutorial's last pair rated (SPEC 2.1): its score kept, then into the game when it
    passed, else onto probation."""
    profile.tutorial_score = score
    profile.tutorial_completed_at = now
    profile.save(update_fields=["tutorial_score", "tutorial_completed_at"])
    if passed:
        game_enter(profile=profile, now=now)
    else:
        probation_enter(profile=profile)


def probation_round_rated(round_: ProbationRound, *, score: int, passed: bool | None, now: datetime) -> None:
    """One more pair of the round rated (SPEC 2.2), its points in ``score``; with ``passed`` (True
    or False, after its last pair) the round is finished."""
    round_.score, round_.rated = score, round_.rated + 1
    if passed is not None:
        round_.finished_at, round_.passed = now, passed
    round_.save(update_fields=["score", "rated", "finished_at", "passed"])


def probation_enter(*, profile: RaterProfile) -> ProbationRound:
    """Onto probation, with a new round."""
    profile.state = RaterState.PROBATION
    profile.save(update_fields=["state"])
    return probation_round_start(profile=profile)
