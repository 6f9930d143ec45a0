"""Helpers for the journey tests: a controlled clock, raters at a given step, pairs, and checks."""

from datetime import UTC, datetime, timedelta

import pytest

from annotators.models import RaterProfile, RaterState
from annotators.roles import ANNOTATOR, ensure_roles
from ratinggame import game
from ratinggame.game.aggregates import pair_aggregates_recompute
from ratinggame.game.assignment import assign_rank_for, pair_rank_refresh
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from tests.factories import CaptionPairFactory, ProbationPairFactory, TutorialPairFactory, UserFactory

T0 = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)
WAIT = 4  # seconds between serving and submitting: past the 3-second floor


class Clock:
    def __init__(self, start: datetime = T0) -> None:
        self.now = start

    def tick(self, seconds: float) -> datetime:
        self.now += timedelta(seconds=seconds)
        return self.now


def rater(state: str = RaterState.TUTORIAL, *, now: datetime = T0, consent: bool = True, **profile_fields):
    """An annotator on ``state`` who gave consent a day before ``now`` (or none), in the game since
    an hour before it."""
    user = UserFactory()
    user.groups.add(ensure_roles()[ANNOTATOR])
    fields = {"consent_at": now - timedelta(days=1) if consent else None, "state": state, **profile_fields}
    if state == RaterState.GAME:
        fields.setdefault("game_entered_at", now - timedelta(hours=1))
    RaterProfile.objects.create(user=user, **fields)
    return user


def tutorial_pairs(experts: list[int]) -> list[CaptionPair]:
    """Tutorial pairs with these expert ratings, returned in display order.

    They are created last-first, so serving them by id instead of display order would show.
    """
    created = [
        TutorialPairFactory(expert_rating=experts[index], display_order=index, explanation=f"why {index}")
        for index in reversed(range(len(experts)))
    ]
    return created[::-1]


def probation_pairs(count: int, expert: int = 3) -> list[CaptionPair]:
    return [ProbationPairFactory(expert_rating=expert) for _ in range(count)]


def game_pairs(count: int, primes: list[float] | None = None) -> list[CaptionPair]:
    return [CaptionPairFactory(pool=Pool.GAME, primes=list(primes or [])) for _ in range(count)]


def value_scoring(expert: int, points: int) -> int:
    """A rating that scores ``points = 2 - |expert - rating|`` against ``expert``."""
    gap = 2 - points
    return expert + gap if expert + gap <= 5 else expert - gap


def rate_next(user, value, clock: Clock, wait: float = WAIT) -> tuple[game.Served, game.Feedback]:
    """Serve the next pair at clock.now, submit ``value`` (or value(pair)) ``wait`` seconds later."""
    served = game.pair_serve(rater=user, now=clock.now)
    assert served is not None
    clock.tick(wait)
    chosen = value(CaptionPair.objects.get(pk=served.pair_id)) if callable(value) else value
    feedback = game.rating_submit(rater=user, assignment_id=served.assignment_id, value=chosen, now=clock.now)
    clock.tick(1)
    return served, feedback


def seed_ratings(
    pair: CaptionPair, values: list[int], at: datetime = T0 - timedelta(hours=2), raters: list | None = None
) -> None:
    """Game ratings already stored on ``pair`` (set up directly, aggregates in step), by ``raters``
    or else by new raters, one per value."""
    for index, value in enumerate(values):
        user = raters[index] if raters else rater(RaterState.GAME)
        assignment = Assignment.objects.create(
            rater=user, pair=pair, stage=Pool.GAME, served_at=at, expires_at=at + timedelta(hours=1), submitted_at=at
        )
        Rating.objects.create(
            assignment=assignment,
            pair=pair,
            rater=user,
            stage=Pool.GAME,
            value=value,
            served_at=at,
            submitted_at=at,
        )
    stored = pair_aggregates_recompute(pair)
    pair.human_count, pair.human_sum, pair.human_sumsq = stored
    pair.label_evidence = Rating.objects.counted().label_evidence([pair.pk])[pair.pk]
    pair_rank_refresh(pair)
    pair.save()


def assert_pairs_consistent() -> None:
    """Every game pair's aggregates, open-slot count and rank match what is stored."""
    for pair in CaptionPair.objects.filter(pool=Pool.GAME):
        assert (pair.human_count, pair.human_sum, pair.human_sumsq) == tuple(pair_aggregates_recompute(pair)), pair
        holding = Assignment.objects.filter(pair=pair, holds_slot=True).count()
        assert pair.in_flight == holding, pair
        evidence = Rating.objects.counted().label_evidence([pair.pk])[pair.pk]
        assert pair.label_evidence == pytest.approx(evidence), pair
        expected_rank = assign_rank_for(
            evidence=evidence,
            human_count=pair.human_count,
            human_sum=pair.human_sum,
            human_sumsq=pair.human_sumsq,
            in_flight=pair.in_flight,
            withdrawn=pair.withdrawn_at is not None,  # withdrawn after reports: served to nobody
        )
        assert pair.assign_rank == expected_rank, pair
