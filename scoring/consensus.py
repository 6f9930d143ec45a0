"""Consensus and player score of the rating game (SPEC section 3, the VICR paper's Algorithm 1).

For a pair, ``previous`` holds the ratings given before the player's: human ratings (whole
numbers 1..5) and the model primes still in place (continuous values on the 1..5 scale,
SPEC section 4). With ``n = len(previous) + 1``::

    r  = round_half_up(mean(previous))          # consensus shown to the player; 2.5 -> 3
    σ² = population variance of previous        # ddof = 0
    v  = 1 + (1/n) * (1 + (n - 1) * σ² / Vmax)  # Vmax = 4, the largest variance on 1..5
    d  = |x - r| / v
    s  = 2 if d <= 0.25 else 1 if d <= 0.5 else 0 if d <= 1 else -1 if d <= 1.75 else -2

The arithmetic is exact (``fractions.Fraction``) because whole-number ratings land exactly on
the thresholds (prev = [1, 5], x = 4 gives d = 0.5, which scores 1; six equal ratings and
|x - r| = 2 give d = 1.75, which scores -1), and there the rule, not float rounding, must decide.
Float arithmetic happens to land right for whole numbers (checked for up to 11 previous
ratings), but nothing guarantees it, and exact arithmetic costs nothing at this size. Floats
(primes, or sums of them) are converted exactly to fractions.

The game keeps O(1) aggregates per pair (count, sum, sum of squares), so every rule has an
aggregate form, ``*_from_aggregates``, giving the same result as the list form.
"""

import math
import numbers
from collections.abc import Iterable
from fractions import Fraction

V_MAX = Fraction(4)  # largest population variance of values on 1..5 (half at 1, half at 5)
MIN_RATING = 1
MAX_RATING = 5

# The most points one rating can score (exact agreement).
BEST_SCORE = 2
# Thresholds on d (SPEC section 3), checked in order: the first one that d does not exceed wins.
_SCORE_STEPS: tuple[tuple[Fraction, int], ...] = (
    (Fraction(1, 4), BEST_SCORE),
    (Fraction(1, 2), 1),
    (Fraction(1), 0),
    (Fraction(7, 4), -1),
)
_WORST_SCORE = -2

# Float primes carry rounding noise around 1e-15 (3.3 + 3.7 adds up to 7.000000000000001 or
# 6.999999999999999 depending on order; prev = [5, 1.0000000000000002] has a variance a hair
# under 4 exactly, and exactly 4 from the float sums the game keeps). Two places where that
# noise could flip a decision are therefore read to 1e-9, finer than any real difference in
# ratings: the mean is snapped to 9 decimals before rounding half up, and a distance within
# 1e-9 of a score threshold counts as on it. Whole-number ratings are untouched by either: their
# means have a short exact decimal form, and their distances are fractions with small
# denominators, either on a threshold or at least 1e-6 away from it.
_MEAN_DECIMALS = 9
_MEAN_TOLERANCE = Fraction(1, 10**_MEAN_DECIMALS)


def consensus_rating(previous: Iterable[float]) -> int | None:
    """The consensus shown to the player: mean of ``previous`` rounded half up; None when empty.

    SPEC section 3: ``r = round_half_up(mean(prev))``, so a mean of 2.5 gives 3.
    """
    values = _exact_values(previous)
    if not values:
        return None
    return _round_half_up(sum(values, Fraction(0)) / len(values))


def consensus_from_aggregates(count: int, total: float) -> int | None:
    """`consensus_rating` from the pair's aggregates: ``count`` ratings summing to ``total``."""
    count, total_exact, _ = _exact_aggregates(count, total, None)
    if count == 0:
        return None
    return _round_half_up(total_exact / count)


def player_score(rating: int, previous: Iterable[float]) -> int:
    """Points for ``rating`` against the ratings given before it (SPEC section 3, Algorithm 1).

    Returns 0 when ``previous`` is empty (first rater, no primes). ``previous`` may hold
    continuous model primes. Raises ValueError for a rating that is not a whole number 1..5
    or a previous value outside 1..5.
    """
    rating = _check_rating(rating, "rating")
    values = _exact_values(previous)
    if not values:
        return 0
    count = len(values)
    mean = sum(values, Fraction(0)) / count
    # Population variance (ddof = 0), computed from deviations: exact, never negative.
    variance = sum(((value - mean) ** 2 for value in values), Fraction(0)) / count
    return _score(rating, count, _round_half_up(mean), variance)


