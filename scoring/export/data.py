"""What a dataset export holds, read from the database in a few bulk queries (no query per pair).

Only game ratings of game pairs that are not excluded count (SPEC section 6): tutorial and
probation ratings, excluded ratings (a failed qualification window, a drift, a withdrawal) and
model primes (`scoring.ModelRating`) are never exported as ratings. A pair is exported when it
has at least ``min_ratings`` such ratings. The ratings of control pairs (expert-rated pairs
hidden in the game, SPEC 2.5) are never part of the pairs or their ratings: they are read apart,
as ``control_ratings`` (not excluded ones only). Raters appear under pseudonyms r001, r002, ...
given in the order of their first exported rating (game ratings first, then control ratings):
stable within an export, unrelated to usernames or user ids.
"""

import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count

from annotators.journey import control_agreement
from annotators.models import ProbationRound, RaterProfile
from ratinggame.models import CaptionPair, LevelPrior, Pool, Rating
from scoring import ordinal
from scoring.export.formats import iso_utc
from scoring.models import ModelRating
from scoring.priming.registry import EXPLAINED_METRICS

Progress = Callable[[float, str], None]
_CHUNK = 5000
NO_REASON = "(no reason recorded)"


@dataclass
class ExportPair:
    id: int
    image_id: int
    image_name: str  # storage name, e.g. images/ab/<sha256>.png
    image_sha256: str
    image_original_name: str
    caption: str
    source: str
    image_source: str  # where the image came from (collection, URL, licence), as imported
    references: list[str]  # reference captions of the image, as imported (may be empty)
    ratings: list[int] = field(default_factory=list)
    # The ordinal rater model's label (scoring.ordinal: the most probable level given each rating
    # and its rater's model as it is now) and its probability.
    label: int | None = None
    label_probability: float | None = None


@dataclass(frozen=True)
class ExportRating:
    pair_id: int
    rater: str  # pseudonym
    value: int
    submitted_at: datetime
    seconds: float


@dataclass(frozen=True)
class ControlRating:
    """A rating of a control pair, with the experts' rating it is checked against."""

    pair_id: int
    image_name: str
    caption: str
    expert_rating: int
    rater: str  # pseudonym
    value: int
    agreement: int  # exact 2, adjacent 1, otherwise 0
    submitted_at: datetime
    seconds: float

    @property
    def when(self) -> tuple[datetime, float]:
        return self.submitted_at, self.seconds


@dataclass(frozen=True)
class ModelColumn:
    metric: str
    model_identity: str
    stem: str  # column name stem: score__<stem>__raw / __calibrated (/ __explanation)

    @property
    def explained(self) -> bool:
        """Whether the metric's primes may carry the model's explanation (a column of its own)."""
        return self.metric in EXPLAINED_METRICS


@dataclass
class ExportData:
    pairs: list[ExportPair]
    ratings: list[ExportRating]
    model_columns: list[ModelColumn]
    # (metric, model identity) -> pair id -> (raw score, calibrated rating)
    model_scores: dict[tuple[str, str], dict[int, tuple[float, float]]]
    counts: dict
    # user id -> pseudonym of every exported rater (never written out; for joining per-rater data)
    pseudonyms: dict[int, str] = field(default_factory=dict)
    # (metric, model identity) -> pair id -> the model's explanation of its score, where it gave one
    model_explanations: dict[tuple[str, str], dict[int, str]] = field(default_factory=dict)
    control_ratings: list[ControlRating] = field(default_factory=list)


def export_data_collect(*, min_ratings: int, progress: Progress | None = None) -> ExportData:
    """Read the exportable pairs, their ratings and model scores, and the counts around them."""
    report = progress or (lambda fraction, message: None)
    rows = _valid_rating_rows(report)
    per_pair: dict[int, list[int]] = defaultdict(list)
    for pair_id, _, value, _, _ in rows:
        per_pair[pair_id].append(value)
    kept = {pair_id for pair_id, values in per_pair.items() if len(values) >= min_ratings}

    report(0.8, "Reading pairs")
    pairs, game_pairs = _pairs(kept, per_pair)
    control_rows = _control_rating_rows()
    pseudonyms = _pseudonyms(
        [rater_id for pair_id, rater_id, *_ in rows if pair_id in kept] + [row[4] for row in control_rows]
    )
    controls = [
        ControlRating(
            pair_id,
            image,
            caption,
            expert,
            pseudonyms[rater_id],
            value,
            control_agreement(value, expert),
            submitted,
            (submitted - served).total_seconds(),
        )
        for pair_id, image, caption, expert, rater_id, value, served, submitted in control_rows
    ]
    ratings = [
        ExportRating(pair_id, pseudonyms[rater_id], value, submitted, (submitted - served).total_seconds())
        for pair_id, rater_id, value, served, submitted in rows
        if pair_id in kept
    ]
    report(0.9, "Reading model scores")
    columns, scores, explanations = _model_scores(kept)
    counts = {
        "pairs": len(pairs),
        "images": len({pair.image_id for pair in pairs}),
        "ratings": len(ratings),
        "raters": len(pseudonyms),
        "game_pairs": game_pairs,
        "pairs_left_out_too_few_ratings": game_pairs - len(pairs),
        "ratings_on_left_out_pairs": len(rows) - len(ratings),
        "excluded_ratings": _excluded_counts(),
        "tutorial_and_probation_ratings": _stage_counts(),
        "control_ratings": len(controls),
        "control_pairs": len({rating.pair_id for rating in controls}),
        "model_scores": sum(len(by_pair) for by_pair in scores.values()),
        **_rater_background(pseudonyms),
        **_timing(ratings),
    }
    report(1.0, "Read")
    return ExportData(pairs, ratings, columns, scores, counts, pseudonyms, explanations, controls)


