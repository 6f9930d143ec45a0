"""A game pair's consensus aggregates: what is in force, and keeping it in step with the ratings.

A pair stores the count, sum and sum of squares of its non-excluded human game ratings, and
its calibrated model primes, oldest first (SPEC section 4). Each human rating replaces one
prime, oldest first, so the ratings in force are the human ratings plus
``primes[human_count:]``: two primes before the first human rating, one after it, none after
the second. Excluding a human rating brings a prime back by the same rule.

Every change happens under the pair's row lock (``select_for_update``), in O(1): scoring a
rating never rescans the pair's ratings. ``pair_aggregates_recompute`` is the slow reference
that rebuilds the aggregates from the stored ratings, and ``pairs_aggregates_check`` compares
every pair's stored counters with its rows and reports (or repairs) any drift: the safety net
for a write that went around these services (a raw SQL fix, a restored backup).
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple

from django.db import transaction
from django.db.models import Count, F, Sum

from ratinggame.game.assignment import assign_rank_for, pair_rank_refresh
from ratinggame.game.sql import PairRow
from ratinggame.models import Assignment, CaptionPair, Pool, Rating
from scoring.ordinal import RaterModel, evidence_add


class Aggregates(NamedTuple):
    count: int
    total: float
    total_sq: float


def in_force(pair: CaptionPair | PairRow) -> Aggregates:
    """The ratings before the next one: human ratings plus the primes still in place."""
    remaining = [float(prime) for prime in pair.primes[pair.human_count :]]
    return Aggregates(
        count=pair.human_count + len(remaining),
        total=pair.human_sum + sum(remaining),
        total_sq=pair.human_sumsq + sum(prime * prime for prime in remaining),
    )


def rater_model_of(profile) -> RaterModel | None:
    """The rater's ordinal model (a ``RaterProfile`` or its row), None before its first fit."""
    if profile is None or profile.label_precision is None:
        return None
    return RaterModel(profile.label_precision, profile.label_severity or 0.0, profile.label_lapse or 0.0)


def pair_rating_add(pair: CaptionPair | PairRow, value: int, rater: RaterModel | None) -> None:
    """Count one more human rating (the caller holds the pair's row lock and saves)."""
    pair.human_count += 1
    pair.human_sum += value
    pair.human_sumsq += value * value
    pair.label_evidence = evidence_add(pair.label_evidence, value, rater)


def pair_aggregates_recompute(pair: CaptionPair) -> Aggregates:
    """The human aggregates rebuilt from the stored ratings: non-excluded game ratings of the pair."""
    row = (
        Rating.objects.counted()
        .filter(pair=pair)
        .aggregate(count=Count("id"), total=Sum("value"), total_sq=Sum(F("value") * F("value")))
    )
    return Aggregates(count=row["count"], total=row["total"] or 0, total_sq=row["total_sq"] or 0)


def ratings_exclude(*, rating_ids: Iterable[int], reason: str) -> int:
    """Mark game ratings excluded (kept for audit) and take them out of their pairs' consensus.

    Locks the pairs in id order (a fixed order, so two exclusions sharing pairs cannot
    deadlock), then excludes only the ratings not excluded yet. Returns how many it excluded.
    """
    ids = list(rating_ids)
    with transaction.atomic():
        # Only game pairs have a consensus to change: control pairs' ratings are excluded without
        # locking their pairs (a control is rated by many at once and holds no aggregates).
        pair_ids = set(Rating.objects.filter(pk__in=ids, stage=Pool.GAME).values_list("pair_id", flat=True))
        pairs = {
            pair.pk: pair
            for pair in CaptionPair.objects.select_for_update(no_key=True).filter(pk__in=pair_ids).order_by("id")
        }
        ratings = list(Rating.objects.filter(pk__in=ids, excluded=False).only("id", "pair_id", "value", "stage"))
        changed: set[int] = set()
        for rating in ratings:
            if rating.stage != Pool.GAME:
                continue
            pair = pairs[rating.pair_id]
            pair.human_count -= 1
            pair.human_sum -= rating.value
            pair.human_sumsq -= rating.value * rating.value
            changed.add(pair.pk)
        Rating.objects.filter(pk__in=[rating.pk for rating in ratings]).update(excluded=True, excluded_reason=reason)
        evidence = Rating.objects.counted().label_evidence(sorted(changed))
        for pair_id in sorted(changed):
            pair = pairs[pair_id]
            pair.label_evidence = evidence[pair_id]
            pair_rank_refresh(pair)
            pair.save(update_fields=["human_count", "human_sum", "human_sumsq", "label_evidence", "assign_rank"])
    return len(ratings)


# --- Drift: stored counters against the rows ------------------------------------------------------


class PairCounters(NamedTuple):
    """What a pair stores about its ratings and open assignments (or what its rows say it should)."""

    human_count: int
    human_sum: int
    human_sumsq: int
    in_flight: int
    assign_rank: int | None


