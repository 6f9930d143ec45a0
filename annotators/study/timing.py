"""Active time (SPEC 7): the sum over a rater's ratings, every stage, of the time from the server's
serve to the accepted submit, each capped (``StudySettings.active_seconds_cap``), so a rater who
walked away is not paid for it. The one definition: the session quota and the pay report use it."""

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db.models import Q

from ratinggame.models import Rating


def capped_seconds(served_at: datetime, submitted_at: datetime, cap: float) -> float:
    """One rating's active seconds: serve to submit, at most ``cap`` (never negative)."""
    return min(cap, max(0.0, (submitted_at - served_at).total_seconds()))


def active_seconds(rows: Iterable[tuple[datetime, datetime]], cap: float) -> float:
    return sum(capped_seconds(served, submitted, cap) for served, submitted in rows)


def rater_active_seconds(user_id: int, cap: float) -> float:
    """A rater's active seconds over all their ratings (excluded ones too: they took the time)."""
    rows = Rating.objects.filter(rater_id=user_id).values_list("served_at", "submitted_at")
    return active_seconds(rows.iterator(chunk_size=2000), cap)


def active_seconds_by_rater(where: Q, cap: float) -> dict[int, float]:
    """Active seconds of every rater with ratings matching ``where``, by user id."""
    totals: dict[int, float] = defaultdict(float)
    rows = Rating.objects.filter(where).values_list("rater_id", "served_at", "submitted_at")
    for rater_id, served, submitted in rows.iterator(chunk_size=5000):
        totals[rater_id] += capped_seconds(served, submitted, cap)
    return dict(totals)
