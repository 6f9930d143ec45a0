"""Confidence intervals by a seeded bootstrap over pairs (SPEC section 6, "Uncertainty"). No Django.

The sd over the virtual-rater draws measures only the draws; the pairs are a sample too, and a
bootstrap over pairs gives a standard error 1.7-2.5 times larger. Every statistic of the export
therefore gets a 95% interval from ``RESAMPLES`` resamples of the pairs, drawn with replacement.

Speed: at VICR scale (15,646 pairs) 1,000 resamples, each redoing 100 virtual-rater draws, would
cost minutes. Two facts make it cheap and exact:

* Pairs with the same multiset of ratings are interchangeable, and VICR's 3-7 ratings on 5
  levels make at most a few hundred such groups. Resampling pairs with replacement is drawing
  each group's count from a multinomial over the groups (``multinomial_counts``).
* Each draw of the virtual raters is linear in the pairs: a pair contributes one sorted triple
  (X, Y, Z) to the draw's histogram. The draws are integrated out exactly with each group's
  distribution of sorted triples (``sorted_triple_distribution``): the limit of redoing the draws
  infinitely often per resample. What remains of the reported 100-draw mean's Monte Carlo error
  (sd / sqrt(draws), about 1% of the interval's width at VICR scale) is added in quadrature.

The interval is the BCa interval, bias-corrected and accelerated (Efron & Tibshirani 1993, "An
Introduction to the Bootstrap", chapter 14): the replicates' quantiles at levels moved by the
share of replicates below the estimate (the bias) and by the jackknife's skewness (the
acceleration). The statistics here are biased in small samples the way their replicates are
biased again: method A's τ_c counts n² rather than n(n - 1) row pairs (a factor (N - 1)/N), and
a resample holds duplicated pairs, more ties still; at 60 pairs of VICR-like ratings τ_X-YZ's
mean lies about half a standard error below its population value. The percentile interval
inherits that bias one-sidedly (its τ_c intervals fell short of 95% at 60 pairs in
``bench/bench_agreement.py --coverage --method percentile``); BCa corrects it.
scipy.stats.bootstrap(method="BCa") computes the same interval from a statistic it calls on
resampled data; here the resamples are multinomial counts of groups of interchangeable pairs,
for speed, and so is the jackknife (one pair of each group left out in turn), so the levels are
taken here (the tests check them against scipy's).

The normal quantile ±1.96 of the BCa levels is "expanded" to ±sqrt(N / (N - 1)) t_{N-1, 0.975}
for N resampled pairs (Hesterberg 2015, "What teachers should know about the bootstrap", The
American Statistician 69(4), 371-386: the "expanded percentile interval"): the bootstrap's
spread is that of the sample, divided by N rather than N - 1, and a 1.96 that ignores the
uncertainty of that spread; both make a bootstrap interval too narrow in small samples. ±2.018
at 60 pairs, ±1.974 at 249, ±1.962 at 2,000: nothing changes at VICR scale. On the same 600
simulated samples of 60 pairs per population the twelve statistics' mean coverage went from
0.943-0.944 with ±1.96 to 0.950 expanded. ``bench/bench_agreement.py --coverage``
prints every statistic's coverage at 60, 249 and 2,000 pairs with its binomial interval.

The interval is moved by the difference between the reported figure and the statistic of the
whole sample (the statistic of an expected histogram differs from a mean over draws by a small,
constant amount) and clipped to the statistic's range (Kendall's W in [0, 100], α, κ and ICC at
most 100, τ_c in [-100, 100] on the reports' ×100 scale).
"""

import numpy as np
from scipy import stats

RESAMPLES = 1000
LEVEL = 0.95
SCALE_LEVELS = 5


def bootstrap_rng(seed: int) -> np.random.Generator:
    """The resampling stream of ``seed``: separate from the virtual-rater draws' stream, so adding
    intervals changes no point estimate."""
    return np.random.default_rng([int(seed), 1])


def level_counts(flat: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """How many ratings of each level 1..5 every pair has (pairs x 5), from the ratings in pair
    order (``flat``) and each pair's number of them (``lengths``)."""
    counts = np.zeros((lengths.size, SCALE_LEVELS), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(lengths.size), lengths), flat.astype(np.int64) - 1), 1)
    return counts


