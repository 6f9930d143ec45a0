"""Inter-rater agreement statistics of the validated dataset (SPEC section 6, the VICR paper's Table 3).

numpy and scipy only. Kendall's τ_c is scipy's ``kendalltau(variant="c")``. Kendall's W,
Fleiss' κ and Krippendorff's α have no scipy implementation, so they are written here from
their published formulas (cited on each function) and checked in the tests against published
worked examples, statsmodels and scipy's Friedman test.

`virtual_rater_report` repeats the paper's virtual-rater analysis 100 times over ~16K pairs;
calling the general functions 100 times would take seconds (scipy's kendalltau takes ~7 ms on
the ~31K method-A pairs of one repetition, and the report needs 300 of them; see
bench/bench_agreement.py). It therefore reduces each repetition to one 5x5x5 histogram
of the sorted triples (X, Y, Z), from which every statistic follows exactly in O(1): the
``_*_from_*`` kernels below. The tests check each kernel against the general function.
"""

from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np
from scipy import stats

from scoring import bootstrap

SCALE = np.arange(1, 6)  # the 5-level rating scale (SPEC section 1)
_LEVELS = ("nominal", "ordinal", "interval")
_RATERS = 3  # virtual raters X, Y, Z

# Each statistic's range on the reports' ×100 scale: its interval is clipped to it. τ_c lies in
# [-1, 1] and Kendall's W in [0, 1]; κ, α and the ICCs are at most 1, with no fixed floor.
_TAU = (-100.0, 100.0)
_AT_MOST_ONE = (-np.inf, 100.0)
BOUNDS = {
    "tau_c": _TAU,
    "tau_X_YZ": _TAU,
    "tau_Y_XZ": _TAU,
    "tau_Z_XY": _TAU,
    "kendall_w": (0.0, 100.0),
    "fleiss_kappa": _AT_MOST_ONE,
    "fleiss_kappa_unmerged": _AT_MOST_ONE,
    "krippendorff_alpha": _AT_MOST_ONE,
    "krippendorff_alpha_ordinal": _AT_MOST_ONE,
    "krippendorff_alpha_interval": _AT_MOST_ONE,
    "icc1": _AT_MOST_ONE,
    "icc1k": _AT_MOST_ONE,
}


