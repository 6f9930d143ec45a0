"""When the target of validated pairs is reached (scoring.progress.estimate, pure): worked examples
of the documented rules."""

from datetime import UTC, datetime, timedelta

import pytest

from scoring.progress import estimate
from scoring.progress.estimate import ratings_to_validate, share_past_minimum, target_estimate

NOW = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)


def test_the_missing_pairs_are_taken_closest_to_the_minimum_first():
    # Two pairs one rating short, one pair two short, ten fresh pairs (three short).
    short_by = {1: 2, 2: 1, 3: 10}
    assert ratings_to_validate(2, short_by) == 2
    assert ratings_to_validate(3, short_by) == 2 + 2
    assert ratings_to_validate(5, short_by) == 2 + 2 + 2 * 3
    assert ratings_to_validate(13, short_by) == 2 + 2 + 10 * 3
    assert ratings_to_validate(14, short_by) is None  # the open pairs cannot give 14


def test_ratings_past_the_minimum_stretch_the_ratings_needed():
    # 40 counted ratings so far, 10 of them on pairs that had 3 already: a quarter goes to no new pair.
    share = share_past_minimum(40, 10)
    assert share == 0.25
    result = target_estimate(
        target=10, validated=4, short_by={1: 3, 3: 20}, past_minimum_share=share, rate_per_hour=6.0, now=NOW
    )
    # 6 missing: 3 pairs one short (3 ratings) and 3 fresh (9): 12 useful ratings, 12 / 0.75 = 16.
    assert (result.result, result.missing, result.ratings_needed) == (estimate.ESTIMATED, 6, 16)
    assert result.hours == pytest.approx(16 / 6)
    assert result.reached_at == NOW + timedelta(hours=16 / 6)


@pytest.mark.parametrize(
    ("target", "validated", "short_by", "rate", "expected", "needed"),
    [
        (0, 0, {}, 5.0, estimate.NO_PAIRS, None),  # an empty pool
        (10, 10, {3: 5}, 0.0, estimate.REACHED, 0),  # reached, whatever the rate
        (10, 12, {}, 0.0, estimate.REACHED, 0),
        (10, 2, {1: 3, 3: 4}, 5.0, estimate.TOO_FEW_PAIRS, None),  # 8 missing, 7 open pairs
        (10, 6, {1: 3, 3: 4}, 0.0, estimate.NO_RATE, 3 + 3),  # no rating in the last day: no date
    ],
)
def test_when_it_cannot_be_estimated_it_says_why(target, validated, short_by, rate, expected, needed):
    result = target_estimate(
        target=target, validated=validated, short_by=short_by, past_minimum_share=0.0, rate_per_hour=rate, now=NOW
    )
    assert (result.result, result.ratings_needed) == (expected, needed)
    assert (result.reached_at is not None) == (expected in (estimate.REACHED, estimate.ESTIMATED))
