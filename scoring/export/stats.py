"""Per-pair summaries and dataset statistics of an export (SPEC section 6). No Django import.

The agreement statistics themselves are `scoring.agreement`; this module adds what the export
reports around them: the mean / rounded consensus / sd of each pair, the rating distribution
of the rounded means (the paper's Figure 4), per-source distributions and the metric
correlation table (the paper's Table 4 analogue).
"""

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

import numpy as np

from scoring import bootstrap
from scoring.agreement import BOUNDS, all_ratings_report, tau_c, virtual_rater_report
from scoring.consensus import consensus_from_aggregates

SCALE = (1, 2, 3, 4, 5)
# Documented minimums below which a statistic is shown as "too few to interpret": with fewer
# pairs a τ_c or κ moves by tens of points from one pair to the next (the audit saw τ_c = 100.0
# from a test split of 4 pairs of 1 image), and pairs of one image are not independent.
MIN_PAIRS_TO_INTERPRET = 30
MIN_IMAGES_TO_INTERPRET = 10

# The paper's Table 3 (VICR paper section 6; SPEC section 6), on the ×100 scale.
PAPER_TABLE3 = {
    "VICR": {"tau_X_YZ": 75.6, "tau_Y_XZ": 77.8, "tau_Z_XY": 78.1, "kendall_w": 93.8, "fleiss_kappa": 58.1},
    "Flickr8k-Expert": {"tau_X_YZ": 47.7, "tau_Y_XZ": 54.8, "tau_Z_XY": 54.0, "kendall_w": 84.0, "fleiss_kappa": 48.8},
}
# Row labels of the agreement table, in the paper's order (plus the two extra statistics).
AGREEMENT_ROWS = (
    ("tau_X_YZ", "Kendall τ_c, X against Y and Z"),
    ("tau_Y_XZ", "Kendall τ_c, Y against X and Z"),
    ("tau_Z_XY", "Kendall τ_c, Z against X and Y"),
    ("kendall_w", "Kendall's W"),
    ("fleiss_kappa", "Fleiss' κ (4 and 5 merged)"),
    ("fleiss_kappa_unmerged", "Fleiss' κ (5 categories)"),
    ("krippendorff_alpha", "Krippendorff's α (ordinal)"),
)


# Agreement over every rating (not only three virtual raters), in report order.
ALL_RATINGS_ROWS = (
    ("krippendorff_alpha_ordinal", "Krippendorff's α (ordinal)"),
    ("krippendorff_alpha_interval", "Krippendorff's α (interval)"),
    ("icc1", "ICC(1): one rating"),
    ("icc1k", "ICC(1,k): the mean of a pair's ratings"),
)


def pair_summary(ratings: Sequence[int]) -> tuple[float, int, float | None]:
    """(mean, rounded consensus, sd) of one pair's whole-number ratings.

    The consensus is the game's rule, `scoring.consensus.consensus_from_aggregates` (the mean
    rounded half up, SPEC section 3). The sd is the sample standard deviation (ddof = 1), the
    usual dispersion reported for a set of ratings; None for a single rating. Plain Python:
    numpy's per-call overhead dominates on lists of 3 to 7 values (31K calls per export).
    """
    count = len(ratings)
    if not count:
        raise ValueError("a pair needs at least one rating")
    total = sum(ratings)
    mean = total / count
    sd = math.sqrt(sum((value - mean) ** 2 for value in ratings) / (count - 1)) if count > 1 else None
    return mean, _consensus(count, total), sd


# The exact (Fraction) arithmetic of the consensus costs ~0.1 ms a call; whole-number ratings
# give at most a few hundred distinct (count, total) keys, so each is computed once.
_consensus = lru_cache(maxsize=4096)(consensus_from_aggregates)


def rating_distribution(consensus: Iterable[int]) -> dict[str, int]:
    """How many pairs have each rounded mean rating, keys "1".."5" (every level present)."""
    counts = Counter(consensus)
    return {str(level): counts.get(level, 0) for level in SCALE}


def source_distributions(consensus_by_source: Iterable[tuple[str, int]]) -> dict[str, dict[str, int]]:
    """`rating_distribution` per caption source, sources sorted by name."""
    grouped: dict[str, list[int]] = {}
    for source, consensus in consensus_by_source:
        grouped.setdefault(source, []).append(consensus)
    return {source: rating_distribution(grouped[source]) for source in sorted(grouped)}


