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

from scoring.agreement import tau_c
from scoring.consensus import consensus_from_aggregates

SCALE = (1, 2, 3, 4, 5)

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


def metric_correlation(scores: Mapping[object, float], ratings: Mapping[object, Sequence[int]]) -> dict:
    """τ_c ×100 of a model score against the human ratings, "method A" (each rating its own row).

    For every pair that has a score, each of its human ratings is one row (score, rating), as
    in the VICR paper's Table 4 and CLIPScore's Appendix A; one τ_c is computed over all rows.
    Returns {"tau_c": value or None (fewer than 2 rows or a constant side), "pairs", "ratings"}.
    """
    score_rows: list[float] = []
    rating_rows: list[int] = []
    pairs = 0
    for pair, score in scores.items():
        pair_ratings = ratings.get(pair)
        if score is None or not pair_ratings:
            continue
        pairs += 1
        score_rows.extend([score] * len(pair_ratings))
        rating_rows.extend(pair_ratings)
    tau = tau_c(score_rows, rating_rows) * 100 if len(score_rows) >= 2 else math.nan
    return {"tau_c": None if math.isnan(tau) else tau, "pairs": pairs, "ratings": len(rating_rows)}


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
