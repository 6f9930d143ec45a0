"""How far the study is: the figures of the researchers' progress page and of ``GET /api/progress/``.

Read in four queries whatever the size of the pool (two over the game pairs, one over the last
week's ratings grouped by hour, one over the last day's raters): the pairs' counts come
from the aggregates each pair keeps in step with its ratings (``human_count``: its counted
human ratings), so no rating is read per pair. "Validated" is ``CaptionPair.objects.validated()``;
a rater is one of ``RaterProfile.objects.raters()`` (staff and withdrawn accounts never count).
The estimate of when the target is reached is ``scoring.progress.estimate``'s.
"""

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import CharField, Count, Expression, F, Func, Q, Sum, Value
from django.db.models.functions import TruncHour
from django.utils import timezone

from annotators.models import RaterProfile
from ratinggame.models import MAX_HUMAN_RATINGS, MIN_HUMAN_RATINGS, CaptionPair, PrimingStatus, Rating, counted_ratings
from scoring.progress.estimate import Estimate, share_past_minimum, target_estimate

CHART_HOURS = 7 * 24
RATE_HOURS = 24
# Pairs by how many counted human ratings they have: one bucket per count up to the minimum,
# then one for the rest (up to the cap).
RATING_BUCKETS = [str(count) for count in range(MIN_HUMAN_RATINGS + 1)] + [
    f"{MIN_HUMAN_RATINGS + 1}–{MAX_HUMAN_RATINGS}"
]


@dataclass(frozen=True)
class StudyProgress:
    now: datetime
    target: int
    target_is_pool: bool  # no target set: every game pair in the pool
    game_pairs: int
    validated: int
    pairs_by_ratings: dict[str, int]  # RATING_BUCKETS -> game pairs with that many counted ratings
    priming_waiting: int  # game pairs whose model priming is pending or running
    priming_failed: int
    kept_out: int  # game pairs out of play after reports, until staff answer
    raters_last_hour: int
    raters_last_day: int
    chart_start: datetime  # the first hour of the chart (UTC)
    counted_per_hour: list[int]  # game ratings that count, per hour from chart_start
    other_per_hour: list[int]  # tutorial, probation and excluded ratings, per hour
    rate_per_hour: float  # counted game ratings an hour, over rate_since..now
    rate_since: datetime
    past_minimum_share: float
    estimate: Estimate

    @property
    def rate_from_first_rating(self) -> bool:
        """The rate is over the hours since the study's first counted rating (younger than a day)."""
        return self.rate_since > self.chart_start + timedelta(hours=CHART_HOURS - RATE_HOURS)

    def per_hour(self) -> list[tuple[datetime, int, int]]:
        """(hour start, counted game ratings, other ratings) for each hour of the chart, oldest first."""
        pairs = zip(self.counted_per_hour, self.other_per_hour, strict=True)
        return [(self.chart_start + timedelta(hours=index), *counts) for index, counts in enumerate(pairs)]


def study_progress(*, now: datetime | None = None) -> StudyProgress:
    """The study's progress at ``now`` (see the module docstring)."""
    now = now or timezone.now()
    pairs = _pair_counts()
    hour = now.replace(minute=0, second=0, microsecond=0)
    chart_start = hour - timedelta(hours=CHART_HOURS - 1)
    counted, other = _ratings_per_hour(chart_start, now)
    rate, rate_since = _rate(counted, chart_start, now)
    configured = settings.RATINGGAME["STUDY_TARGET_PAIRS"]
    target = configured or pairs["game_pairs"]
    short_by = {MIN_HUMAN_RATINGS - count: pairs[f"open_{count}"] for count in range(MIN_HUMAN_RATINGS)}
    past_minimum = share_past_minimum(pairs["ratings"] or 0, pairs["past_minimum"] or 0)
    raters = _active_raters(now)
    return StudyProgress(
        now=now,
        target=target,
        target_is_pool=not configured,
        game_pairs=pairs["game_pairs"],
        validated=pairs["validated"],
        pairs_by_ratings={bucket: pairs[f"bucket_{index}"] for index, bucket in enumerate(RATING_BUCKETS)},
        priming_waiting=pairs["priming_waiting"],
        priming_failed=pairs["priming_failed"],
        kept_out=pairs["kept_out"],
        raters_last_hour=raters["hour"],
        raters_last_day=raters["day"],
        chart_start=chart_start,
        counted_per_hour=counted,
        other_per_hour=other,
        rate_per_hour=rate,
        rate_since=rate_since,
        past_minimum_share=past_minimum,
        estimate=target_estimate(
            target=target,
            validated=pairs["validated"],
            short_by=short_by,
            past_minimum_share=past_minimum,
            rate_per_hour=rate,
            now=now,
        ),
    )