def pair_groups(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct rows of ``counts``, how many pairs have each): interchangeable pairs."""
    groups, sizes = np.unique(counts, axis=0, return_counts=True)
    return groups, sizes


def multinomial_counts(sizes: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """resamples x groups: how often each group's pairs are drawn when all pairs are resampled.

    A multinomial over the groups when they are few; with many small groups (one pair each, as
    for model scores), drawing the pairs' indices and counting them is faster.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    if 4 * len(sizes) < total:
        return rng.multinomial(total, sizes / total, size=resamples).astype(np.float64)
    group_of = np.repeat(np.arange(len(sizes)), sizes)[rng.integers(0, total, (resamples, total))]
    rows = np.arange(resamples)[:, None] * len(sizes)
    return np.bincount((rows + group_of).ravel(), minlength=resamples * len(sizes)).reshape(resamples, -1).astype(float)


def sorted_triple_distribution(counts: np.ndarray) -> np.ndarray:
    """groups x 5 x 5 x 5: the chance that 3 ratings drawn without replacement sort to (X, Y, Z).

    With n_v ratings of level v among k: n_a n_b n_c subsets give a < b < c, C(n_a, 2) n_c give
    a = b < c, n_a C(n_b, 2) give a < b = c and C(n_a, 3) give a = b = c, out of C(k, 3).
    """
    n = counts.astype(np.float64)
    pairs = n * (n - 1) / 2
    triples = pairs * (n - 2) / 3
    out = np.zeros((len(n), SCALE_LEVELS, SCALE_LEVELS, SCALE_LEVELS))
    for a in range(SCALE_LEVELS):
        out[:, a, a, a] = triples[:, a]
        for b in range(a + 1, SCALE_LEVELS):
            out[:, a, a, b] = pairs[:, a] * n[:, b]
            out[:, a, b, b] = n[:, a] * pairs[:, b]
            for c in range(b + 1, SCALE_LEVELS):
                out[:, a, b, c] = n[:, a] * n[:, b] * n[:, c]
    k = n.sum(axis=1)
    return out / (k * (k - 1) * (k - 2) / 6)[:, None, None, None]


# The interval method of every statistic (see the module's docstring); the others for comparison.
METHOD = "bca"
# How the reports, the datasheet and the dataset card name it.
METHOD_WORDS = (
    "a BCa (bias-corrected and accelerated) bootstrap over pairs, its levels expanded for small samples "
    "(Hesterberg 2015), clipped to the range of the statistic"
)
METHODS = ("bca", "basic", "percentile")
# Above this many groups of pairs the jackknife of the BCa interval leaves out blocks of groups.
JACKKNIFE_EXACT = 1000
JACKKNIFE_BLOCKS = 200
UNBOUNDED = (-np.inf, np.inf)


