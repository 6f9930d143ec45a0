"""Agreement statistics (SPEC section 6, the VICR paper's Table 3)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats import inter_rater

from scoring import agreement
from scoring.agreement import (
    fleiss_kappa,
    kendall_w,
    krippendorff_alpha,
    tau_against_references,
    tau_c,
    virtual_rater_report,
)
from tests.shared_data import VICR_SAMPLE

REPORT_KEYS = (
    "tau_X_YZ",
    "tau_Y_XZ",
    "tau_Z_XY",
    "kendall_w",
    "fleiss_kappa",
    "fleiss_kappa_unmerged",
    "krippendorff_alpha",
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 observers x
# 12 units, values 1..5, "." missing. Published: nominal 0.743, ordinal 0.815, interval 0.849
# (the same figures are asserted by the R package tidycomm for this table).
nan = math.nan
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]

# Fleiss (1971), as on Wikipedia's "Fleiss' kappa" worked example: 10 subjects, 14 raters,
# number of raters per category 1..5. Published κ = 0.210 (P̄ = 0.378, P̄e = 0.213).
FLEISS_COUNTS = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def labels_from_counts(counts):
    """Items x raters labels from per-category counts (raters are interchangeable in Fleiss' κ)."""
    return np.array([np.repeat(np.arange(1, len(row) + 1), row) for row in counts])


def random_ratings(seed, n_pairs, low=3, high=7):
    rng = np.random.default_rng(seed)
    quality = rng.uniform(1, 5, n_pairs)
    return [
        list(np.clip(np.rint(q + rng.normal(0, 0.8, k)), 1, 5).astype(int))
        for q, k in zip(quality, rng.integers(low, high + 1, n_pairs), strict=True)
    ]


# --- Kendall's τ_c ------------------------------------------------------------------------


def test_tau_c_hand_computed():
    # x = 1 2 3 4, y = 1 3 2 4: 5 concordant pairs, 1 discordant; n = 4, m = 4 classes:
    # τ_c = 2 (5 - 1) / (4² (4 - 1) / 4) = 8 / 12.
    assert tau_c([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)


def test_tau_c_with_ties_hand_computed():
    # x = 1 1 2 2, y = 1 2 1 2: pairs (1,2)(3,4) tied in x, (1,3)(2,4) tied in y; (1,4) concordant,
    # (2,3) discordant: P - Q = 0. x = 1 1 2 2, y = 1 1 1 2: (1,4)(2,4) concordant, none
    # discordant; n = 4, m = 2: τ_c = 2 * 2 / (16 * 1/2) = 0.5.
    assert tau_c([1, 1, 2, 2], [1, 2, 1, 2]) == 0
    assert tau_c([1, 1, 2, 2], [1, 1, 1, 2]) == pytest.approx(0.5)


def test_tau_c_of_a_constant_is_nan():
    assert math.isnan(tau_c([3, 3, 3], [1, 2, 3]))


def test_method_a_flattens_the_pairs_with_each_reference():
    # Method A (CLIPScore, Appendix A): x paired with each reference, one τ_c over all pairs.
    x, y, z = [1, 2, 3, 4], [1, 3, 2, 4], [2, 2, 3, 5]
    expected = stats.kendalltau(x + x, y + z, variant="c").statistic
    assert tau_against_references(x, [y, z]) == pytest.approx(expected)
    assert tau_against_references(np.array(x), np.array([y, z])) == pytest.approx(expected)
    # Not the mean of the two separate τ_c (that would be "method B"-like aggregation).
    assert expected != pytest.approx((tau_c(x, y) + tau_c(x, z)) / 2)


def test_method_a_rejects_mismatched_references():
    with pytest.raises(ValueError):
        tau_against_references([1, 2, 3], [[1, 2]])
    with pytest.raises(ValueError):
        tau_against_references([1, 2, 3], [])


@pytest.mark.parametrize("seed", range(6))
def test_tau_kernel_equals_scipy_on_tied_integer_data(seed):
    # The report computes τ_c from 5x5 contingency tables; scipy is the reference.
    rng = np.random.default_rng(seed)
    size = int(rng.integers(2, 400))
    x = rng.integers(1, 6, size)
    y = np.clip(x + rng.integers(-2, 3, size), 1, 5) if seed % 2 else rng.integers(2, 4, size)
    table = np.zeros((5, 5), dtype=np.int64)
    np.add.at(table, (x - 1, y - 1), 1)
    expected = stats.kendalltau(x, y, variant="c").statistic
    got = agreement._tau_c_from_tables(table)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_tau_kernel_is_nan_for_a_constant_variable_like_scipy():
    x, y = np.array([1, 2, 3, 4]), np.array([2, 2, 2, 2])
    table = np.zeros((5, 5), dtype=np.int64)
    np.add.at(table, (x - 1, y - 1), 1)
    assert math.isnan(stats.kendalltau(x, y, variant="c").statistic)
    assert math.isnan(agreement._tau_c_from_tables(table))


# --- Kendall's W --------------------------------------------------------------------------


def test_kendall_w_siegel_example_without_ties():
    # Siegel (1956), Nonparametric Statistics, ch. 9: 3 executives rank 6 applicants.
    # Rank sums 8 14 11 11 11 8, mean 10.5, S = 25.5; W = 12 * 25.5 / (3² (6³ - 6)) = 0.1619
    # (published as W = .16).
    ranks = np.array([[1, 6, 3, 2, 5, 4], [1, 5, 6, 4, 2, 3], [6, 3, 2, 5, 4, 1]]).T
    assert kendall_w(ranks) == pytest.approx(12 * 25.5 / (9 * 210))
    assert round(kendall_w(ranks), 2) == 0.16


def test_kendall_w_with_ties_hand_computed():
    # Raters (columns) A = 1 2 2 3, B = 1 1 2 3, C = 2 1 3 3 over 4 items.
    # Average ranks: A 1 2.5 2.5 4, B 1.5 1.5 3 4, C 2 1 3.5 3.5; rank sums 4.5 5 9 11.5,
    # mean 7.5, S = 9 + 6.25 + 2.25 + 16 = 33.5. One tie of 2 per rater: T = 3 * (2³ - 2) = 18.
    # Corrected W = 12 * 33.5 / (9 * 60 - 3 * 18) = 402 / 486; uncorrected 402 / 540.
    ratings = np.array([[1, 2, 2, 3], [1, 1, 2, 3], [2, 1, 3, 3]]).T
    assert kendall_w(ratings) == pytest.approx(402 / 486)
    assert kendall_w(ratings, tie_correction=False) == pytest.approx(402 / 540)


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 30), st.integers(2, 6), st.integers(0, 2**32 - 1))
def test_kendall_w_equals_friedman_chi_square_relation(n_items, n_raters, seed):
    # Friedman's tie-corrected χ² over the items (raters as blocks) gives W = χ² / (m (n - 1))
    # exactly, ties included (scipy's Friedman test needs at least 3 groups, here items).
    data = np.random.default_rng(seed).integers(1, 6, size=(n_items, n_raters))
    if all(len(set(column)) == 1 for column in data.T):
        assert math.isnan(kendall_w(data))
        return
    chi2 = stats.friedmanchisquare(*data).statistic
    assert kendall_w(data) == pytest.approx(chi2 / (n_raters * (n_items - 1)))


