"""The competency analysis of the VICR paper (section 4) on this site's ratings.

Items (the columns of the Partial Credit Model). The paper fits the PCM on the simulated
game's 25 pairs, each with a ground truth. Here three kinds of pairs have a reference:

* game pairs with at least 3 non-excluded human ratings (the validated dataset's threshold,
  SPEC section 6): each rating is scored against the **leave-one-out consensus** (the other
  non-excluded humans' mean, rounded half up), so nobody is compared with themselves and
  every reference rests on at least 2 other people;
* control pairs (SPEC 2.5): expert-rated pairs hidden in the game, the common items every
  rater meets, as the 25 pairs of the paper's validation study were; each rating is scored
  against the expert rating;
* tutorial and probation pairs: each rating is scored against the expert rating. A rater
  who rated a probation pair (or met a control pair) several times is scored on the first time
  only: later attempts may come after the expert rating was shown, and the PCM takes one
  response per cell.

The rubric is the paper's: exact agreement (EA) 2, adjacent (AA) 1, lack of agreement (LA)
0 (``annotators.competency.pcm.rubric_scores``). A rater's own excluded ratings are responses too (their
competency includes a failed window); they are never part of a consensus. Raters without
any response are not in the matrix.

Latent regression: competency on tutorial score in percent (of journey.TUTORIAL_MAX_POINTS), with
the competency refitted on the game pairs only (SPEC section 6; the tutorial score is made of
the tutorial pairs' scores, so keeping them in would make the regression circular), raters
with at least ``REGRESSION_MIN_RESPONSES`` game responses, weighted by precision
(``annotators.competency.regression``); the paper reports +0.17 logits per 10% of training
score (SE 0.03 per 10%). Its n is stored beside the coefficient, and ``too_few`` marks a slope
from fewer than ``REGRESSION_MIN_RATERS`` raters.

``details["converged"]`` (and ``regression["converged"]``) say whether each fit converged; every
page that shows the analysis warns when one did not.
"""

import time
from dataclasses import dataclass

import numpy as np
from django.db.models import Count

from annotators.competency.flags import load_rating_rows
from annotators.competency.pcm import fit_pcm, rubric_scores, thurstonian_thresholds
from annotators.competency.regression import game_competency_regression
from annotators.competency.wright_map import wright_map_svg
from annotators.journey import TUTORIAL_MAX_POINTS
from annotators.models import RaterProfile
from ratinggame.models import MIN_HUMAN_RATINGS, CaptionPair, Pool, Rating, counted_ratings
from scoring.aggregation import dawid_skene

PAPER_COEF_PER_10_PERCENT = 0.17
PAPER_SE_PER_10_PERCENT = 0.03


@dataclass(frozen=True)
class ResponseMatrix:
    responses: np.ndarray  # raters x items: 0 (LA), 1 (AA), 2 (EA) or NaN
    profile_ids: list[int]
    pair_ids: list[int]
    item_pools: list[str]
    tutorial_percent: np.ndarray  # per rater, NaN without a tutorial score


def build_responses() -> ResponseMatrix:
    """The raters x items rubric scores (see the module docstring for the choice of items)."""
    game_items = set(
        CaptionPair.objects.game()
        .annotate(n=Count("ratings", filter=counted_ratings("ratings__")))
        .filter(n__gte=MIN_HUMAN_RATINGS)
        .values_list("id", flat=True)
    )
    rows = load_rating_rows()
    # Rows are in (rater, submitted_at, id) order, so the first of a (rater, pair) is its first rating.
    keep = np.where(rows.is_game, np.isin(rows.pair_id, list(game_items)), True) & np.isfinite(rows.reference)
    rater_id, pair_id = rows.rater_id[keep], rows.pair_id[keep]
    score = rubric_scores(rows.value[keep], rows.reference[keep])
    _, first = np.unique(np.stack([rater_id, pair_id], axis=1), axis=0, return_index=True)
    first = np.sort(first)
    rater_id, pair_id, score = rater_id[first], pair_id[first], score[first]

    profiles = dict(RaterProfile.objects.values_list("user_id", "id"))
    known = np.asarray([r in profiles for r in rater_id.tolist()], dtype=bool)
    rater_id, pair_id, score = rater_id[known], pair_id[known], score[known]
    user_ids = np.unique(rater_id)
    item_ids = np.unique(pair_id)
    responses = np.full((user_ids.size, item_ids.size), np.nan)
    responses[np.searchsorted(user_ids, rater_id), np.searchsorted(item_ids, pair_id)] = score

    profile_ids = [profiles[u] for u in user_ids.tolist()]
    tutorial = dict(RaterProfile.objects.filter(pk__in=profile_ids).values_list("id", "tutorial_score"))
    percent = np.asarray(
        [np.nan if tutorial[p] is None else tutorial[p] / TUTORIAL_MAX_POINTS * 100 for p in profile_ids], dtype=float
    )
    pools = dict(CaptionPair.objects.filter(pk__in=item_ids.tolist()).values_list("id", "pool"))
    return ResponseMatrix(
        responses=responses,
        profile_ids=profile_ids,
        pair_ids=item_ids.tolist(),
        item_pools=[pools[p] for p in item_ids.tolist()],
        tutorial_percent=percent,
    )


