"""Which Calibration turns a model's raw scores into primes, and refitting them (SPEC section 4).

A calibration belongs to one (metric, scorer) pair, named by ``calibration_key``: CLIP-S and
RefCLIP-S of the same checkpoint have different raw distributions, so each gets its own map.
Refits create a new Calibration row (old ones stay: every ModelRating keeps the one that
produced it); primes already stored are not rewritten.
"""

from django.db import transaction
from django.db.models import F

from ratinggame.models import CaptionPair
from scoring.models import Calibration, ModelRating
from scoring.priming import calibration
from scoring.priming.registry import scorer_class

IDENTITY_LENGTH = 300


def calibration_key(metric: str, model_identity: str) -> str:
    return f"{metric}@{model_identity}"[:IDENTITY_LENGTH]


def current_calibration(metric: str, model_identity: str) -> Calibration:
    """The newest calibration for the metric of this model; one with the scorer's default map
    (the registry's for ``metric``) is created if none exists."""
    key = calibration_key(metric, model_identity)
    found = Calibration.objects.filter(model_identity=key).order_by("-created_at", "-id").first()
    if found is not None:
        return found
    x, y = scorer_class(metric).default_knots()
    return Calibration.objects.create(model_identity=key, method=Calibration.Method.DEFAULT, x_knots=x, y_knots=y)


def refit(key: str) -> Calibration:
    """Fit the calibration named ``key`` on its primes of validated pairs (>= 3 human ratings).

    Uses one raw score per pair (the lowest slot carrying this key's metric and model).
    Returns the new Calibration, or the newest one unchanged when the fit gives the same map.
    """
    metric, _, identity = key.partition("@")
    rows = (
        ModelRating.objects.filter(pair__in=CaptionPair.objects.validated(), metric=metric, model_identity=identity)
        .order_by("pair_id", "slot")
        .values_list("pair_id", "raw_score", "pair__human_sum", F("pair__human_count"))
    )
    raw, target, seen = [], [], set()
    for pair_id, raw_score, human_sum, human_count in rows:
        if pair_id in seen:
            continue
        seen.add(pair_id)
        raw.append(raw_score)
        target.append(human_sum / human_count)
    kind = scorer_class(metric)
    if kind.refit:
        method, x, y = calibration.choose_knots(raw, target)
    else:
        method, x, y = "default", *kind.default_knots()
    with transaction.atomic():
        latest = Calibration.objects.filter(model_identity=key).order_by("-created_at", "-id").first()
        if latest and latest.method == method and latest.x_knots == x and latest.y_knots == y:
            return latest
        return Calibration.objects.create(
            model_identity=key,
            method=method,
            x_knots=x,
            y_knots=y,
            fitted_on_pairs=len(raw) if method != "default" else 0,
        )


def refit_all() -> list[Calibration]:
    """Refit every calibration in use (one per metric and model that has primes) of a registered scorer."""
    keys = set(
        calibration_key(metric, identity)
        for metric, identity in ModelRating.objects.values_list("metric", "model_identity").distinct()
    )
    keys |= set(Calibration.objects.values_list("model_identity", flat=True).distinct())
    return [refit(key) for key in sorted(keys) if _has_scorer(key.partition("@")[0])]


def _has_scorer(metric: str) -> bool:
    try:
        scorer_class(metric)
    except KeyError:
        return False  # primes of no model (the demo's), or of a scorer since removed
    return True
