"""Consensus and player score (SPEC section 3, the VICR paper's Algorithm 1)."""

from fractions import Fraction

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from scoring.consensus import (
    consensus_from_aggregates,
    consensus_rating,
    player_score,
    player_score_from_aggregates,
    points_by_levels_off,
    points_table,
    tutorial_points,
)

ratings = st.integers(min_value=1, max_value=5)
human_lists = st.lists(ratings, min_size=1, max_size=8)
# Calibrated model primes: continuous values on the 1..5 scale (SPEC section 4).
primes = st.floats(min_value=1.0, max_value=5.0, allow_nan=False, allow_infinity=False)
mixed_lists = st.lists(st.one_of(ratings, primes), min_size=1, max_size=8)


def running_aggregates(values):
    """Aggregates the way the game keeps them: one running addition per rating, in order."""
    count, total, total_sq = 0, 0, 0
    for value in values:
        count += 1
        total += value
        total_sq += value * value
    return count, total, total_sq


def exact_variance(values):
    values = [Fraction(v) for v in values]
    mean = sum(values) / len(values)
    return sum((v - mean) ** 2 for v in values) / len(values)


# --- SPEC section 3 worked examples -------------------------------------------------------


@pytest.mark.parametrize(("rating", "expected"), [(4, 2), (3, 0), (2, -1), (1, -2)])
def test_spec_example_two_fours(rating, expected):
    # prev = [4, 4]: n = 3, variance 0, v = 4/3; d = 0, 0.75, 1.5, 2.25.
    assert player_score(rating, [4, 4]) == expected


@pytest.mark.parametrize(("rating", "expected"), [(4, 1), (5, 0)])
def test_spec_example_one_and_five(rating, expected):
    # prev = [1, 5]: r = 3, variance 4, v = 2; d = 0.5 and 1.0 sit exactly on thresholds.
    assert player_score(rating, [1, 5]) == expected


def test_the_points_table_shown_to_players_is_the_spec_worked_examples():
    table = {row["off"]: (row["agreeing"], row["split"]) for row in points_table()}
    # prev = [4, 4] (SPEC 3): x = 4, 3, 2, 1 score 2, 0, -1, -2; prev = [1, 5]: x = 3, 4, 5 score 2, 1, 0.
    assert table == {0: (2, 2), 1: (0, 1), 2: (-1, 0), 3: (-2, None), 4: (-2, None)}