def jackknife_weights(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows x groups: how many pairs of each group a jackknife sample keeps, how many pairs each
    row stands for). One pair of each group left out in turn (the pairs of a group are
    interchangeable, so that is the whole jackknife over pairs); with more than
    ``JACKKNIFE_EXACT`` groups, one of ``JACKKNIFE_BLOCKS`` contiguous blocks of groups left out."""
    sizes = np.asarray(sizes, dtype=np.float64)
    if len(sizes) <= JACKKNIFE_EXACT:
        return sizes[None, :] - np.eye(len(sizes)), sizes
    block = np.arange(len(sizes)) * JACKKNIFE_BLOCKS // len(sizes)
    weights = np.repeat(sizes[None, :], JACKKNIFE_BLOCKS, axis=0)
    weights[block, np.arange(len(sizes))] = 0
    return weights, np.ones(JACKKNIFE_BLOCKS)


def acceleration(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The BCa acceleration per statistic from jackknife values (rows x statistics), each row
    standing for ``counts`` pairs (Efron & Tibshirani 1993, eq. 14.15). NaN rows are left out."""
    finite = np.isfinite(values)
    weight = np.where(finite, np.asarray(counts, dtype=np.float64)[:, None], 0.0)
    values = np.where(finite, values, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = (weight * values).sum(axis=0) / weight.sum(axis=0)
        d = np.where(finite, mean - values, 0.0)
        spread = (weight * d**2).sum(axis=0)
        return np.where(spread > 0, (weight * d**3).sum(axis=0) / (6 * spread**1.5), 0.0)


def normal_quantiles(units: int | None) -> np.ndarray:
    """The two quantiles (low, high) that the 95% interval puts on the normal scale: ±1.96, or for
    ``units`` resampled pairs Hesterberg's expanded ±sqrt(N / (N - 1)) t_{N-1} (module docstring)."""
    alpha = (1 - LEVEL) / 2
    if units is None or units < 3:
        return stats.norm.ppf([alpha, 1 - alpha])
    return np.sqrt(units / (units - 1)) * stats.t.ppf([alpha, 1 - alpha], units - 1)


def _bca_quantiles(
    replicates: np.ndarray, whole: np.ndarray, jackknife: tuple, quantiles: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The BCa interval's ends (Efron & Tibshirani 1993, section 14.3): the replicates' quantiles
    at levels moved by the bias correction z0 (the share of replicates below the estimate) and the
    acceleration. scipy.stats.bootstrap(method="BCa") computes the same from a statistic it calls
    itself; here the replicates come from weighted groups of pairs, so the levels are taken here.
    ``quantiles``: the normal quantiles of the ends (``normal_quantiles``)."""
    accel = acceleration(*jackknife)
    low, high = np.full(np.shape(whole), np.nan), np.full(np.shape(whole), np.nan)
    for column in range(replicates.shape[1]):
        values = replicates[:, column][np.isfinite(replicates[:, column])]
        if not values.size:
            continue
        below = (np.sum(values < whole[column]) + 0.5 * np.sum(values == whole[column])) / values.size
        z0 = stats.norm.ppf(np.clip(below, 0.5 / values.size, 1 - 0.5 / values.size))
        levels = []
        for z in quantiles:
            levels.append(stats.norm.cdf(z0 + (z0 + z) / (1 - accel[column] * (z0 + z))))
        low[column], high[column] = np.quantile(values, levels)
    return low, high


def interval(
    replicates: np.ndarray,
    *,
    whole: np.ndarray,
    reported: np.ndarray,
    extra_se: np.ndarray | float = 0.0,
    bounds: tuple[float, float] | np.ndarray = UNBOUNDED,
    method: str | None = None,
    jackknife: tuple[np.ndarray, np.ndarray] | None = None,
    units: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, se) per statistic from replicates (resamples x statistics).

    The interval of ``METHOD`` (or ``method``) from ``replicates`` about ``whole`` (the statistic
    of the whole sample computed the way the replicates were; BCa also needs ``jackknife``: the
    statistic with pairs left out, and how many pairs each row stands for, ``jackknife_weights``),
    moved by ``reported - whole``; each half-width is widened in quadrature by the upper normal
    quantile (1.96, or expanded) x ``extra_se``, and both ends are clipped to ``bounds`` (low,
    high; or an array of them, statistics x 2). ``units``: how many pairs each resample draws,
    for the small-sample expansion of the levels (``normal_quantiles``; none without it). NaN
    replicates (a resample with one category only) are ignored; NaN when fewer than half of them
    are finite.
    """
    method = method or METHOD
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    quantiles = normal_quantiles(units)
    finite = np.isfinite(replicates)
    with np.errstate(invalid="ignore"):
        q_low, q_high = np.nanquantile(np.where(finite, replicates, np.nan), stats.norm.cdf(quantiles), axis=0)
        se = np.nanstd(np.where(finite, replicates, np.nan), axis=0, ddof=1)
    if method == "bca":
        if jackknife is None:
            raise ValueError("the BCa interval needs the jackknife values")
        q_low, q_high = _bca_quantiles(replicates, np.atleast_1d(whole), jackknife, quantiles)
    if method == "basic":
        below, above = q_high - whole, whole - q_low
    else:
        below, above = whole - q_low, q_high - whole
    widen = (quantiles[1] * np.asarray(extra_se)) ** 2
    # Widened in quadrature; a (rare) negative half-width keeps its sign.
    below = below + np.sqrt(below**2 + widen) - np.abs(below)
    above = above + np.sqrt(above**2 + widen) - np.abs(above)
    enough = finite.sum(axis=0) >= replicates.shape[0] / 2
    limits = np.broadcast_to(np.asarray(bounds, dtype=np.float64), (*np.shape(whole), 2))
    low = np.where(enough, np.clip(reported - below, limits[..., 0], limits[..., 1]), np.nan)
    high = np.where(enough, np.clip(reported + above, limits[..., 0], limits[..., 1]), np.nan)
    return low, high, np.where(enough, np.sqrt(se**2 + np.asarray(extra_se) ** 2), np.nan)
