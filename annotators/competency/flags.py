"""Rater competency for staff: live per-rater statistics and behaviour flags.

All raters are computed together from a fixed handful of queries (profiles, ratings, pairs,
per-pair aggregates, probation rounds, open disputes) and numpy (``annotators.competency.rater_stats``);
there is no query per rater.

References each rating is compared with:

* game rating: the **leave-one-out consensus**, the mean of the OTHER non-excluded human game
  ratings of the same pair, rounded half up (SPEC section 3). A rating with no other such
  rating has no reference and is left out of the agreement figures. Model primes are not
  part of it: this measures agreement with people.
* tutorial and probation rating: the pair's expert rating (ground truth).

A rater's own excluded ratings (a failed qualification window) still count in the rater's
statistics, as they are the rater's behaviour; they never count in anyone's consensus.
Speed, runs and value shares are over all the rater's ratings in submission order, every stage.

Control pairs (expert-rated pairs hidden in the game, SPEC 2.5) are compared with their expert
rating like tutorial and probation pairs; each rater's control agreement (the rubric's mean:
exact 2, adjacent 1, otherwise 0) is reported overall and over the latest ratings the drift rule
reads (since the rater last entered the game, not excluded). Skips count the game pairs the rater
passed with "Skip this pair", against their game serves.

The flags raised from these statistics are the entries of ``annotators.competency.flag_rules``.
"""

from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    DurationField,
    Expression,
    ExpressionWrapper,
    F,
    FloatField,
    Func,
    Sum,
)

from annotators import journey
from annotators.competency.flag_rules import flags_for
from annotators.competency.rater_stats import group_stats, leave_one_out_consensus, rolling_share
from annotators.journey import ControlResult
from annotators.models import Dispute, DisputeStatus, ProbationRound, RaterProfile
from ratinggame.models import (
    SINCE_GAME_ENTRY,
    CaptionPair,
    Pool,
    Rating,
    counted_control_ratings,
)


@dataclass
class RaterStats:
    """One row of the staff dashboard. Rates are fractions 0..1, None without data."""

    profile_id: int
    user_id: int
    username: str
    state: str
    tutorial_score: int | None
    probation_rounds: int
    game_score: int
    ratings: int
    game_ratings: int
    rated_with_reference: int
    exact_rate: float | None
    adjacent_rate: float | None
    lack_rate: float | None
    mean_abs_deviation: float | None
    median_seconds: float | None
    near_floor_share: float | None
    longest_run: int
    modal_share: float | None
    primed_ratings: int
    primed_compared: int  # of them, on pairs with a consensus of other raters
    prime_equal_share: float | None
    prime_over_consensus: float | None
    open_disputes: int
    control_ratings: int = 0  # every control rating, excluded ones too
    control_agreement: float | None = None  # their mean agreement with the experts (0..2)
    control_recent: int = 0  # the latest ones the drift rule reads (since the last entry to the game)
    control_recent_agreement: float | None = None
    game_serves: int = 0
    skips: int = 0  # game pairs passed with "Skip this pair"
    flags: list[str] = field(default_factory=list)
    competency: float | None = None  # from the latest PCM analysis, filled by the caller
    rater_quality: float | None = None  # Dawid-Skene expected accuracy, from the same analysis

    @property
    def agreement_rate(self) -> float | None:
        """Exact or adjacent agreement."""
        if self.exact_rate is None:
            return None
        return self.exact_rate + self.adjacent_rate

    @property
    def skip_share(self) -> float | None:
        return self.skips / self.game_serves if self.game_serves else None


@dataclass(frozen=True)
class RatingRows:
    """Ratings of the selected raters, sorted by (rater, submitted_at, id), as arrays."""

    rating_id: np.ndarray
    rater_id: np.ndarray  # user id
    pair_id: np.ndarray
    stage: list[str]
    is_game: np.ndarray
    value: np.ndarray
    seconds: np.ndarray
    excluded: np.ndarray
    reference: np.ndarray  # leave-one-out consensus (game) or expert rating; NaN: none
    prime: np.ndarray  # the pair's first model prime; NaN: none


def floor_seconds(stages: list[str]) -> np.ndarray:
    """The delay floor of each rating's stage (annotators.journey.min_seconds)."""
    floors = {stage: journey.min_seconds(stage) for stage in set(stages)}
    return np.asarray([floors[stage] for stage in stages], dtype=float)


def flag_thresholds() -> dict:
    return dict(settings.RATINGGAME_FLAGS)


def _none(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)


