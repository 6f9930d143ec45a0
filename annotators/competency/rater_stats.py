"""Per-rater behaviour statistics from flat arrays of ratings (pure: numpy only, no Django).

The input is one row per rating, sorted by rater and then by submission time, with ``group``
the rater's index (0..n_groups-1). Every statistic is computed for all raters at once with
grouped numpy operations (bincount, lexsort), so the cost does not grow with one database
query, or one Python loop, per rater.

Agreement uses the VICR paper's rubric (section 4) on the distance ``|rating - reference|``:
exact agreement (EA) at 0, adjacent agreement (AA) at 1, lack of agreement (LA) above 1.
"""

from dataclasses import dataclass

import numpy as np


def leave_one_out_consensus(
    pair_sum: np.ndarray, pair_count: np.ndarray, value: np.ndarray, counted: np.ndarray
) -> np.ndarray:
    """Consensus of the OTHER counted ratings on each rating's pair; NaN when there are none.

    pair_sum, pair_count: per rating, the sum and number of the counted (non-excluded human
    game) ratings on its pair; counted: whether this rating is one of them (then it is left
    out). The consensus is the mean rounded half up (SPEC section 3, as
    ``scoring.consensus.consensus_rating``), here in integer arithmetic so that it is exact
    and vectorised: round_half_up(s / n) = floor((2 s + n) / (2 n)) for whole numbers.
    """
    counted = np.asarray(counted, dtype=bool)
    others_sum = np.asarray(pair_sum, dtype=np.int64) - np.where(counted, value, 0).astype(np.int64)
    others_n = np.asarray(pair_count, dtype=np.int64) - counted.astype(np.int64)
    safe_n = np.maximum(others_n, 1)
    consensus = ((2 * others_sum + safe_n) // (2 * safe_n)).astype(float)
    return np.where(others_n > 0, consensus, np.nan)


def round_half_up(values: np.ndarray) -> np.ndarray:
    """Round to the nearest whole number, halves up (2.5 -> 3), NaN kept: the game's rounding."""
    return np.floor(np.asarray(values, dtype=float) + 0.5)


def rolling_share(hits: np.ndarray, valid: np.ndarray, window: int) -> np.ndarray:
    """Share of hits among the last ``window`` valid entries, at every position (NaN before any).

    Invalid entries (no reference) neither count nor shift the window; their position gets
    the share so far, so the curve is defined at every rating.
    """
    valid = np.asarray(valid, dtype=bool)
    hits = np.asarray(hits, dtype=bool) & valid
    valid_cum = np.cumsum(valid)
    hit_cum = np.concatenate([[0], np.cumsum(hits[valid])])
    # Number of valid entries seen up to each position, and the start of the window among them.
    upto = valid_cum
    start = np.maximum(upto - window, 0)
    seen = upto - start
    with np.errstate(invalid="ignore", divide="ignore"):
        share = (hit_cum[upto] - hit_cum[start]) / seen
    return np.where(seen > 0, share, np.nan)


@dataclass(frozen=True)
class GroupStats:
    """One array per statistic, one entry per rater (group). Rates are NaN without data."""

    n: np.ndarray  # ratings
    n_game: np.ndarray  # game ratings
    n_reference: np.ndarray  # ratings with a reference (consensus or expert rating)
    exact_rate: np.ndarray
    adjacent_rate: np.ndarray
    lack_rate: np.ndarray
    mean_abs_deviation: np.ndarray
    median_seconds: np.ndarray
    near_floor_share: np.ndarray
    longest_run: np.ndarray
    modal_share: np.ndarray  # share of the rater's most frequent rating value
    n_primed: np.ndarray  # game ratings on a pair with a first model prime
    prime_equal_share: np.ndarray
    # Of the primed game ratings that also have a consensus of other raters: how much more often
    # the rating equals the prime than the consensus (share equal to the prime minus share equal
    # to the consensus; NaN without such ratings).
    n_primed_compared: np.ndarray
    prime_over_consensus: np.ndarray


def _rate(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, numerator / np.maximum(denominator, 1), np.nan)


def _group_median(group: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    order = np.lexsort((values, group))
    sorted_values = values[order]
    counts = np.bincount(group, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    lower = starts + np.maximum(counts - 1, 0) // 2
    upper = starts + counts // 2
    median = np.full(n_groups, np.nan)
    has = counts > 0
    median[has] = (sorted_values[lower[has]] + sorted_values[np.minimum(upper[has], len(values) - 1)]) / 2
    return median


def _longest_runs(group: np.ndarray, value: np.ndarray, n_groups: int) -> np.ndarray:
    """Longest run of identical consecutive values per group (rows already in group order)."""
    longest = np.zeros(n_groups, dtype=np.int64)
    if value.size == 0:
        return longest
    new_run = np.ones(value.size, dtype=bool)
    new_run[1:] = (value[1:] != value[:-1]) | (group[1:] != group[:-1])
    starts = np.flatnonzero(new_run)
    lengths = np.diff(np.append(starts, value.size))
    np.maximum.at(longest, group[starts], lengths)
    return longest


def group_stats(
    group: np.ndarray,
    n_groups: int,
    value: np.ndarray,
    reference: np.ndarray,
    seconds: np.ndarray,
    is_game: np.ndarray,
    prime: np.ndarray,
    floor_seconds: np.ndarray | float,
) -> GroupStats:
    """Statistics per rater from rows sorted by (group, submission time).

    value: ratings 1..5; reference: the consensus or expert rating each is compared with
    (NaN: none); seconds: submitted - served; prime: the pair's first model prime (NaN: none);
    near the floor means ``seconds <= floor_seconds + 1`` (the floor of each row, or one for all).
    """
    group = np.asarray(group, dtype=np.int64)
    value = np.asarray(value, dtype=np.int64)
    reference = np.asarray(reference, dtype=float)
    seconds = np.asarray(seconds, dtype=float)
    is_game = np.asarray(is_game, dtype=bool)
    prime = np.asarray(prime, dtype=float)

    def count(mask: np.ndarray) -> np.ndarray:
        return np.bincount(group, mask.astype(float), n_groups)

    n = np.bincount(group, minlength=n_groups)
    has_reference = np.isfinite(reference)
    distance = np.where(has_reference, np.abs(value - np.nan_to_num(reference)), np.nan)
    n_reference = count(has_reference)
    primed = is_game & np.isfinite(prime)
    prime_equal = primed & (value == np.nan_to_num(round_half_up(prime)))
    n_primed = count(primed)
    compared = primed & has_reference
    n_compared = count(compared)
    prime_over_consensus = _rate(count(compared & prime_equal) - count(compared & (distance == 0)), n_compared)
    by_value = np.bincount(group * 5 + (value - 1), minlength=n_groups * 5).reshape(n_groups, 5)
    return GroupStats(
        n=n,
        n_game=count(is_game).astype(np.int64),
        n_reference=n_reference.astype(np.int64),
        exact_rate=_rate(count(distance == 0), n_reference),
        adjacent_rate=_rate(count(distance == 1), n_reference),
        lack_rate=_rate(count(distance > 1), n_reference),
        mean_abs_deviation=_rate(np.bincount(group, np.nan_to_num(distance), n_groups), n_reference),
        median_seconds=_group_median(group, seconds, n_groups),
        near_floor_share=_rate(count(seconds <= floor_seconds + 1), n),
        longest_run=_longest_runs(group, value, n_groups),
        modal_share=_rate(by_value.max(axis=1), n),
        n_primed=n_primed.astype(np.int64),
        prime_equal_share=_rate(count(prime_equal), n_primed),
        n_primed_compared=n_compared.astype(np.int64),
        prime_over_consensus=prime_over_consensus,
    )
