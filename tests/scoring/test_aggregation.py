"""Dawid-Skene aggregation (scoring/aggregation.py) on simulated crowds with known truth."""

import numpy as np
import pytest

from scoring.aggregation import dawid_skene
from scoring.export.stats import pair_summary


def simulated_crowd(seed: int, n_pairs: int = 2000, n_raters: int = 60, n_bad: int = 8):
    """The audit's crowd: each pair has a true level 1..5 and 4 raters; good raters answer it
    70% of the time and a neighbouring level otherwise; the last n_bad raters answer at random."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, n_pairs)
    rows = []
    for pair in range(n_pairs):
        for rater in rng.choice(n_raters, 4, replace=False):
            if rater >= n_raters - n_bad:
                value = int(rng.integers(1, 6))
            elif rng.random() < 0.7:
                value = int(truth[pair])
            else:
                value = int(np.clip(truth[pair] + rng.choice([-1, 1]), 1, 5))
            rows.append((pair, int(rater), value))
    return rows, truth, list(range(n_raters - n_bad, n_raters))


def test_dawid_skene_beats_the_rounded_mean_and_ranks_every_bad_rater_lowest():
    """Truth known. Tolerances from the audit's figures (DS 86% vs mean 67%): DS above 80% and at
    least 10 points above the rounded mean; all 8 bad raters have the 8 lowest qualities."""
    rows, truth, bad = simulated_crowd(70)
    result = dawid_skene(rows)
    per_pair: dict[int, list[int]] = {}
    for pair, _, value in rows:
        per_pair.setdefault(pair, []).append(value)
    mean_hits = np.mean([pair_summary(per_pair[p])[1] == truth[p] for p in range(len(truth))])
    ds_hits = np.mean([result.labels[p] == truth[p] for p in range(len(truth))])
    assert ds_hits > 0.8 and ds_hits > mean_hits + 0.1, (ds_hits, mean_hits)
    lowest = sorted(result.rater_quality, key=result.rater_quality.get)[: len(bad)]
    assert sorted(lowest) == bad
    # Random answers on 5 levels: expected accuracy near 1/5; good raters 0.7 and more (a
    # neighbouring level clipped at 1 or 5 is the true one).
    assert all(result.rater_quality[r] < 0.35 for r in bad)
    assert all(0.55 < q < 0.95 for r, q in result.rater_quality.items() if r not in bad)
    assert all(0.2 <= result.posterior[p] <= 1 for p in result.posterior)


def test_unanimous_pairs_get_their_level_and_no_rows_is_an_error():
    rows = [(p, r, 1 + p % 5) for p in range(40) for r in range(3)]
    result = dawid_skene(rows)
    assert result.labels == {p: 1 + p % 5 for p in range(40)}
    assert min(result.posterior.values()) > 0.99
    with pytest.raises(ValueError, match="no ratings"):
        dawid_skene([])