def player_score_from_aggregates(rating: int, count: int, total: float, total_sq: float) -> int:
    """`player_score` from the pair's aggregates: ``count`` previous ratings, their sum and sum of squares.

    Variance is ``total_sq / count - mean²`` (population variance). With float primes in the
    sums it can come out a hair below zero; it is then taken as 0.
    """
    rating = _check_rating(rating, "rating")
    count, total_exact, total_sq_exact = _exact_aggregates(count, total, total_sq)
    if count == 0:
        return 0
    mean = total_exact / count
    variance = max(total_sq_exact / count - mean**2, Fraction(0))
    return _score(rating, count, _round_half_up(mean), variance)


# Two shapes of the ratings before a player's, to explain Algorithm 1 to people: all equal (no
# spread), and half at 1, half at 5 (the largest spread, V_MAX).
NO_SPREAD = (1, 1)
LARGEST_SPREAD = (1, 5)


def points_by_levels_off(previous: Iterable[float]) -> dict[int, int]:
    """``{levels off the consensus: points}`` for every rating 1..5 scored against ``previous``
    (Algorithm 1). Ratings the same distance above and below score the same. Raises ValueError
    when ``previous`` is empty (no consensus to be off)."""
    values = list(previous)
    consensus = consensus_rating(values)
    if consensus is None:
        raise ValueError("no previous ratings: there is no consensus to be off")
    return {abs(rating - consensus): player_score(rating, values) for rating in range(MIN_RATING, MAX_RATING + 1)}


def points_table() -> list[dict[str, int | None]]:
    """What a game rating scores by how many levels it lies off the consensus, 0 to 4: ``agreeing``
    when the ratings before it are all equal, ``split`` when they are split half at 1 and half at 5
    (None where no rating can lie that far off their consensus of 3). The same for 1 to 6 equal
    ratings and for 2, 4 or 6 split ones (every count the game's cap allows): the pages that
    explain the game points show it."""
    agreeing = points_by_levels_off(NO_SPREAD)
    split = points_by_levels_off(LARGEST_SPREAD)
    return [
        {"off": off, "agreeing": agreeing[off], "split": split.get(off)} for off in range(MAX_RATING - MIN_RATING + 1)
    ]


def tutorial_points(rating: int, ground_truth: int) -> int:
    """Points in the tutorial and probation: ``2 - |ground_truth - rating|`` (SPEC section 2), from 2 down to -2."""
    rating = _check_rating(rating, "rating")
    ground_truth = _check_rating(ground_truth, "ground_truth")
    return 2 - abs(ground_truth - rating)


def _score(rating: int, count: int, consensus: int, variance: Fraction) -> int:
    n = count + 1  # the player's rating is the n-th
    spread = 1 + Fraction(1, n) * (1 + (n - 1) * variance / V_MAX)
    distance = abs(rating - consensus) / spread
    for threshold, points in _SCORE_STEPS:
        if distance <= threshold + _MEAN_TOLERANCE:
            return points
    return _WORST_SCORE


def _round_half_up(mean: Fraction) -> int:
    snapped = Fraction(round(mean / _MEAN_TOLERANCE)) * _MEAN_TOLERANCE
    return math.floor(snapped + Fraction(1, 2))


def _check_rating(value: object, name: str) -> int:
    # bool is an int subclass; True as a rating is a caller's bug, not a 1.
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be a whole number from 1 to 5, got {value!r}")
    value = int(value)
    if not MIN_RATING <= value <= MAX_RATING:
        raise ValueError(f"{name} must be a whole number from 1 to 5, got {value!r}")
    return value


def _exact_number(value: object, name: str) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    if isinstance(value, numbers.Integral):
        return Fraction(int(value))
    as_float = float(value)
    if not math.isfinite(as_float):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return Fraction(as_float)


def _exact_values(previous: Iterable[float]) -> list[Fraction]:
    values = [_exact_number(value, "previous rating") for value in previous]
    for value in values:
        if not MIN_RATING <= value <= MAX_RATING:
            raise ValueError(f"previous ratings must lie on the 1..5 scale, got {float(value)!r}")
    return values


def _exact_aggregates(count: object, total: object, total_sq: object | None) -> tuple[int, Fraction, Fraction]:
    if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
        raise ValueError(f"count must be a whole number >= 0, got {count!r}")
    count = int(count)
    total_exact = _exact_number(total, "total")
    total_sq_exact = _exact_number(total_sq, "total_sq") if total_sq is not None else Fraction(0)
    if count == 0:
        if total_exact != 0 or total_sq_exact != 0:
            raise ValueError(f"count is 0 but total={total!r}, total_sq={total_sq!r}: inconsistent aggregates")
        return 0, total_exact, total_sq_exact
    # Float sums of primes may overshoot the scale by rounding noise, hence the tolerance.
    mean = total_exact / count
    if not MIN_RATING - _MEAN_TOLERANCE <= mean <= MAX_RATING + _MEAN_TOLERANCE:
        raise ValueError(f"mean {float(mean)!r} of the aggregates lies outside the 1..5 scale")
    return count, total_exact, total_sq_exact