def _seconds_spent() -> Expression:
    """submitted_at - served_at in the database: seconds (SQLite) or an interval (others)."""
    if connection.vendor == "sqlite":
        # Django's SQLite timestamp difference is a Python function called once per row
        # (3 s for 68K ratings); julianday() is SQLite's own, in days, to the millisecond.
        submitted, served = (
            Func(F(f), function="julianday", output_field=FloatField()) for f in ("submitted_at", "served_at")
        )
        return ExpressionWrapper((submitted - served) * 86400.0, output_field=FloatField())
    return ExpressionWrapper(F("submitted_at") - F("served_at"), output_field=DurationField())


def load_rating_rows(user_ids: list[int] | None = None) -> RatingRows:
    """All ratings (of ``user_ids`` when given) with their reference, in three queries.

    Seconds are computed by the database (submitted_at - served_at) and only the first prime
    is read from the JSON: turning 2 x 68K datetimes and 15K JSON lists into Python objects
    cost most of the time at VICR scale (bench/bench_competency.py).
    """
    ratings = Rating.objects.all()
    if user_ids is not None:
        ratings = ratings.filter(rater_id__in=user_ids)
    spent = _seconds_spent()
    rows = list(
        ratings.order_by("rater_id", "submitted_at", "id")
        .annotate(spent=spent)
        .values_list("id", "rater_id", "pair_id", "stage", "value", "excluded", "spent")
    )
    pairs = CaptionPair.objects.all()
    if user_ids is not None:
        pairs = pairs.filter(pk__in=ratings.values("pair_id"))
    pairs = {pk: (expert, prime) for pk, expert, prime in pairs.values_list("id", "expert_rating", "primes__0")}
    # Counted ratings (non-excluded human game ratings) per pair: the consensus population.
    counted = Rating.objects.counted()
    if user_ids is not None:
        counted = counted.filter(pair_id__in=ratings.values("pair_id"))
    aggregates = {
        pair: (total, count)
        for pair, total, count in counted.values("pair_id")
        .annotate(total=Sum("value"), count=Count("id"))
        .values_list("pair_id", "total", "count")
    }
    rating_id, rater_id, pair_id, stage, value, excluded, seconds = zip(*rows, strict=True) if rows else ([],) * 7
    pair_id = np.asarray(pair_id, dtype=np.int64)
    value = np.asarray(value, dtype=np.int64)
    is_game = np.asarray([s == Pool.GAME for s in stage], dtype=bool)
    excluded = np.asarray(excluded, dtype=bool)
    totals = [aggregates.get(p, (0, 0)) for p in pair_id.tolist()]
    pair_sum = np.asarray([t[0] for t in totals], dtype=np.int64)
    pair_count = np.asarray([t[1] for t in totals], dtype=np.int64)
    consensus = leave_one_out_consensus(pair_sum, pair_count, value, is_game & ~excluded)
    info = [pairs[p] for p in pair_id.tolist()]
    expert = np.asarray([np.nan if e is None else e for e, _ in info], dtype=float)
    # An attention check's "expert rating" is the answer its caption asked for: not an agreement.
    expert[np.asarray([s == Pool.ATTENTION for s in stage], dtype=bool)] = np.nan
    prime = np.asarray([_prime(p) for _, p in info], dtype=float)
    return RatingRows(
        rating_id=np.asarray(rating_id, dtype=np.int64),
        rater_id=np.asarray(rater_id, dtype=np.int64),
        pair_id=pair_id,
        stage=list(stage),
        is_game=is_game,
        value=value,
        seconds=np.asarray([d.total_seconds() if isinstance(d, timedelta) else d for d in seconds], dtype=float),
        excluded=excluded,
        reference=np.where(is_game, consensus, expert),
        prime=np.where(is_game, prime, np.nan),
    )


def _prime(value: object) -> float:
    # bool is an int: a stray True in the JSON is not a prime.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return np.nan


def control_agreements(profiles: list[RaterProfile]) -> dict[int, tuple[int, float | None, int, float | None]]:
    """Per user id: (control ratings, their mean agreement, the drift rule's latest, their mean).

    The drift rule's view is ``annotators.journey.drift_mean`` over the counted control ratings
    since the rater last entered the game (fewer than its window: the mean of those there are)."""
    rows = (
        Rating.objects.filter(stage=Pool.CONTROL, rater_id__in=[p.user_id for p in profiles])
        .annotate(counts=ExpressionWrapper(counted_control_ratings(SINCE_GAME_ENTRY), output_field=BooleanField()))
        .order_by("rater_id", "submitted_at", "id")
        .values_list("rater_id", "submitted_at", "value", "reference", "counts")
    )
    every: dict[int, list[int]] = {}
    recent: dict[int, list[ControlResult]] = {}
    for user_id, submitted_at, value, reference, counts in rows:
        agreement = journey.control_agreement(value, reference)
        every.setdefault(user_id, []).append(agreement)
        if counts:
            recent.setdefault(user_id, []).append(ControlResult(submitted_at, agreement))
    result = {}
    for user_id, scores in every.items():
        latest = recent.get(user_id, [])[-journey.drift_window() :]
        result[user_id] = (
            len(scores),
            sum(scores) / len(scores),
            len(latest),
            sum(r.agreement for r in latest) / len(latest) if latest else None,
        )
    return result