def _pair_counts() -> dict[str, int]:
    """Every count over the game pairs: one query, and the validated pairs' count."""
    buckets = {f"bucket_{count}": Count("id", filter=Q(human_count=count)) for count in range(MIN_HUMAN_RATINGS + 1)}
    buckets[f"bucket_{MIN_HUMAN_RATINGS + 1}"] = Count("id", filter=Q(human_count__gt=MIN_HUMAN_RATINGS))
    open_short = {
        f"open_{count}": Count("id", filter=Q(human_count=count, withdrawn_at__isnull=True))
        for count in range(MIN_HUMAN_RATINGS)
    }
    past = Q(human_count__gt=MIN_HUMAN_RATINGS)
    counts = CaptionPair.objects.game().aggregate(
        game_pairs=Count("id"),
        priming_waiting=Count("id", filter=Q(priming_status__in=[PrimingStatus.PENDING, PrimingStatus.RUNNING])),
        priming_failed=Count("id", filter=Q(priming_status=PrimingStatus.FAILED)),
        kept_out=Count("id", filter=Q(withdrawn_at__isnull=False)),
        ratings=Sum("human_count"),
        past_sum=Sum("human_count", filter=past),
        past_pairs=Count("id", filter=past),
        **buckets,
        **open_short,
    )
    counts["past_minimum"] = (counts.pop("past_sum") or 0) - MIN_HUMAN_RATINGS * counts.pop("past_pairs")
    counts["validated"] = CaptionPair.objects.validated().count()
    return counts


def _hour_of(field: str) -> Expression:
    """The UTC hour of a timestamp, in the database: a datetime, or on SQLite its text (Django's
    SQLite TruncHour is a Python function called once per row: 1.2 s for 69K ratings, where
    SQLite's own strftime takes milliseconds; bench/bench_progress.py)."""
    if connection.vendor == "sqlite":
        return Func(Value("%Y-%m-%d %H"), F(field), function="strftime", output_field=CharField())
    return TruncHour(field, tzinfo=UTC)


def _ratings_per_hour(start: datetime, now: datetime) -> tuple[list[int], list[int]]:
    """Counted game ratings and the other ratings submitted in each hour from ``start`` to ``now``."""
    rows = (
        Rating.objects.filter(submitted_at__gte=start, submitted_at__lte=now)
        .annotate(hour=_hour_of("submitted_at"))
        .values("hour")
        .annotate(counted=Count("id", filter=counted_ratings()), total=Count("id"))
        .order_by()
    )
    counted, other = [0] * CHART_HOURS, [0] * CHART_HOURS
    for row in rows:
        hour = row["hour"]
        if isinstance(hour, str):
            hour = datetime.strptime(hour, "%Y-%m-%d %H").replace(tzinfo=UTC)
        index = int((hour - start).total_seconds() // 3600)
        counted[index] += row["counted"]
        other[index] += row["total"] - row["counted"]
    return counted, other


def _rate(counted: list[int], chart_start: datetime, now: datetime) -> tuple[float, datetime]:
    """Counted game ratings an hour over the last day; when the days before it had none (a study
    younger than a day), since the hour of the first one; never over less than an hour."""
    first = CHART_HOURS - RATE_HOURS
    if not any(counted[:first]):
        first = next((index for index in range(first, CHART_HOURS) if counted[index]), first)
    since = chart_start + timedelta(hours=first)
    hours = max((now - since).total_seconds() / 3600, 1.0)
    return sum(counted[first:]) / hours, since


def _active_raters(now: datetime) -> dict[str, int]:
    """The study's raters who submitted a rating (any stage) in the last hour and the last day."""
    raters = RaterProfile.objects.raters().values("user_id")
    recent = Rating.objects.filter(submitted_at__gte=now - timedelta(days=1), submitted_at__lte=now)
    return recent.filter(rater_id__in=raters).aggregate(
        day=Count("rater_id", distinct=True),
        hour=Count("rater_id", distinct=True, filter=Q(submitted_at__gte=now - timedelta(hours=1))),
    )