def test_kendall_w_rejects_missing_values_and_tiny_tables():
    with pytest.raises(ValueError):
        kendall_w([[1, 2], [nan, 3]])
    with pytest.raises(ValueError):
        kendall_w([[1, 2, 3]])


# --- Fleiss' κ ----------------------------------------------------------------------------


def test_fleiss_kappa_published_example():
    ratings = labels_from_counts(FLEISS_COUNTS)
    assert ratings.shape == (10, 14)
    assert fleiss_kappa(ratings) == pytest.approx(0.210, abs=5e-4)
    assert fleiss_kappa(ratings) == pytest.approx(inter_rater.fleiss_kappa(np.array(FLEISS_COUNTS)))


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_equals_statsmodels(seed):
    rng = np.random.default_rng(seed)
    ratings = np.clip(rng.integers(1, 6, (60, 1)) + rng.integers(-1, 2, (60, 4)), 1, 5)
    table, _ = inter_rater.aggregate_raters(ratings)
    assert fleiss_kappa(ratings) == pytest.approx(inter_rater.fleiss_kappa(table, method="fleiss"))


def test_fleiss_kappa_categories():
    ratings = np.array([["a", "a", "b"], ["b", "b", "b"], ["a", "c", "c"]])
    # An unused category adds p_j = 0 and changes nothing; a label outside the list is an error.
    assert fleiss_kappa(ratings, categories=["a", "b", "c", "d"]) == pytest.approx(fleiss_kappa(ratings))
    with pytest.raises(ValueError):
        fleiss_kappa(ratings, categories=["a", "b"])


