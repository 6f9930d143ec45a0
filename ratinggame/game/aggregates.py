"""A game pair's consensus aggregates: what is in force, and keeping it in step with the ratings.

A pair stores the count, sum and sum of squares of its non-excluded human game ratings, and
its calibrated model primes, oldest first (SPEC section 4). Each human rating replaces one
prime, oldest first, so the ratings in force are the human ratings plus
``primes[human_count:]``: two primes before the first human rating, one after it, none after
the second. Excluding a human rating brings a prime back by the same rule.

Every change happens under the pair's row lock (``select_for_update``), in O(1): scoring a
rating never rescans the pair's ratings. ``pair_aggregates_recompute`` is the slow reference
that rebuilds the aggregates from the stored ratings (tests, repairs).
"""

from collections.abc import Iterable
from typing import NamedTuple

from django.db import transaction
from django.db.models import Count, F, Sum

from ratinggame.game.assignment import pair_rank_refresh
from ratinggame.models import CaptionPair, Pool, Rating


class Aggregates(NamedTuple):
    count: int
    total: float
    total_sq: float


def in_force(pair: CaptionPair) -> Aggregates:
    """The ratings before the next one: human ratings plus the primes still in place."""
    remaining = [float(prime) for prime in pair.primes[pair.human_count :]]
    return Aggregates(
        count=pair.human_count + len(remaining),
        total=pair.human_sum + sum(remaining),
        total_sq=pair.human_sumsq + sum(prime * prime for prime in remaining),
    )


def pair_rating_add(pair: CaptionPair, value: int) -> None:
    """Count one more human rating (the caller holds the pair's row lock and saves)."""
    pair.human_count += 1
    pair.human_sum += value
    pair.human_sumsq += value * value


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
        pair_ids = set(Rating.objects.filter(pk__in=ids).values_list("pair_id", flat=True))
        pairs = {
            pair.pk: pair for pair in CaptionPair.objects.select_for_update().filter(pk__in=pair_ids).order_by("id")
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
        for pair_id in sorted(changed):
            pair = pairs[pair_id]
            pair_rank_refresh(pair)
            pair.save(update_fields=["human_count", "human_sum", "human_sumsq", "assign_rank"])
    return len(ratings)
