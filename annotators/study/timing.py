"""Active time (SPEC 7): the sum over a rater's ratings, every stage, of the time from the server's
serve to the accepted submit, each capped (``StudySettings.active_seconds_cap``), so a rater who
walked away is not paid for it. The one definition: the session quota and the pay report use it,
the report row by row (``capped_seconds``), the quota summed by the database (``capped_duration``,
the same rule as an expression; a test holds the two equal)."""

from collections import defaultdict
from datetime import datetime, timedelta

from django.db.models import DurationField, ExpressionWrapper, F, Q, Sum, Value
from django.db.models.functions import Greatest, Least

from ratinggame.models import Rating


def capped_seconds(served_at: datetime, submitted_at: datetime, cap: float) -> float:
    """One rating's active seconds: serve to submit, at most ``cap`` (never negative)."""
    return min(cap, max(0.0, (submitted_at - served_at).total_seconds()))


def capped_duration(cap: float) -> Least:
    """``capped_seconds`` as a database expression over a rating's row (a duration)."""
    taken = ExpressionWrapper(F("submitted_at") - F("served_at"), output_field=DurationField())
    never_negative = Greatest(taken, Value(timedelta(0), output_field=DurationField()))
    return Least(never_negative, Value(timedelta(seconds=cap), output_field=DurationField()))


def active_seconds_sum(cap: float) -> Sum:
    """A rater's active seconds as an aggregate over their ratings (excluded ones too: they took
    the time), summed where the rows are: a participant's quota is checked after every rating, and
    reading each of their ratings back made that grow with their session."""
    return Sum(capped_duration(cap), default=Value(timedelta(0), output_field=DurationField()))


def active_seconds_by_rater(where: Q, cap: float) -> dict[int, float]:
    """Active seconds of every rater with ratings matching ``where``, by user id."""
    totals: dict[int, float] = defaultdict(float)
    rows = Rating.objects.filter(where).values_list("rater_id", "served_at", "submitted_at")
    for rater_id, served, submitted in rows.iterator(chunk_size=5000):
        totals[rater_id] += capped_seconds(served, submitted, cap)
    return dict(totals)