def rater_statistics(profile_ids: list[int] | None = None) -> list[RaterStats]:
    """Statistics and flags of every rater (or of ``profile_ids``), in profile order."""
    profiles = RaterProfile.objects.select_related("user").order_by("id")
    # Every rater: the study's (not staff, not withdrawn accounts); given profiles: whoever they are.
    profiles = profiles.filter(pk__in=profile_ids) if profile_ids is not None else profiles.raters()
    profiles = list(profiles)
    user_ids = [p.user_id for p in profiles]
    rounds = dict(
        ProbationRound.objects.filter(profile__in=profiles)
        .values("profile_id")
        .annotate(n=Count("id"))
        .values_list("profile_id", "n")
    )
    disputes = dict(
        Dispute.objects.filter(status=DisputeStatus.OPEN, rating__rater_id__in=user_ids)
        .values("rating__rater_id")
        .annotate(n=Count("id"))
        .values_list("rating__rater_id", "n")
    )
    rows = load_rating_rows(user_ids if profile_ids is not None else None)
    index_of = {user_id: i for i, user_id in enumerate(user_ids)}
    keep = np.asarray([r in index_of for r in rows.rater_id.tolist()], dtype=bool)
    group = np.asarray([index_of[r] for r in rows.rater_id[keep].tolist()], dtype=np.int64)
    stats = group_stats(
        group,
        len(profiles),
        rows.value[keep],
        rows.reference[keep],
        rows.seconds[keep],
        rows.is_game[keep],
        rows.prime[keep],
        floor_seconds(rows.stage)[keep],
    )
    thresholds = flag_thresholds()
    controls = control_agreements(profiles)
    result = []
    for i, profile in enumerate(profiles):
        control = controls.get(profile.user_id, (0, None, 0, None))
        row = RaterStats(
            profile_id=profile.pk,
            user_id=profile.user_id,
            username=profile.user.get_username(),
            state=profile.state,
            tutorial_score=profile.tutorial_score,
            probation_rounds=rounds.get(profile.pk, 0),
            game_score=profile.game_score,
            ratings=int(stats.n[i]),
            game_ratings=int(stats.n_game[i]),
            rated_with_reference=int(stats.n_reference[i]),
            exact_rate=_none(stats.exact_rate[i]),
            adjacent_rate=_none(stats.adjacent_rate[i]),
            lack_rate=_none(stats.lack_rate[i]),
            mean_abs_deviation=_none(stats.mean_abs_deviation[i]),
            median_seconds=_none(stats.median_seconds[i]),
            near_floor_share=_none(stats.near_floor_share[i]),
            longest_run=int(stats.longest_run[i]),
            modal_share=_none(stats.modal_share[i]),
            primed_ratings=int(stats.n_primed[i]),
            primed_compared=int(stats.n_primed_compared[i]),
            prime_equal_share=_none(stats.prime_equal_share[i]),
            prime_over_consensus=_none(stats.prime_over_consensus[i]),
            open_disputes=disputes.get(profile.user_id, 0),
            control_ratings=control[0],
            control_agreement=control[1],
            control_recent=control[2],
            control_recent_agreement=control[3],
            game_serves=profile.game_serves,
            skips=profile.game_skips,  # counted by each skip (ratinggame.game.skips)
        )
        row.flags = flags_for(row, thresholds)
        result.append(row)
    return result


@dataclass(frozen=True)
class Timeline:
    """A rater's ratings in order, for the timeline figure and the recent-ratings table."""

    rows: RatingRows
    exact_share: np.ndarray  # rolling share of exact agreement among ratings with a reference
    agreement_share: np.ndarray  # rolling share of exact or adjacent agreement
    window: int


def rater_timeline(profile: RaterProfile, *, window: int = 20) -> Timeline:
    """The rater's ratings with rolling agreement over the last ``window`` compared ratings."""
    rows = load_rating_rows([profile.user_id])
    valid = np.isfinite(rows.reference)
    distance = np.abs(rows.value - np.nan_to_num(rows.reference))
    return Timeline(
        rows=rows,
        exact_share=rolling_share(valid & (distance == 0), valid, window),
        agreement_share=rolling_share(valid & (distance <= 1), valid, window),
        window=window,
    )