# --- Krippendorff's α ---------------------------------------------------------------------


@pytest.mark.parametrize(("level", "published"), [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorff_alpha_published_example(level, published):
    assert krippendorff_alpha(KRIPPENDORFF_2011, level=level) == pytest.approx(published, abs=5e-4)


def test_krippendorff_alpha_drops_units_with_a_single_value():
    # Unit 12 (one value) is not pairable: dropping it leaves α unchanged; a new lone value too.
    data = np.array(KRIPPENDORFF_2011)
    lone = np.full((4, 1), nan)
    lone[0, 0] = 1
    for level in ("nominal", "ordinal", "interval"):
        assert krippendorff_alpha(data[:, :11], level) == pytest.approx(krippendorff_alpha(data, level))
        assert krippendorff_alpha(np.hstack([data, lone]), level) == pytest.approx(krippendorff_alpha(data, level))


def test_krippendorff_alpha_two_raters_nominal_equals_hand_computation():
    # Two raters, 4 units: (1,1) (1,2) (2,2) (2,2). Coincidences: o11 = 2, o12 = o21 = 1,
    # o22 = 4; n1 = 3, n2 = 5, n = 8. α = 1 - (n - 1) (o12 + o21) / (2 n1 n2) = 1 - 7 * 2 / 30.
    assert krippendorff_alpha([[1, 1, 2, 2], [1, 2, 2, 2]], "nominal") == pytest.approx(1 - 14 / 30)


def test_krippendorff_alpha_rejects_unknown_level():
    with pytest.raises(ValueError):
        krippendorff_alpha(KRIPPENDORFF_2011, level="ratio")


# --- virtual raters: sampling and kernels --------------------------------------------------


def test_every_draw_is_three_of_the_pairs_own_ratings():
    pairs = [[1, 2, 3, 4, 5], [5, 5, 4], [2, 2, 2, 3], [1, 3, 5, 1, 3, 5, 2]]
    flat, starts, lengths, _ = agreement._ratings_table(pairs)
    rng = np.random.default_rng(0)
    for _ in range(200):
        xyz = agreement._draw_virtual_raters(flat, starts, lengths, rng)
        for triple, pair in zip(xyz.tolist(), pairs, strict=True):
            assert triple == sorted(triple)
            remaining = list(pair)
            for value in triple:
                remaining.remove(value)  # raises if drawn more often than the pair holds it
        assert xyz[1].tolist() == [4, 5, 5]  # exactly 3 ratings: all of them


def test_draws_cover_every_subset_about_equally():
    # Pair 1 2 3 4 5 has C(5, 3) = 10 subsets of 3; 20,000 draws give ~2,000 each
    # (binomial sd ~42; the bound below is > 7 sd).
    flat, starts, lengths, _ = agreement._ratings_table([[1, 2, 3, 4, 5]] * 20_000)
    xyz = agreement._draw_virtual_raters(flat, starts, lengths, np.random.default_rng(1))
    _, counts = np.unique(xyz, axis=0, return_counts=True)
    assert len(counts) == 10
    assert np.abs(counts - 2000).max() < 300


@pytest.mark.parametrize("seed", range(3))
def test_histogram_kernels_equal_the_general_functions(seed):
    pairs = random_ratings(seed, 300)
    flat, starts, lengths, _ = agreement._ratings_table(pairs)
    xyz = agreement._draw_virtual_raters(flat, starts, lengths, np.random.default_rng(seed)).astype(int)
    figures = agreement._statistics_from_histograms(agreement._triple_histogram(xyz)[None])
    x, y, z = xyz.T
    expected = {
        "tau_X_YZ": tau_against_references(x, [y, z]),
        "tau_Y_XZ": tau_against_references(y, [x, z]),
        "tau_Z_XY": tau_against_references(z, [x, y]),
        "kendall_w": kendall_w(xyz),
        "fleiss_kappa": inter_rater.fleiss_kappa(inter_rater.aggregate_raters(np.minimum(xyz, 4))[0]),
        "fleiss_kappa_unmerged": inter_rater.fleiss_kappa(inter_rater.aggregate_raters(xyz)[0]),
        "krippendorff_alpha": krippendorff_alpha(xyz.T, "ordinal"),
    }
    for name, value in expected.items():
        assert figures[name][0] == pytest.approx(value, abs=1e-12), name


# --- virtual rater report ------------------------------------------------------------------


def test_report_with_exactly_three_ratings_per_pair_is_the_plain_statistics():
    # With 3 ratings per pair every draw is the same sorted triple: the mean is the statistic
    # itself (x100) and the sd is 0.
    pairs = [sorted(p[:3]) for p in random_ratings(7, 200)]
    xyz = np.array(pairs)
    x, y, z = xyz.T
    report = virtual_rater_report(pairs, samples=5, seed=3)
    assert report["tau_X_YZ"]["mean"] == pytest.approx(100 * tau_against_references(x, [y, z]))
    assert report["kendall_w"]["mean"] == pytest.approx(100 * kendall_w(xyz))
    assert report["fleiss_kappa"]["mean"] == pytest.approx(100 * fleiss_kappa(np.minimum(xyz, 4)))
    assert report["fleiss_kappa_unmerged"]["mean"] == pytest.approx(100 * fleiss_kappa(xyz))
    assert report["krippendorff_alpha"]["mean"] == pytest.approx(100 * krippendorff_alpha(xyz.T))
    assert all(report[key]["sd"] == pytest.approx(0, abs=1e-9) for key in REPORT_KEYS)


def test_report_counts_pairs_left_out():
    pairs = [[1, 2], [3], [], *random_ratings(1, 50)]
    report = virtual_rater_report(pairs, samples=3)
    assert report["pairs_used"] == 50
    assert report["pairs_left_out"] == 3
    assert report["samples"] == 3
    assert report["seed"] == 0


def test_report_is_reproducible_and_seed_dependent():
    pairs = random_ratings(2, 200)
    first = virtual_rater_report(pairs, samples=20, seed=11)
    assert virtual_rater_report(pairs, samples=20, seed=11) == first
    other = virtual_rater_report(pairs, samples=20, seed=12)
    assert any(other[key]["mean"] != first[key]["mean"] for key in REPORT_KEYS)


def test_report_accepts_a_mapping():
    pairs = random_ratings(3, 40)
    by_id = {f"pair-{i}": ratings for i, ratings in enumerate(pairs)}
    assert virtual_rater_report(by_id, samples=4) == virtual_rater_report(pairs, samples=4)


@pytest.mark.parametrize("bad", [[[1, 2, 6]], [[1, 2, 2.5]], [[0, 1, 2]], [[1, 2, nan]]])
def test_report_rejects_ratings_off_the_scale(bad):
    with pytest.raises(ValueError, match="pair 1"):
        virtual_rater_report([[3, 3, 3], *bad, [4, 4, 4]], samples=2)


def test_report_rejects_bad_arguments():
    pairs = random_ratings(4, 10)
    with pytest.raises(ValueError):
        virtual_rater_report(pairs, samples=0)
    with pytest.raises(ValueError):
        virtual_rater_report(pairs, seed=None)
    with pytest.raises(ValueError):
        virtual_rater_report([[1, 2, 3], [1, 2]], samples=2)  # one usable pair


def test_report_on_the_vicr_sample():
    from scoring.rating_files import read_ratings_file

    if not VICR_SAMPLE.exists():
        pytest.skip(f"{VICR_SAMPLE} is not on this machine")
    report = virtual_rater_report(read_ratings_file(VICR_SAMPLE, format="wide"), samples=100, seed=0)
    assert report["pairs_used"] == 249
    assert report["pairs_left_out"] == 0
    for key in REPORT_KEYS:
        assert -100 <= report[key]["mean"] <= 100, key
        assert report[key]["sd"] >= 0, key
    assert 0 <= report["kendall_w"]["mean"] <= 100  # W lies in [0, 1]