def _valid_rating_rows(report: Progress) -> list[tuple]:
    valid = Rating.objects.counted().filter(pair__pool=Pool.GAME)
    total = max(valid.count(), 1)
    rows = []
    fields = ("pair_id", "rater_id", "value", "served_at", "submitted_at")
    query = valid.order_by("submitted_at", "id").values_list(*fields)
    for index, row in enumerate(query.iterator(chunk_size=_CHUNK)):
        if index % _CHUNK == 0:
            report(0.7 * index / total, f"Reading ratings ({index} of {total})")
        rows.append(row)
    return rows


def _control_rating_rows() -> list[tuple]:
    """The counted ratings of control pairs, oldest first, with what each is checked against."""
    fields = ("pair_id", "pair__image__file", "pair__caption", "pair__expert_rating", "rater_id", "value")
    query = Rating.objects.counted_controls().filter(pair__expert_rating__isnull=False)
    return list(query.order_by("submitted_at", "id").values_list(*fields, "served_at", "submitted_at"))


def _pairs(kept: set[int], per_pair: dict[int, list[int]]) -> tuple[list[ExportPair], int]:
    fields = ("id", "image_id", "image__file", "image__sha256", "image__original_name", "caption", "source")
    fields += ("image__source", "references")
    pairs, game_pairs = [], 0
    for row in CaptionPair.objects.game().order_by("id").values_list(*fields).iterator(chunk_size=_CHUNK):
        game_pairs += 1
        if row[0] in kept:
            pairs.append(ExportPair(*row, ratings=per_pair[row[0]]))
    evidence = Rating.objects.counted().label_evidence([pair.id for pair in pairs])
    levels = LevelPrior.in_force()
    for pair in pairs:
        pair.label, pair.label_probability = ordinal.label_of(evidence[pair.id], levels)
    return pairs, game_pairs


def _pseudonyms(rater_ids) -> dict[int, str]:
    order = list(dict.fromkeys(rater_ids))
    width = max(3, len(str(len(order))))
    return {rater_id: f"r{number:0{width}d}" for number, rater_id in enumerate(order, start=1)}


def _model_scores(kept: set[int]) -> tuple[list[ModelColumn], dict, dict]:
    scores: dict[tuple[str, str], dict[int, tuple[float, float]]] = defaultdict(dict)
    explanations: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    query = ModelRating.objects.filter(pair__pool=Pool.GAME).order_by("pair_id", "slot")
    for pair_id, metric, identity, raw, value, explanation in query.values_list(
        "pair_id", "metric", "model_identity", "raw_score", "value", "explanation"
    ).iterator(chunk_size=_CHUNK):
        if pair_id in kept and pair_id not in scores[(metric, identity)]:
            # Both primes of a pair may come from one model: the first slot's score stands for it.
            scores[(metric, identity)][pair_id] = (raw, value)
            if explanation:
                explanations[(metric, identity)][pair_id] = explanation
    columns, stems = [], set()
    for metric, identity in sorted(scores):
        stem = base = re.sub(r"[^a-z0-9]+", "_", f"{metric}_{identity}".lower()).strip("_") or "model"
        suffix = 1
        while stem in stems:  # two identities that differ only in punctuation
            suffix += 1
            stem = f"{base}_{suffix}"
        stems.add(stem)
        columns.append(ModelColumn(metric, identity, stem))
    return columns, dict(scores), dict(explanations)


def _excluded_counts() -> dict:
    query = (
        Rating.objects.filter(stage=Pool.GAME, pair__pool=Pool.GAME, excluded=True)
        .values_list("excluded_reason")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_reason: dict[str, int] = defaultdict(int)
    for reason, n in query:
        by_reason[reason.strip() or NO_REASON] += n
    return {"total": sum(by_reason.values()), "by_reason": dict(sorted(by_reason.items()))}


def _stage_counts() -> dict[str, int]:
    query = Rating.objects.filter(stage__in=(Pool.TUTORIAL, Pool.PROBATION)).values_list("stage")
    query = query.annotate(n=Count("id")).order_by()
    found = dict(query)
    return {stage: found.get(stage, 0) for stage in (Pool.TUTORIAL, Pool.PROBATION)}


def _rater_background(pseudonyms: dict[int, str]) -> dict:
    """How the exported raters entered the game: straight from the tutorial or through probation."""
    tutorial_scores = [
        score
        for user_id, score in RaterProfile.objects.values_list("user_id", "tutorial_score").iterator()
        if user_id in pseudonyms and score is not None
    ]
    on_probation = {
        user_id
        for user_id in ProbationRound.objects.values_list("profile__user_id", flat=True).distinct()
        if user_id in pseudonyms
    }
    return {
        "raters_through_probation": len(on_probation),
        "raters_mean_tutorial_score": statistics.fmean(tutorial_scores) if tutorial_scores else None,
    }


def _timing(ratings: list[ExportRating]) -> dict:
    if not ratings:
        keys = ("seconds_per_rating_mean", "seconds_per_rating_median", "first_rating", "last_rating")
        return dict.fromkeys(keys)
    seconds = [rating.seconds for rating in ratings]
    return {
        "seconds_per_rating_mean": statistics.fmean(seconds),
        "seconds_per_rating_median": statistics.median(seconds),
        "first_rating": iso_utc(min(rating.submitted_at for rating in ratings)),
        "last_rating": iso_utc(max(rating.submitted_at for rating in ratings)),
    }