def rater_quality() -> dict[str, float]:
    """Each rater's Dawid-Skene expected accuracy on the counted game ratings, by profile id.

    A second view of rater quality beside the PCM (``scoring.aggregation``): it needs no
    reference per rating, and it singles out raters who answer at random. Empty without ratings.
    """
    rows = list(Rating.objects.counted().filter(pair__pool=Pool.GAME).values_list("pair_id", "rater_id", "value"))
    if not rows:
        return {}
    profiles = dict(RaterProfile.objects.values_list("user_id", "id"))
    quality = dawid_skene(rows).rater_quality
    return {str(profiles[user]): value for user, value in quality.items() if user in profiles}


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def run_analysis() -> dict:
    """Fit the PCM, the latent regression and the Wright map; the fields of a CompetencyAnalysis.

    Raises ValueError when the ratings do not allow a fit (no responses, one category only).
    """
    started = time.monotonic()
    matrix = build_responses()
    if matrix.responses.size == 0:
        raise ValueError("no ratings with a reference yet: nothing to analyse")
    result = fit_pcm(matrix.responses)
    abilities = {
        str(pid): [_finite(a), _finite(se)]
        for pid, a, se in zip(matrix.profile_ids, result.abilities, result.ability_se, strict=True)
    }
    regression: dict = {}
    regression_note = ""
    try:
        regression = game_competency_regression(
            matrix.responses,
            np.asarray(matrix.item_pools) == Pool.GAME,
            matrix.tutorial_percent,
            scale_of=result.abilities,  # the Wright map's scale, where the regression is drawn
        )
        regression = {key: _finite(v) if isinstance(v, float) else v for key, v in regression.items()}
    except ValueError as error:  # too few game ratings or raters: the rest of the analysis stands
        regression_note = str(error)
    labels = [f"Pair {pid} ({pool})" for pid, pool in zip(matrix.pair_ids, matrix.item_pools, strict=True)]
    svg = wright_map_svg(
        result.abilities,
        thurstonian_thresholds(result.thresholds),
        labels,
        regression if regression.get("coef_per_percent") is not None else None,
        controls=np.asarray(matrix.item_pools) == Pool.CONTROL,
    )
    pools = np.asarray(matrix.item_pools)
    return {
        "n_raters": len(matrix.profile_ids),
        "n_items": len(matrix.pair_ids),
        "n_responses": int(np.isfinite(matrix.responses).sum()),
        "abilities": abilities,
        "regression": regression,
        "rater_quality": rater_quality(),
        "wright_map_svg": svg,
        "details": {
            "game_items": int(np.sum(pools == Pool.GAME)),
            "tutorial_items": int(np.sum(pools == Pool.TUTORIAL)),
            "probation_items": int(np.sum(pools == Pool.PROBATION)),
            "control_items": int(np.sum(pools == Pool.CONTROL)),
            "converged": bool(result.converged),
            "iterations": int(result.iterations),
            "extreme_raters": len(result.extreme_raters),
            "extreme_items": len(result.extreme_items),
            "categories": list(result.categories),
            "bias_factor": float(result.bias_factor),
            "conditioned_items": int(result.item_conditional.sum()),
            "median_ability": _finite(np.nanmedian(result.abilities)),
            "regression_note": regression_note,
        },
        "duration_seconds": time.monotonic() - started,
    }


def game_ratings_count() -> int:
    return Rating.objects.filter(stage=Pool.GAME).count()