COUNTER_FIELDS = list(PairCounters._fields)


@dataclass(frozen=True)
class Drift:
    pair_id: int
    stored: PairCounters
    actual: PairCounters

    def __str__(self) -> str:
        changed = [
            f"{name} {stored} (rows: {actual})"
            for name, stored, actual in zip(COUNTER_FIELDS, self.stored, self.actual, strict=True)
            if stored != actual
        ]
        return f"pair {self.pair_id}: " + ", ".join(changed)


def _expected_rank(
    pool: str, withdrawn: bool, stored_rank: int | None, human: Aggregates, in_flight: int, evidence: list
) -> int | None:
    # Only game pairs are served by rank; the rank other pools keep is never read. The label
    # evidence is the stored one: it was computed with the raters' models of its ratings' time.
    if pool != Pool.GAME:
        return stored_rank
    return assign_rank_for(
        human_count=human.count,
        human_sum=int(human.total),
        human_sumsq=int(human.total_sq),
        in_flight=in_flight,
        withdrawn=withdrawn,
        evidence=evidence,
    )


def _counters_of(pair: CaptionPair) -> PairCounters:
    return PairCounters(*(getattr(pair, name) for name in COUNTER_FIELDS))


def _counters_from_rows(pair: CaptionPair) -> PairCounters:
    human = pair_aggregates_recompute(pair)
    in_flight = Assignment.objects.filter(pair=pair, holds_slot=True).count()
    rank = _expected_rank(
        pair.pool, pair.withdrawn_at is not None, pair.assign_rank, human, in_flight, pair.label_evidence
    )
    return PairCounters(human.count, int(human.total), int(human.total_sq), in_flight, rank)


def _suspects(batch: list[tuple]) -> list[int]:
    """Pairs of ``batch`` whose counters disagree with their rows, read without locks (two grouped queries)."""
    ids = [row[0] for row in batch]
    ratings = {
        row["pair_id"]: Aggregates(row["count"], row["total"], row["total_sq"])
        for row in Rating.objects.counted()
        .filter(pair_id__in=ids)
        .values("pair_id")
        .annotate(count=Count("id"), total=Sum("value"), total_sq=Sum(F("value") * F("value")))
    }
    holding = dict(
        Assignment.objects.filter(pair_id__in=ids, holds_slot=True)
        .values("pair_id")
        .annotate(n=Count("id"))
        .values_list("pair_id", "n")
    )
    suspects = []
    for pair_id, pool, withdrawn_at, evidence, *stored in batch:
        stored = PairCounters(*stored)
        human = ratings.get(pair_id, Aggregates(0, 0, 0))
        in_flight = holding.get(pair_id, 0)
        rank = _expected_rank(pool, withdrawn_at is not None, stored.assign_rank, human, in_flight, evidence)
        if stored != PairCounters(human.count, human.total, human.total_sq, in_flight, rank):
            suspects.append(pair_id)
    return suspects


def _pair_drift(pair_id: int, *, repair: bool) -> Drift | None:
    """Check one pair again under its row lock (a rating may have moved it since it was read)."""
    with transaction.atomic():
        pair = CaptionPair.objects.select_for_update(no_key=True).filter(pk=pair_id).first()
        if pair is None:
            return None
        stored, actual = _counters_of(pair), _counters_from_rows(pair)
        if stored == actual:
            return None
        if repair:
            for name, value in zip(COUNTER_FIELDS, actual, strict=True):
                setattr(pair, name, value)
            # Counters that drifted from the rows: so did the evidence over the same ratings.
            pair.label_evidence = Rating.objects.counted().label_evidence([pair_id])[pair_id]
            pair_rank_refresh(pair)
            pair.save(update_fields=[*COUNTER_FIELDS, "label_evidence"])
    return Drift(pair_id, stored, actual)


def pairs_aggregates_check(*, repair: bool = False, batch_size: int = 2000) -> list[Drift]:
    """Every pair whose stored counters (aggregates, open slots, rank) disagree with its rows.

    Pairs are read in batches of ``batch_size`` without locks; each one that looks wrong is
    checked again under its row lock and, with ``repair``, set to what its rows say. The game
    keeps running meanwhile: only the drifting pairs are locked, one at a time.
    """
    drifts: list[Drift] = []
    last_id = 0
    while True:
        batch = list(
            CaptionPair.objects.filter(pk__gt=last_id)
            .order_by("pk")
            .values_list("pk", "pool", "withdrawn_at", "label_evidence", *COUNTER_FIELDS)[:batch_size]
        )
        if not batch:
            return drifts
        last_id = batch[-1][0]
        for pair_id in _suspects(batch):
            if (drift := _pair_drift(pair_id, repair=repair)) is not None:
                drifts.append(drift)