@pytest.mark.parametrize("count", range(1, 7))
def test_the_points_table_holds_for_every_number_of_ratings_before_the_players(count):
    # The game's cap (3 to 7 ratings) leaves 1 to 6 ratings before a player's: the table shown to
    # players, computed on two of them, is what any of those counts scores, at either end of the scale.
    table = points_table()
    for level in (1, 5):
        assert points_by_levels_off([level] * count) == {row["off"]: row["agreeing"] for row in table}
    if count % 2 == 0:
        split = points_by_levels_off([1] * (count // 2) + [5] * (count // 2))
        assert split == {row["off"]: row["split"] for row in table if row["split"] is not None}


def test_consensus_rounds_half_up():
    assert consensus_rating([2, 3]) == 3  # 2.5 -> 3 (Python's round() would give 2)
    assert consensus_rating([3, 4]) == 4  # 3.5 -> 4
    assert consensus_rating([4, 4, 5]) == 4  # 4.33 -> 4
    assert consensus_rating([1, 2, 2, 2]) == 2  # 1.75 -> 2


def test_consensus_of_nothing_is_none():
    assert consensus_rating([]) is None
    assert consensus_from_aggregates(0, 0) is None


def test_first_rater_scores_zero():
    assert player_score(5, []) == 0
    assert player_score_from_aggregates(5, 0, 0, 0) == 0


def test_six_equal_ratings_two_away_sit_on_the_minus_one_threshold():
    # Six equal ratings: n = 7, v = 1 + 1/7 = 8/7; |x - r| = 2 gives d = 2 * 7/8 = 1.75 exactly,
    # which scores -1 (d <= 1.75), not -2.
    assert player_score(1, [3] * 6) == -1
    assert player_score_from_aggregates(1, 6, 18, 54) == -1


@pytest.mark.parametrize(
    ("previous", "rating", "expected"),
    [([1, 4], 1, -1), ([1, 4], 2, 0), ([1, 4], 4, 0), ([1, 4], 3, 2), ([2, 5], 1, -2), ([2, 5], 2, -1)],
)
def test_variance_widens_the_tolerance_hand_computed(previous, rating, expected):
    # prev = [1, 4]: mean 2.5 -> r = 3; σ² = 2.25 (ddof 0); n = 3: v = 1 + (1/3)(1 + 2 * 2.25/4) = 41/24.
    #   x = 1: d = 2 * 24/41 = 1.17 -> -1;  x = 2 or 4: d = 24/41 = 0.59 -> 0.
    # prev = [2, 5]: mean 3.5 -> r = 4; same v. x = 1: d = 3 * 24/41 = 1.756 -> -2 (just past 1.75);
    #   x = 2: d = 1.17 -> -1.
    assert player_score(rating, previous) == expected
    count, total, total_sq = running_aggregates(previous)
    assert player_score_from_aggregates(rating, count, total, total_sq) == expected


def test_float_noise_in_summed_primes_does_not_misround():
    # 5.0 + 3.7 + 1.7 + 3.6 is 14 (mean 3.5 -> 4), but a running float sum gives
    # 13.999999999999998, whose mean 3.4999999999999996 would round down to 3.
    values = [5.0, 3.7, 1.7, 3.6]
    _, total, _ = running_aggregates(values)
    assert total == 13.999999999999998
    assert consensus_rating(values) == 4
    assert consensus_from_aggregates(4, total) == 4


def test_primes_mixed_with_human_ratings():
    # prev = [4, 3.2]: mean 3.6 -> r = 4; variance 0.16; n = 3:
    # v = 1 + (1/3)(1 + 2 * 0.16 / 4) = 1.36; x = 3: d = 1 / 1.36 = 0.735 -> 0.
    assert consensus_rating([4, 3.2]) == 4
    assert player_score(3, [4, 3.2]) == 0
    assert player_score(4, [4, 3.2]) == 2


@pytest.mark.parametrize(("rating", "truth", "expected"), [(3, 3, 2), (3, 5, 0), (5, 3, 0), (1, 5, -2), (4, 5, 1)])
def test_tutorial_points_hand_values(rating, truth, expected):
    assert tutorial_points(rating, truth) == expected


# --- validation ---------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [0, 6, -1, 3.0, 2.5, "3", None, True])
def test_rating_must_be_whole_number_one_to_five(bad):
    with pytest.raises(ValueError):
        player_score(bad, [3, 4])
    with pytest.raises(ValueError):
        player_score_from_aggregates(bad, 2, 7, 25)
    with pytest.raises(ValueError):
        tutorial_points(bad, 3)
    with pytest.raises(ValueError):
        tutorial_points(3, bad)


@pytest.mark.parametrize("bad_previous", [[3, 0.5], [3, 6], [float("nan")], [float("inf")], ["4"], [None]])
def test_previous_must_lie_on_the_scale(bad_previous):
    with pytest.raises(ValueError):
        player_score(3, bad_previous)
    with pytest.raises(ValueError):
        consensus_rating(bad_previous)


@pytest.mark.parametrize(
    ("count", "total", "total_sq"),
    [(-1, 0, 0), (0, 3, 9), (2, 20, 200), (2, 1, 1), (2, float("nan"), 10), (1.5, 3, 9)],
)
def test_inconsistent_aggregates_are_rejected(count, total, total_sq):
    with pytest.raises(ValueError):
        player_score_from_aggregates(3, count, total, total_sq)


# --- properties ---------------------------------------------------------------------------


@given(ratings, st.lists(st.one_of(ratings, primes), max_size=8))
def test_score_is_between_minus_two_and_two(rating, previous):
    assert -2 <= player_score(rating, previous) <= 2


@given(mixed_lists)
def test_rating_equal_to_consensus_scores_two(previous):
    assert player_score(consensus_rating(previous), previous) == 2


@given(mixed_lists, ratings, ratings)
def test_score_does_not_increase_with_distance_from_consensus(previous, x1, x2):
    r = consensus_rating(previous)
    if abs(x1 - r) > abs(x2 - r):
        x1, x2 = x2, x1
    assert player_score(x1, previous) >= player_score(x2, previous)


@given(
    st.integers(min_value=1, max_value=8).flatmap(
        lambda n: st.tuples(*[st.lists(ratings, min_size=n, max_size=n)] * 2)
    ),
    st.integers(0, 4),
    st.sampled_from([-1, 1]),
)
def test_more_variance_never_lowers_the_score_at_equal_distance(lists, distance, side):
    # For a fixed n, v = 1 + (1/n)(1 + (n - 1) σ²/4) grows with σ², so d = |x - r| / v shrinks and
    # the score (non-increasing in d) cannot drop. Across different n this does not hold: a larger
    # n shrinks v for the same σ² < 4, which is why both lists here have the same length.
    low, high = sorted(lists, key=exact_variance)
    x_low = consensus_rating(low) + side * distance
    x_high = consensus_rating(high) + side * distance
    assume(1 <= x_low <= 5 and 1 <= x_high <= 5)
    assert player_score(x_low, low) <= player_score(x_high, high)


@given(human_lists, ratings)
def test_aggregates_equal_list_form_for_human_ratings(previous, rating):
    count, total, total_sq = running_aggregates(previous)
    assert consensus_from_aggregates(count, total) == consensus_rating(previous)
    assert player_score_from_aggregates(rating, count, total, total_sq) == player_score(rating, previous)


@given(mixed_lists, ratings)
def test_aggregates_equal_list_form_with_primes(previous, rating):
    count, total, total_sq = running_aggregates(previous)
    assert consensus_from_aggregates(count, total) == consensus_rating(previous)
    assert player_score_from_aggregates(rating, count, total, total_sq) == player_score(rating, previous)


def test_float_noise_in_a_prime_does_not_flip_a_score_threshold():
    # Found by hypothesis: the exact variance of [5, 1.0000000000000002] is a hair under 4, the
    # game's float sums (6.0, 26.0) give exactly 4, and d = 2 / v lands on the threshold 1.
    previous = [5, 1.0000000000000002]
    count, total, total_sq = running_aggregates(previous)
    assert (count, total, total_sq) == (2, 6.0, 26.0)
    assert player_score(1, previous) == player_score_from_aggregates(1, count, total, total_sq) == 0
    assert player_score(1, [5, 1]) == 0  # the whole-number pair it stands for: d = 2 / 2 = 1 scores 0


@given(ratings, ratings)
def test_tutorial_points_symmetric_and_at_most_two(rating, truth):
    points = tutorial_points(rating, truth)
    assert points == tutorial_points(truth, rating)
    assert -2 <= points <= 2
    assert (points == 2) == (rating == truth)