def tau_c(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ_c (Stuart's τ_c) of ``x`` and ``y``: ``scipy.stats.kendalltau(x, y, variant="c")``.

    NaN when either side is constant (scipy's convention).
    """
    return float(stats.kendalltau(np.asarray(x), np.asarray(y), variant="c").statistic)


def tau_against_references(x: Sequence[float], references: Sequence[Sequence[float]]) -> float:
    """τ_c of ``x`` against several references, "method A" (CLIPScore, Hessel et al. 2021, Appendix A).

    Each reference is paired item by item with ``x``; all (x_i, ref_i) pairs of all references
    are flattened into one list and one τ_c is computed over it. This is the paper's τ_X-YZ:
    X against references Y and Z.
    """
    x = np.asarray(x)
    refs = [np.asarray(ref) for ref in references]
    if not refs:
        raise ValueError("at least one reference is needed")
    for number, ref in enumerate(refs):
        if ref.shape != x.shape:
            raise ValueError(f"reference {number} has shape {ref.shape}, x has shape {x.shape}")
    return tau_c(np.tile(x, len(refs)), np.concatenate(refs))


def kendall_w(ratings: Sequence[Sequence[float]], tie_correction: bool = True) -> float:
    """Kendall's coefficient of concordance W of m raters ranking n items.

    ``ratings`` is items x raters. Each rater's column is ranked with average ranks for ties;
    with R_i the rank sum of item i and S = Σ (R_i - m(n + 1)/2)²::

        W = 12 S / (m² (n³ - n) - m Σ_j T_j),   T_j = Σ over rater j's tie groups of (t³ - t)

    (Kendall & Babington Smith 1939; Siegel & Castellan 1988, section 9.4; the tie term is
    dropped when ``tie_correction`` is False). NaN when every rater gives all items one value.
    """
    data = _matrix(ratings, "ratings")
    n, m = data.shape
    if n < 2 or m < 2:
        raise ValueError(f"Kendall's W needs at least 2 items and 2 raters, got {n} x {m}")
    ranks = stats.rankdata(data, method="average", axis=0)
    spread = float(((ranks.sum(axis=1) - m * (n + 1) / 2) ** 2).sum())
    ties = 0.0
    if tie_correction:
        for column in data.T:
            _, counts = np.unique(column, return_counts=True)
            ties += float((counts.astype(float) ** 3 - counts).sum())
    denominator = m**2 * (n**3 - n) - m * ties
    return 12 * spread / denominator if denominator > 0 else float("nan")


def fleiss_kappa(ratings: Sequence[Sequence[object]], categories: Sequence[object] | None = None) -> float:
    """Fleiss' κ (Fleiss 1971) of N items each rated by the same number m of raters.

    ``ratings`` is items x raters, holding category labels. With n_ij the number of raters who
    put item i in category j::

        P_i = (Σ_j n_ij² - m) / (m (m - 1)),   p_j = Σ_i n_ij / (N m)
        κ = (mean P_i - Σ_j p_j²) / (1 - Σ_j p_j²)

    ``categories`` lists the allowed labels (a label outside it is an error); by default the
    labels seen. NaN when all ratings fall in one category.
    """
    data = np.asarray(ratings)
    if data.ndim != 2 or data.shape[0] < 1 or data.shape[1] < 2:
        raise ValueError(f"ratings must be items x raters with at least 2 raters, got shape {data.shape}")
    labels = np.unique(data) if categories is None else np.unique(np.asarray(categories))
    index = np.clip(np.searchsorted(labels, data), 0, len(labels) - 1)
    if not np.array_equal(labels[index], data):
        unknown = sorted(set(data[labels[index] != data].tolist()))
        raise ValueError(f"ratings hold labels outside the categories: {unknown[:5]}")
    n_items, m = data.shape
    counts = np.zeros((n_items, len(labels)), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n_items), m), index.ravel()), 1)
    agreement = float(((counts**2).sum(axis=1) - m).mean()) / (m * (m - 1))
    shares = counts.sum(axis=0) / (n_items * m)
    chance = float((shares**2).sum())
    return (agreement - chance) / (1 - chance) if chance < 1 else float("nan")


def krippendorff_alpha(ratings: Sequence[Sequence[float]], level: str = "ordinal") -> float:
    """Krippendorff's α of raters x units data, NaN marking a missing value.

    Coincidence-matrix formulation of Krippendorff (2011), "Computing Krippendorff's
    Alpha-Reliability": each unit u with m_u >= 2 values adds 1/(m_u - 1) to o_ck for every
    ordered pair of its values (c, k) from different raters; units with fewer than 2 values are
    not pairable and are dropped. With n_c = Σ_k o_ck and n = Σ_c n_c::

        α = 1 - (n - 1) Σ_ck o_ck δ²_ck / Σ_ck n_c n_k δ²_ck

    δ² is 1 for c != k (``nominal``), (c - k)² (``interval``), or
    (Σ_{g=c..k} n_g - (n_c + n_k)/2)² (``ordinal``, values in their natural order).
    NaN when fewer than 2 pairable values exist or all of them are equal.
    """
    if level not in _LEVELS:
        raise ValueError(f"level must be one of {_LEVELS}, got {level!r}")
    data = _matrix(ratings, "ratings", allow_nan=True)
    values, inverse = np.unique(data, return_inverse=True)
    present = ~np.isnan(values)
    values = values[present]
    inverse = inverse.reshape(data.shape)
    # counts[u, c]: how many raters gave value c to unit u (NaN maps past the last value).
    counts = np.zeros((data.shape[1], len(values) + 1), dtype=np.float64)
    np.add.at(counts, (np.tile(np.arange(data.shape[1]), data.shape[0]), inverse.ravel()), 1)
    counts = counts[:, : len(values)]
    pairable = counts.sum(axis=1)
    counts = counts[pairable >= 2]
    if len(values) == 0 or len(counts) == 0:
        return float("nan")
    weighted = counts / (counts.sum(axis=1, keepdims=True) - 1)
    coincidences = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    return float(_alpha_from_coincidences(coincidences, values, level))


def virtual_rater_report(
    ratings_per_pair: Sequence[Sequence[int]] | Mapping[object, Sequence[int]],
    samples: int = 100,
    seed: int = 0,
    resamples: int = bootstrap.RESAMPLES,
) -> dict:
    """Agreement of three virtual raters, as in the VICR paper's Table 3 (SPEC section 6).

    For each pair with at least 3 ratings, 3 of its ratings are drawn without replacement and
    sorted: X the lowest, Y the middle, Z the highest. Over all pairs this gives three virtual
    raters; the draw is repeated ``samples`` times with ``numpy.random.default_rng(seed)``.
    Each statistic is reported as {"mean", "sd"} over the repetitions (sd with ddof = 1; NaN
    for a single repetition), scaled by 100 as in the paper:

    - ``tau_X_YZ``, ``tau_Y_XZ``, ``tau_Z_XY``: τ_c, method A, of one virtual rater against the
      other two as references;
    - ``kendall_w``: Kendall's W of X, Y, Z over the pairs, tie-corrected;
    - ``fleiss_kappa``: Fleiss' κ of X, Y, Z with categories 4 and 5 merged (as the paper does);
      ``fleiss_kappa_unmerged`` with the 5 categories;
    - ``krippendorff_alpha``: ordinal α of X, Y, Z.

    With ``resamples`` (1,000 by default; 0 for none) every statistic also gets ``ci_low``,
    ``ci_high`` (a 95% BCa interval from a seeded bootstrap over pairs, its levels expanded for
    small samples and its ends clipped to the statistic's range, ``scoring.bootstrap``) and
    ``se`` (the bootstrap standard error). Also ``pairs_used``, ``pairs_left_out`` (pairs with
    fewer than 3 ratings), ``samples``, ``resamples`` and ``seed``. ``ratings_per_pair`` holds
    each pair's ratings, whole numbers 1..5 (a mapping's values are used). Raises ValueError for
    other values or fewer than 2 usable pairs.
    """
    _check_count(samples, "samples", 1)
    _check_count(resamples, "resamples", 0)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValueError(f"seed must be a whole number, got {seed!r}")
    flat, starts, lengths, left_out = _ratings_table(ratings_per_pair)
    if len(lengths) < 2:
        raise ValueError(f"need at least 2 pairs with 3 or more ratings, got {len(lengths)}")
    rng = np.random.default_rng(seed)
    histograms = np.stack([_triple_histogram(_draw_virtual_raters(flat, starts, lengths, rng)) for _ in range(samples)])
    figures = _statistics_from_histograms(histograms)
    report: dict = {}
    for name, per_sample in figures.items():
        scaled = 100 * per_sample
        sd = float(scaled.std(ddof=1)) if samples > 1 else float("nan")
        report[name] = {"mean": float(scaled.mean()), "sd": sd}
    if resamples:
        _virtual_rater_intervals(report, bootstrap.level_counts(flat, lengths), samples, resamples, seed)
    report.update(
        pairs_used=len(lengths), pairs_left_out=left_out, samples=int(samples), resamples=int(resamples), seed=int(seed)
    )
    return report


def _virtual_rater_intervals(report: dict, counts: np.ndarray, samples: int, resamples: int, seed: int) -> None:
    """Add ci_low, ci_high and se to each statistic of ``report`` (see ``scoring.bootstrap``)."""
    groups, sizes = bootstrap.pair_groups(counts)
    triples = bootstrap.sorted_triple_distribution(groups).reshape(len(groups), -1)
    weights = bootstrap.multinomial_counts(sizes, resamples, bootstrap.bootstrap_rng(seed))
    left_out, stands_for = bootstrap.jackknife_weights(sizes)
    expected = np.vstack([sizes[None, :].astype(np.float64), weights, left_out]) @ triples
    figures = _statistics_from_histograms(expected.reshape(-1, *(3 * (len(SCALE),))))
    names = list(figures)
    everything = 100 * np.stack([figures[name] for name in names], axis=1)
    values, jackknife = everything[: resamples + 1], (everything[resamples + 1 :], stands_for)
    reported = np.array([report[name]["mean"] for name in names])
    draw_error = np.nan_to_num(np.array([report[name]["sd"] for name in names])) / np.sqrt(samples)
    bounds = np.array([BOUNDS[name] for name in names])
    low, high, se = bootstrap.interval(
        values[1:],
        whole=values[0],
        reported=reported,
        extra_se=draw_error,
        bounds=bounds,
        jackknife=jackknife,
        units=int(sizes.sum()),
    )
    for index, name in enumerate(names):
        report[name].update(ci_low=float(low[index]), ci_high=float(high[index]), se=float(se[index]))


def all_ratings_report(
    ratings_per_pair: Sequence[Sequence[int]] | Mapping[object, Sequence[int]],
    *,
    resamples: int = bootstrap.RESAMPLES,
    seed: int = 0,
) -> dict:
    """Agreement over every rating of every pair with 2 or more, not only three virtual raters.

    - ``krippendorff_alpha_ordinal``, ``krippendorff_alpha_interval``: α with each pair a unit
      and all its ratings its values (raters need not be the same across pairs);
    - ``icc1``: ICC(1), one-way random effects, single rating; ``icc1k``: ICC(1,k), the mean of
      k ratings (Shrout & Fleiss 1979, "Intraclass correlations", Psychological Bulletin 86,
      420-428; with unequal numbers of ratings per pair, k = n0 = (N - Σ n_i² / N) / (a - 1),
      Snedecor & Cochran's average group size):
      ICC(1) = (MSB - MSW) / (MSB + (n0 - 1) MSW), ICC(1,k) = (MSB - MSW) / MSB.

    Each is {"value", "ci_low", "ci_high", "se"} ×100, the interval from a seeded bootstrap over
    pairs (``resamples``; 0 for none). Also ``pairs``, ``ratings``, ``mean_ratings_per_pair``.
    Raises ValueError for ratings outside 1..5 or fewer than 2 pairs with 2 or more ratings.
    """
    _check_count(resamples, "resamples", 0)
    flat, _, lengths, _ = _ratings_table(ratings_per_pair, minimum=2)
    if len(lengths) < 2:
        raise ValueError(f"need at least 2 pairs with 2 or more ratings, got {len(lengths)}")
    groups, sizes = bootstrap.pair_groups(bootstrap.level_counts(flat, lengths))
    weights = sizes[None, :].astype(np.float64)
    if resamples:
        left_out, stands_for = bootstrap.jackknife_weights(sizes)
        resampled = bootstrap.multinomial_counts(sizes, resamples, bootstrap.bootstrap_rng(seed))
        weights = np.vstack([weights, resampled, left_out])
    figures = _all_ratings_statistics(groups, weights)
    report: dict = {}
    for name, values in figures.items():
        scaled = 100 * values
        entry = {"value": float(scaled[0])}
        if resamples:
            jackknife = (scaled[resamples + 1 :, None], stands_for)
            low, high, se = bootstrap.interval(
                scaled[1 : resamples + 1, None],
                whole=scaled[:1],
                reported=scaled[:1],
                bounds=BOUNDS[name],
                jackknife=jackknife,
                units=int(lengths.size),
            )
            entry.update(ci_low=float(low[0]), ci_high=float(high[0]), se=float(se[0]))
        report[name] = entry
    report.update(
        pairs=int(lengths.size),
        ratings=int(lengths.sum()),
        mean_ratings_per_pair=float(lengths.mean()),
        resamples=int(resamples),
        seed=int(seed),
    )
    return report


def _all_ratings_statistics(groups: np.ndarray, weights: np.ndarray) -> dict[str, np.ndarray]:
    """α and ICC for each row of weights (how many pairs of each group), from per-group sums."""
    n = groups.astype(np.float64)  # groups x 5: ratings of each level
    size = n.sum(axis=1)
    # Coincidences of one unit: n_c n_k / (m - 1) off the diagonal, n_c (n_c - 1) / (m - 1) on it.
    coincidences = (n[:, :, None] * n[:, None, :] - n[:, :, None] * np.eye(len(SCALE))) / (size - 1)[:, None, None]
    pooled = np.tensordot(weights, coincidences, axes=1)
    total = n @ SCALE
    squares = n @ SCALE**2
    a = weights.sum(axis=1)
    ratings = weights @ size
    grand = weights @ total
    between = weights @ (total**2 / size) - grand**2 / ratings  # SSB
    within = weights @ squares - weights @ (total**2 / size)  # SSW
    msb, msw = between / (a - 1), within / (ratings - a)
    n0 = (ratings - (weights @ size**2) / ratings) / (a - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        icc1 = (msb - msw) / (msb + (n0 - 1) * msw)
        icc1k = (msb - msw) / msb
    return {
        "krippendorff_alpha_ordinal": _alpha_from_coincidences(pooled, SCALE, "ordinal"),
        "krippendorff_alpha_interval": _alpha_from_coincidences(pooled, SCALE, "interval"),
        "icc1": icc1,
        "icc1k": icc1k,
    }


def _check_count(value: object, name: str, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(f"{name} must be a whole number >= {minimum}, got {value!r}")


# --- virtual raters: sampling -------------------------------------------------------------


def _ratings_table(ratings_per_pair, minimum: int = _RATERS) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Ratings of the pairs with ``minimum``+ ratings, flattened (CSR: flat values, start, length per pair)."""
    pairs = list(ratings_per_pair.values() if isinstance(ratings_per_pair, Mapping) else ratings_per_pair)
    lengths = np.fromiter((len(pair) for pair in pairs), dtype=np.int64, count=len(pairs))
    flat = np.fromiter(chain.from_iterable(pairs), dtype=np.float64, count=int(lengths.sum()))
    bad = ~(np.isin(flat, SCALE))
    if bad.any():
        first = int(np.argmax(bad))
        pair = int(np.searchsorted(np.cumsum(lengths), first, side="right"))
        raise ValueError(f"pair {pair}: rating {flat[first]!r} is not a whole number from 1 to 5")
    usable = lengths >= minimum
    kept_lengths = lengths[usable]
    kept_starts = np.cumsum(kept_lengths) - kept_lengths
    return flat[np.repeat(usable, lengths)].astype(np.int8), kept_starts, kept_lengths, int((~usable).sum())


def _draw_virtual_raters(flat: np.ndarray, starts: np.ndarray, lengths: np.ndarray, rng) -> np.ndarray:
    """One repetition: 3 ratings per pair drawn without replacement, sorted; shape (pairs, 3).

    Three distinct positions out of k are drawn as a, then b among the k - 1 others, then c
    among the k - 2 others (each skip shifts past the positions already taken), so every
    3-subset is equally likely, for any k, with 3 random integers per pair and no sorting.
    """
    a = rng.integers(0, lengths)
    b = rng.integers(0, lengths - 1)
    c = rng.integers(0, lengths - 2)
    b += b >= a
    low, high = np.minimum(a, b), np.maximum(a, b)
    c += c >= low
    c += c >= high
    first, second, third = flat[starts + a], flat[starts + b], flat[starts + c]
    lowest = np.minimum(np.minimum(first, second), third)
    highest = np.maximum(np.maximum(first, second), third)
    middle = first + second + third - lowest - highest
    return np.stack([lowest, middle, highest], axis=1)


def _triple_histogram(xyz: np.ndarray) -> np.ndarray:
    """Counts of each (X, Y, Z) triple on the 1..5 scale, shape (5, 5, 5)."""
    codes = (xyz[:, 0].astype(np.int64) - 1) * 25 + (xyz[:, 1] - 1) * 5 + (xyz[:, 2] - 1)
    return np.bincount(codes, minlength=125).reshape(5, 5, 5)


# --- virtual raters: statistics from the (X, Y, Z) histograms ------------------------------


def _statistics_from_histograms(histograms: np.ndarray) -> dict[str, np.ndarray]:
    """Every Table 3 statistic per repetition (unscaled), from histograms of shape (samples, 5, 5, 5)."""
    xy = histograms.sum(axis=3)  # joint counts of (X, Y)
    xz = histograms.sum(axis=2)
    yz = histograms.sum(axis=1)
    swap = (0, 2, 1)
    merged = np.array([0, 1, 2, 3, 3])  # categories 4 and 5 merged (index of rating - 1)
    return {
        # Method A: the rater's values paired with each reference in turn = sum of the two tables.
        "tau_X_YZ": _tau_c_from_tables(xy + xz),
        "tau_Y_XZ": _tau_c_from_tables(xy.transpose(swap) + yz),
        "tau_Z_XY": _tau_c_from_tables(xz.transpose(swap) + yz.transpose(swap)),
        "kendall_w": _kendall_w_from_histograms(histograms),
        "fleiss_kappa": _fleiss_kappa_from_histograms(histograms, merged),
        "fleiss_kappa_unmerged": _fleiss_kappa_from_histograms(histograms, np.arange(5)),
        # Every unit has m_u = 3 values: its 6 ordered pairs each weigh 1/(m_u - 1) = 1/2.
        "krippendorff_alpha": _alpha_from_coincidences(
            (xy + xy.transpose(swap) + xz + xz.transpose(swap) + yz + yz.transpose(swap)) / 2, SCALE, "ordinal"
        ),
    }


def _tau_c_from_tables(tables: np.ndarray) -> np.ndarray:
    """τ_c from contingency tables (..., r, c) of two ordinal variables, as scipy defines it.

    Concordant pairs: cell (i, j) with every cell below-right; discordant: below-left.
    τ_c = 2 (P - Q) / (n² (m - 1)/m), m = the smaller number of distinct values (occupied rows
    or columns); NaN when either variable is constant.
    """
    tables = np.asarray(tables, dtype=np.float64)  # counts, or expected counts in the bootstrap
    below = np.zeros_like(tables)
    below[..., :-1, :] = np.cumsum(tables[..., ::-1, :], axis=-2)[..., ::-1, :][..., 1:, :]
    below_right = np.zeros_like(tables)
    below_right[..., :, :-1] = np.cumsum(below[..., :, ::-1], axis=-1)[..., :, ::-1][..., :, 1:]
    below_left = np.zeros_like(tables)
    below_left[..., :, 1:] = np.cumsum(below, axis=-1)[..., :, :-1]
    concordant_minus_discordant = (tables * (below_right - below_left)).sum(axis=(-2, -1))
    size = tables.sum(axis=(-2, -1)).astype(np.float64)
    classes = np.minimum((tables.sum(axis=-1) > 0).sum(axis=-1), (tables.sum(axis=-2) > 0).sum(axis=-1))
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = 2 * concordant_minus_discordant / (size**2 * (classes - 1) / classes)
    return np.where(classes > 1, np.clip(tau, -1.0, 1.0), np.nan)


def _kendall_w_from_histograms(histograms: np.ndarray) -> np.ndarray:
    """Tie-corrected W of X, Y, Z: ranks of integer data from the count of each value."""
    marginals = [histograms.sum(axis=(2, 3)), histograms.sum(axis=(1, 3)), histograms.sum(axis=(1, 2))]
    n = histograms.sum(axis=(1, 2, 3)).astype(np.float64)
    m = _RATERS
    # Average rank of value v: the count of smaller values plus the middle of v's tie group.
    ranks = [np.cumsum(c, axis=1) - c + (c + 1) / 2 for c in marginals]
    rank_sums = ranks[0][:, :, None, None] + ranks[1][:, None, :, None] + ranks[2][:, None, None, :]
    spread = (histograms * (rank_sums - (m * (n[:, None, None, None] + 1) / 2)) ** 2).sum(axis=(1, 2, 3))
    ties = sum((c.astype(np.float64) ** 3 - c).sum(axis=1) for c in marginals)
    denominator = m**2 * (n**3 - n) - m * ties
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, 12 * spread / denominator, np.nan)


def _fleiss_kappa_from_histograms(histograms: np.ndarray, category_of: np.ndarray) -> np.ndarray:
    """Fleiss' κ of X, Y, Z; ``category_of[v - 1]`` is the category of rating v (to merge levels)."""
    x, y, z = np.meshgrid(category_of, category_of, category_of, indexing="ij")
    # Σ_j n_ij² = m + 2 × (number of rater pairs that agree), so P_i = agreeing pairs / 3.
    agreeing_pairs = (x == y).astype(np.int64) + (x == z) + (y == z)
    n = histograms.sum(axis=(1, 2, 3)).astype(np.float64)
    agreement = (histograms * agreeing_pairs).sum(axis=(1, 2, 3)) / (3 * n)
    per_rating = histograms.sum(axis=(2, 3)) + histograms.sum(axis=(1, 3)) + histograms.sum(axis=(1, 2))
    per_category = np.zeros((len(histograms), category_of.max() + 1))
    np.add.at(per_category, (slice(None), category_of), per_rating)
    chance = ((per_category / (_RATERS * n[:, None])) ** 2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(chance < 1, (agreement - chance) / (1 - chance), np.nan)


def _alpha_from_coincidences(coincidences: np.ndarray, values: np.ndarray, level: str) -> np.ndarray:
    """Krippendorff's α from coincidence matrices (..., V, V) over the sorted ``values``."""
    totals = coincidences.sum(axis=-1)  # n_c
    n = totals.sum(axis=-1)
    if level == "nominal":
        delta2 = np.broadcast_to(1.0 - np.eye(len(values)), coincidences.shape)
    elif level == "interval":
        delta2 = np.broadcast_to((values[:, None] - values[None, :]).astype(np.float64) ** 2, coincidences.shape)
    else:
        # Σ_{g=c..k} n_g - (n_c + n_k)/2 = mid_k - mid_c with mid = cumsum(n) - n/2.
        mid = np.cumsum(totals, axis=-1) - totals / 2
        delta2 = (mid[..., None, :] - mid[..., :, None]) ** 2
    observed = (coincidences * delta2).sum(axis=(-2, -1))
    expected = (totals[..., :, None] * totals[..., None, :] * delta2).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((expected > 0) & (n > 1), 1 - (n - 1) * observed / expected, np.nan)


def _matrix(ratings, name: str, allow_nan: bool = False) -> np.ndarray:
    data = np.asarray(ratings, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError(f"{name} must be a 2-D table, got shape {data.shape}")
    if np.isinf(data).any() or (not allow_nan and np.isnan(data).any()):
        raise ValueError(f"{name} must hold finite numbers" + ("" if allow_nan else " (no missing values)"))
    return data
