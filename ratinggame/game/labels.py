"""The raters' ordinal models, refitted from the study's ratings, and the pairs' evidence kept in
step with them (SPEC 5.1; the model is ``scoring.ordinal``'s).

The rating path adds each rating's evidence under the pair's row lock with the rater's model as
it stands (``aggregates.pair_rating_add``). A refit (``ratinggame.tasks.refit_rater_models``,
checked every 30 s, run once ``REFIT_RATINGS`` ratings came in since the last: ``refit_due``)
fits every rater again over every counted game rating and every control rating (whose expert
level is known truth), stores the models on the raters' profiles and the level prior it fitted
with them (``models.LevelPrior``), and rebuilds the evidence and rank of the pairs the policy
still decides about (3 to 6 counted ratings), each under its row lock: a rater found careless
since their ratings counts for less, and a pair that looked settled on that rater's word is
opened again.

The refit follows the ratings rather than the clock because every rating made by a rater no fit
has seen is read with the population's model: a careless rater's random answers then look like
an honest rater's disagreement (more ratings for the pair) or agreement (a wrong label settled).
In ``bench/bench_cost.py``'s study (30 raters, 10% careless), no refit before the study's end saved
a tenth of the ratings of "unanimous" at a lower accuracy; a refit every 300 ratings, a quarter
(docs/benchmarks.md).
"""

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from annotators.models import RaterProfile
from ratinggame.game.assignment import pair_rank_refresh
from ratinggame.game.prior import level_prior_store
from ratinggame.models import (
    MAX_HUMAN_RATINGS,
    MIN_HUMAN_RATINGS,
    CaptionPair,
    LevelPrior,
    Pool,
    Rating,
    counted_ratings,
)
from scoring import ordinal

# Pairs whose evidence is rebuilt per transaction (each locks this many rows at most).
REFRESH_BATCH = 200
# While fewer than REFIT_RATINGS ratings came in, a fit older than this is made again anyway.
REFIT_AT_LEAST_EVERY = timedelta(minutes=30)


@dataclass(frozen=True)
class Refit:
    raters: int
    ratings: int
    pairs_reopened: int
    pairs_settled: int
    population: ordinal.RaterModel


def fitted_ratings() -> QuerySet:
    """The ratings a fit reads: every counted game rating and every non-excluded control rating."""
    return Rating.objects.filter(counted_ratings() | Q(stage=Pool.CONTROL, excluded=False))


def rater_ratings(through: int) -> tuple[list[tuple], dict[int, int]]:
    """(pair, rater, value) of the ratings a fit reads, up to the rating id ``through``, and the
    control pairs' expert levels (the ratings whose truth is known)."""
    ratings = fitted_ratings().filter(pk__lte=through).order_by("id")
    rows = list(ratings.values_list("pair_id", "rater_id", "value"))
    known = dict(
        CaptionPair.objects.filter(pool=Pool.CONTROL, expert_rating__isnull=False).values_list("id", "expert_rating")
    )
    return rows, known


def refit_due(now: datetime | None = None) -> bool:
    """Whether the raters' models should be fitted again: ``REFIT_RATINGS`` ratings a fit reads
    came in since the last fit (any, before the first), or some did and the last fit is older
    than ``REFIT_AT_LEAST_EVERY``. One count over the ratings' primary key."""
    last = LevelPrior.objects.only("fitted_at", "ratings_through").first()
    since = fitted_ratings() if last is None else fitted_ratings().filter(pk__gt=last.ratings_through)
    new = since.count()
    if last is None or new == 0:
        return new > 0
    return (
        new >= settings.RATINGGAME["REFIT_RATINGS"] or (now or timezone.now()) - last.fitted_at >= REFIT_AT_LEAST_EVERY
    )


def rater_models_refit(now: datetime | None = None) -> Refit | None:
    """Fit and store every rater's model, then bring the undecided pairs in step; None without ratings."""
    through = fitted_ratings().aggregate(latest=Max("id"))["latest"]
    if through is None:
        return None
    rows, known = rater_ratings(through)
    if not rows:
        return None
    fit = ordinal.raters_fit(rows, known)
    profiles = list(RaterProfile.objects.filter(user_id__in=list(fit.raters)).only("id", "user_id"))
    for profile in profiles:
        model = fit.raters[profile.user_id]
        profile.label_precision, profile.label_severity, profile.label_lapse = (
            model.precision,
            model.severity,
            model.lapse,
        )
    RaterProfile.objects.bulk_update(profiles, ["label_precision", "label_severity", "label_lapse"], batch_size=1000)
    level_prior_store(
        fit.levels, pairs=len({pair for pair, _, _ in rows} - set(known)), ratings_through=through, now=now
    )
    reopened, settled = pairs_evidence_refresh()
    return Refit(len(profiles), len(rows), reopened, settled, fit.population)


def pairs_evidence_refresh() -> tuple[int, int]:
    """Rebuild the evidence and rank of game pairs with 3 to 6 counted ratings, each batch under
    its rows' locks; (pairs that take raters again, pairs that stopped taking them)."""
    candidates = list(
        CaptionPair.objects.game()
        .filter(human_count__gte=MIN_HUMAN_RATINGS, human_count__lt=MAX_HUMAN_RATINGS)
        .order_by("id")
        .values_list("id", flat=True)
    )
    reopened = settled = 0
    for start in range(0, len(candidates), REFRESH_BATCH):
        ids = candidates[start : start + REFRESH_BATCH]
        with transaction.atomic():
            pairs = list(CaptionPair.objects.select_for_update(no_key=True).filter(pk__in=ids).order_by("id"))
            evidence = Rating.objects.counted().label_evidence(ids)
            changed = []
            for pair in pairs:
                before = pair.assign_rank
                pair.label_evidence = evidence[pair.pk]
                pair_rank_refresh(pair)
                reopened += before is None and pair.assign_rank is not None
                settled += before is not None and pair.assign_rank is None
                changed.append(pair)
            CaptionPair.objects.bulk_update(changed, ["label_evidence", "assign_rank"])
    return reopened, settled