def metric_correlation(
    scores: Mapping[object, float], ratings: Mapping[object, Sequence[int]], *, resamples: int = 0, seed: int = 0
) -> dict:
    """τ_c ×100 of a model score against the human ratings, "method A" (each rating its own row).

    For every pair that has a score, each of its human ratings is one row (score, rating), as
    in the VICR paper's Table 4 and CLIPScore's Appendix A; one τ_c is computed over all rows.
    Returns {"tau_c": value or None (fewer than 2 rows or a constant side), "pairs", "ratings",
    "too_few" (fewer than MIN_PAIRS_TO_INTERPRET pairs)}; with ``resamples``, also ``ci_low``,
    ``ci_high`` and ``se`` from a seeded bootstrap over pairs (``_tau_c_replicates``).
    """
    kept = [(score, list(ratings[pair])) for pair, score in scores.items() if score is not None and ratings.get(pair)]
    score_rows = [score for score, values in kept for _ in values]
    rating_rows = [value for _, values in kept for value in values]
    tau = tau_c(score_rows, rating_rows) * 100 if len(score_rows) >= 2 else math.nan
    result = {
        "tau_c": None if math.isnan(tau) else tau,
        "pairs": len(kept),
        "ratings": len(rating_rows),
        "too_few": len(kept) < MIN_PAIRS_TO_INTERPRET,
    }
    if resamples and not math.isnan(tau):
        pair_scores = np.array([score for score, _ in kept], dtype=np.float64)
        lengths = np.array([len(values) for _, values in kept])
        counts = bootstrap.level_counts(np.array(rating_rows), lengths).astype(np.float64)
        weights = bootstrap.multinomial_counts(np.ones(len(kept)), resamples, bootstrap.bootstrap_rng(seed))
        left_out, stands_for = bootstrap.jackknife_weights(np.ones(len(kept)))
        replicates = 100 * _tau_c_replicates(pair_scores, counts, np.vstack([np.ones(len(kept)), weights, left_out]))
        low, high, se = bootstrap.interval(
            replicates[1 : resamples + 1, None],
            whole=replicates[:1],
            reported=np.array([tau]),
            bounds=BOUNDS["tau_c"],
            jackknife=(replicates[resamples + 1 :, None], stands_for),
            units=len(kept),
        )
        result.update(ci_low=float(low[0]), ci_high=float(high[0]), se=float(se[0]))
    return result


def _tau_c_replicates(scores: np.ndarray, counts: np.ndarray, weights: np.ndarray, chunk: int = 100) -> np.ndarray:
    """Method-A τ_c for each row of ``weights`` (how often each pair is drawn), without scipy.

    ``counts``: pairs x 5, each pair's ratings per level. Rows of two pairs with different
    scores are concordant when the higher score has the higher rating: with the pairs sorted by
    score and A_u the rating counts of score level u, P - Q = Σ_u A_u · M (Σ_{v<u} A_v), M_kl =
    sign(k - l), one cumulative sum per resample. scipy's τ_c = 2 (P - Q) / (n² (m - 1) / m), m
    the smaller number of distinct values (the tests check it against scipy).
    """
    order = np.argsort(scores, kind="stable")
    _, starts = np.unique(scores[order], return_index=True)
    sign = np.sign(np.subtract.outer(np.arange(5), np.arange(5))).astype(np.float64)
    counts = counts[order]
    out = np.empty(len(weights))
    for first in range(0, len(weights), chunk):
        w = weights[first : first + chunk][:, order]
        by_level = np.add.reduceat(w[:, :, None] * counts[None], starts, axis=1)  # resamples x U x 5
        below = np.cumsum(by_level, axis=1) - by_level
        difference = (by_level * (below @ sign.T)).sum(axis=(1, 2))
        n = by_level.sum(axis=(1, 2))
        classes = np.minimum((by_level.sum(axis=2) > 0).sum(axis=1), (by_level.sum(axis=1) > 0).sum(axis=1))
        with np.errstate(divide="ignore", invalid="ignore"):
            tau = 2 * difference / (n**2 * (classes - 1) / classes)
        out[first : first + chunk] = np.where(classes > 1, tau, np.nan)
    return out


def agreement_block(ratings_per_pair: Sequence[Sequence[int]], *, samples: int, seed: int, resamples: int) -> dict:
    """The agreement statistics of one set of pairs, each with its 95% interval.

    {"virtual_raters": virtual_rater_report or None, "all_ratings": all_ratings_report or None,
    "pairs", "too_few" (fewer than MIN_PAIRS_TO_INTERPRET pairs with 3 ratings), "note"}.
    """
    note = ""
    try:
        virtual = virtual_rater_report(ratings_per_pair, samples=samples, seed=seed, resamples=resamples)
    except ValueError as error:  # fewer than 2 pairs with 3 ratings: nothing to compare
        virtual, note = None, str(error)
    try:
        everything = all_ratings_report(ratings_per_pair, resamples=resamples, seed=seed)
    except ValueError:
        everything = None
    used = virtual["pairs_used"] if virtual else 0
    return {
        "virtual_raters": virtual,
        "all_ratings": everything,
        "pairs": len(ratings_per_pair),
        "too_few": used < MIN_PAIRS_TO_INTERPRET,
        "note": note,
    }


def paper_comparison(virtual_raters: Mapping | None) -> dict[str, dict[str, dict]]:
    """Whether each of the paper's Table 3 figures lies inside our 95% interval.

    {dataset: {statistic: {"paper": figure, "inside": bool or None (no interval)}}}.
    """
    comparison: dict[str, dict[str, dict]] = {}
    for dataset, figures in PAPER_TABLE3.items():
        comparison[dataset] = {}
        for statistic, figure in figures.items():
            ours = (virtual_raters or {}).get(statistic) or {}
            low, high = ours.get("ci_low"), ours.get("ci_high")
            known = low is not None and high is not None and math.isfinite(low) and math.isfinite(high)
            comparison[dataset][statistic] = {"paper": figure, "inside": (low <= figure <= high) if known else None}
    return comparison


def json_safe(value: object) -> object:
    """``value`` with every NaN or infinity replaced by None, so that it is valid JSON."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    if isinstance(value, np.generic):
        return json_safe(value.item())
    return value
