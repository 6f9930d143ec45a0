"""Rater competency with Masters' Partial Credit Model (VICR paper, section 4).

Each rating is scored against the pair's reference with the paper's rubric: Exact
Agreement (EA) = 2, Adjacent Agreement (AA) = 1, Lack of Agreement (LA) = 0. The scores
form a raters x items matrix that is fitted with the Partial Credit Model (Masters, 1982,
"A Rasch model for partial credit scoring", Psychometrika 47, 149-174):

    P(X_ni = k) ∝ exp(sum_{j<=k} (theta_n - delta_ij)),  k = 0..m,  empty sum for k = 0,

theta_n the rater's competency and delta_ij the step difficulties of item (pair) i, in logits.

The paper cites Masters (1988), "The analysis of partial credit scoring", Applied
Measurement in Education 1, 279-297.

Estimator: joint maximum likelihood (JML; Wright & Masters 1982, "Rating Scale Analysis"),
alternating Newton steps for all raters, then all items, over index arrays of the
observed (rater, item, score) triples. The JML estimating equations are: observed raw score
of a rater = its expected score; observed count of scores >= j on an item = its expected
count. No library fits a sparse PCM by JML (statsmodels has no Rasch/PCM model, the
psychometric packages are R), hence this module.

Identification: the mean of all estimated thresholds is 0 logits.

Extreme and null-category data (a statistic at its minimum or maximum has no finite MLE):

* Extreme raters and items (all observed scores at the minimum, or all at the maximum) are
  removed, repeatedly, since removing an extreme item can make a rater extreme and vice
  versa; all of these are flagged extreme. The rest (the core) is fitted. The removed ones
  are then estimated with the core anchored, from all their responses, with the score
  moved 0.3 score points toward the centre (Winsteps' default extreme-score adjustment,
  EXTRSC=0.3; Linacre, "A User's Guide to Winsteps"). For an extreme item, 0.2 responses
  move from its one category, 0.1 to each other one (counts N-0.2, 0.1, 0.1 for an all-LA
  item): the score moves by 0.3 and both thresholds are finite. Step difficulties of such
  items are reversed by construction; their Thurstonian thresholds
  (:func:`thurstonian_thresholds`) are the readable summary.
* A category that is never observed anywhere in the data is structural: the scores are
  renumbered consecutively (Winsteps' "ordinal" rescoring, STKEEP=NO) and the rubric
  thresholds it spans are reported as one step: with only LA and EA observed both
  thresholds are that step; with only LA and AA the EA threshold is NaN; with only AA and
  EA the AA threshold is NaN. With two categories the model is the dichotomous Rasch model.
* A category never observed on one non-extreme item (e.g. nobody scored AA) is an
  incidental zero. The item's category counts n are smoothed by eps = 0.3 along the
  direction that keeps its count and its total score: n + eps * (1, -2, 1) when AA was
  observed, n + eps * (-1, 2, -1) when AA is the missing one. Keeping the score keeps the
  raters' and items' estimating equations consistent (both sum to the grand total score),
  so the fit is still the maximum of the JML likelihood, with these sufficient statistics.
  This is the epsilon-adjustment idea of Bertoli-Barsotti, Lando & Punzo (2014), as used
  by R immer::immer_jml (eps = 0.3), applied only where a category count is zero.

Bias correction: JML item estimates are spread too far by about L/(L-1), L the number of
items per person (Wright & Douglas 1977, "Best procedures for sample-free item analysis",
Applied Psychological Measurement 1, 281-295; Wright 1988, "The efficacy of unconditional
maximum likelihood bias correction", Rasch memo 45). As in Winsteps (STBIAS=YES) and
immer_jml's "jml_bc", the centred thresholds are multiplied by (L-1)/L, L the mean number of
responses per core rater, and the raters are re-estimated with the items anchored. The
symmetric bias, of the raters' estimates when each item has only a few raters (VICR: 3 to
7), is not corrected; bench/bench_pcm.py measures it at VICR scale.

``converged`` is False when max_iter was reached: too few iterations, or data with no
finite JML solution even after these adjustments (a perfect Guttman pattern, such as every
rater scoring higher than every other on every shared item); the estimates then keep
drifting apart and should not be read.

Standard errors are the model-based ones: 1/sqrt(information) for a rater, the square root
of the diagonal of the inverse of the item's m x m information matrix for its thresholds.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import statsmodels.api as sm

MAX_SCORE = 2  # the rubric: LA = 0, AA = 1, EA = 2
EXTREME_SCORE_ADJUSTMENT = 0.3
NULL_CATEGORY_EPS = 0.3
MAX_STEP = 1.0  # logits per Newton step; keeps early iterations from overshooting


@dataclass(frozen=True, eq=False)
class PCMResult:
    """A fitted Partial Credit Model. All measures are in logits.

    abilities, ability_se: one per rater; NaN for a rater with no response.
    thresholds, threshold_se: items x 2, the step difficulties delta_i1 (LA -> AA) and
    delta_i2 (AA -> EA); NaN for an item with no response, or for a step of a category
    never observed in the whole data set.
    rater_extreme, item_extreme: all scores at the minimum or maximum (directly, or once
    other extreme ones are removed); estimated with the 0.3-point adjustment (see module).
    item_null_category: non-extreme items with a category never observed on them (smoothed).
    categories: the rubric scores observed in the data; bias_factor: the (L-1)/L applied.
    """

    abilities: np.ndarray
    ability_se: np.ndarray
    thresholds: np.ndarray
    threshold_se: np.ndarray
    converged: bool
    iterations: int
    rater_extreme: np.ndarray
    item_extreme: np.ndarray
    item_null_category: np.ndarray
    categories: tuple[int, ...]
    bias_factor: float

    @property
    def extreme_raters(self) -> list[int]:
        return np.flatnonzero(self.rater_extreme).tolist()

    @property
    def extreme_items(self) -> list[int]:
        return np.flatnonzero(self.item_extreme).tolist()


def rubric_score(rating: int, reference: int) -> int:
    """The paper's rubric (section 4): EA = 2 (exact), AA = 1 (off by one), LA = 0."""
    if int(rating) != rating or int(reference) != reference:
        raise ValueError("ratings and references are whole numbers on the 5-level scale")
    return max(0, 2 - abs(int(rating) - int(reference)))


def rubric_scores(ratings: np.ndarray | Sequence, references: np.ndarray | Sequence) -> np.ndarray:
    """Vectorised :func:`rubric_score`, broadcasting; NaN where either value is NaN.

    The result can be fed to :func:`fit_pcm` (a raters x items array with NaN for missing).
    """
    ratings = np.asarray(ratings, dtype=float)
    references = np.asarray(references, dtype=float)
    distance = np.abs(ratings - references)
    finite = distance[np.isfinite(distance)]
    if np.any(finite != np.round(finite)):
        raise ValueError("ratings and references are whole numbers on the 5-level scale")
    return np.where(np.isnan(distance), np.nan, np.maximum(0.0, 2.0 - distance))


def _category_probs(theta: np.ndarray, cum_delta: np.ndarray) -> np.ndarray:
    """PCM probabilities, observations x (m+1); cum_delta[:, k] = sum_{j<=k} delta_j."""
    m = cum_delta.shape[1] - 1
    eta = np.arange(m + 1) * theta[:, None] - cum_delta
    eta -= eta.max(axis=1, keepdims=True)  # softmax without overflow
    p = np.exp(eta)
    p /= p.sum(axis=1, keepdims=True)
    return p


def _cumulative(delta: np.ndarray) -> np.ndarray:
    return np.hstack([np.zeros((delta.shape[0], 1)), np.cumsum(delta, axis=1)])


def _item_information(p: np.ndarray, i_obs: np.ndarray, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    """Expected counts of 'score >= j' per item (items x m) and their information (items x m x m).

    With q_j = P(X >= j), Cov(1[X >= j], 1[X >= k]) = q_max(j,k) - q_j q_k.
    """
    m = p.shape[1] - 1
    q = np.cumsum(p[:, ::-1], axis=1)[:, ::-1][:, 1:]  # q[:, j-1] = P(X >= j)
    expected = np.stack([np.bincount(i_obs, q[:, j], n_items) for j in range(m)], axis=1)
    info = np.empty((n_items, m, m))
    for j in range(m):
        for k in range(j, m):
            cov = q[:, k] - q[:, j] * q[:, k]
            info[:, j, k] = info[:, k, j] = np.bincount(i_obs, cov, n_items)
    return expected, info


def _solve_items(info: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    # A tiny ridge: an item answered only by raters far from it has near-zero information.
    m = info.shape[1]
    return np.linalg.solve(info + 1e-9 * np.eye(m), rhs[..., None])[..., 0]


def _fit(
    r_obs: np.ndarray,
    i_obs: np.ndarray,
    theta: np.ndarray,
    delta: np.ndarray,
    rater_target: np.ndarray,
    item_target: np.ndarray,
    free_raters: np.ndarray,
    free_items: np.ndarray,
    *,
    centre: bool,
    max_iter: int,
    tol: float,
) -> tuple[bool, int]:
    """Alternating Newton steps (in place) for the free raters, then the free items.

    rater_target: the raw score each rater must reproduce; item_target: items x m counts of
    'score >= j'. With centre, the free thresholds are shifted to mean 0 after every round
    (all parameters shift together, so the likelihood is unchanged).
    """
    n_raters, n_items = theta.size, delta.shape[0]
    m = delta.shape[1]
    scores = np.arange(m + 1)
    fit_raters, fit_items = free_raters.any(), free_items.any()
    for iteration in range(1, max_iter + 1):
        change = 0.0
        if fit_raters:
            p = _category_probs(theta[r_obs], _cumulative(delta)[i_obs])
            e = p @ scores
            v = p @ scores**2 - e**2
            gradient = rater_target - np.bincount(r_obs, e, n_raters)
            information = np.bincount(r_obs, v, n_raters)
            step = np.clip(gradient[free_raters] / information[free_raters], -MAX_STEP, MAX_STEP)
            theta[free_raters] += step
            change = max(change, float(np.abs(step).max()))
        if fit_items:
            p = _category_probs(theta[r_obs], _cumulative(delta)[i_obs])
            expected, info = _item_information(p, i_obs, n_items)
            step = _solve_items(info[free_items], expected[free_items] - item_target[free_items])
            step = np.clip(step, -MAX_STEP, MAX_STEP)
            delta[free_items] += step
            change = max(change, float(np.abs(step).max()))
        if centre and fit_items:
            shift = delta[free_items].mean()
            delta[free_items] -= shift
            theta[free_raters] -= shift
        if change < tol:
            return True, iteration
    return False, max_iter


def _prune_extremes(
    r_obs: np.ndarray, i_obs: np.ndarray, x: np.ndarray, m: int, n_raters: int, n_items: int
) -> np.ndarray:
    """Mask of observations left once extreme raters and items are removed, repeatedly."""
    active = np.ones(x.size, dtype=bool)
    while True:
        removed = False
        for index, size in ((r_obs, n_raters), (i_obs, n_items)):
            count = np.bincount(index[active], minlength=size)
            total = np.bincount(index[active], x[active], size)
            extreme = (count > 0) & ((total == 0) | (total == m * count))
            drop = active & extreme[index]
            if drop.any():
                active &= ~drop
                removed = True
        if not removed:
            return active


def _item_counts(i_obs: np.ndarray, x: np.ndarray, m: int, n_items: int) -> np.ndarray:
    return np.bincount(i_obs * (m + 1) + x, minlength=n_items * (m + 1)).reshape(n_items, m + 1).astype(float)


def _smooth_null_categories(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Score-preserving eps smoothing of items with a zero category (module docstring)."""
    counts = counts.copy()
    m = counts.shape[1] - 1
    null = (counts.sum(axis=1) > 0) & (counts == 0).any(axis=1)
    if m == 2:
        sign = np.where(counts[:, 1] > 0, 1.0, -1.0)
        counts[null] += NULL_CATEGORY_EPS * sign[null, None] * np.array([1.0, -2.0, 1.0])
    return counts, null


def _extreme_item_counts(counts: np.ndarray) -> np.ndarray:
    """Move 0.3 score points toward the centre, 0.1 into each missing category for m = 2."""
    counts = counts.copy()
    m = counts.shape[1] - 1
    n = counts.sum(axis=1)
    low, high = counts[:, 0] == n, counts[:, m] == n
    if m == 1:
        shift = np.array([-1.0, 1.0]) * EXTREME_SCORE_ADJUSTMENT
    else:
        shift = np.array([-2.0, 1.0, 1.0]) * EXTREME_SCORE_ADJUSTMENT / 3
    counts[low] += shift
    counts[high] += shift[::-1]
    return counts


def _at_least(counts: np.ndarray) -> np.ndarray:
    """Counts of 'score >= j', j = 1..m: the sufficient statistics of the thresholds."""
    return np.cumsum(counts[:, ::-1], axis=1)[:, ::-1][:, 1:]


def fit_pcm(
    responses: np.ndarray, *, max_iter: int = 500, tol: float = 1e-6, bias_correction: bool = True
) -> PCMResult:
    """Fit Masters' Partial Credit Model to rubric scores by JML (see the module docstring).

    responses: raters x items floats, 0 (LA), 1 (AA), 2 (EA) or NaN (not rated).
    Raises ValueError for other values, or when fewer than two categories are observed.
    """
    data = np.asarray(responses, dtype=float)
    if data.ndim != 2:
        raise ValueError("responses must be a raters x items array")
    n_raters, n_items = data.shape
    r_obs, i_obs = np.nonzero(~np.isnan(data))
    values = data[r_obs, i_obs]
    if not np.isin(values, np.arange(MAX_SCORE + 1)).all():
        raise ValueError("scores must be 0 (LA), 1 (AA), 2 (EA) or NaN")
    categories = tuple(int(c) for c in np.unique(values))
    if len(categories) < 2:
        raise ValueError("the PCM needs at least two different scores in the data")
    x = np.searchsorted(categories, values)  # structural zeros removed: scores 0..m
    m = len(categories) - 1

    rater_n = np.bincount(r_obs, minlength=n_raters)
    item_n = np.bincount(i_obs, minlength=n_items)
    active = _prune_extremes(r_obs, i_obs, x, m, n_raters, n_items)
    core_raters = np.bincount(r_obs[active], minlength=n_raters) > 0
    core_items = np.bincount(i_obs[active], minlength=n_items) > 0
    rater_extreme = (rater_n > 0) & ~core_raters
    item_extreme = (item_n > 0) & ~core_items

    # Starting values: the log-odds of each rater's and each item's mean score.
    raw = np.bincount(r_obs, x, n_raters)
    theta = np.log((raw + 0.5) / (m * rater_n - raw + 0.5))
    counts_all = _item_counts(i_obs, x, m, n_items)
    delta = -np.log((_at_least(counts_all) + 0.5) / (item_n[:, None] - _at_least(counts_all) + 0.5))

    # Core fit: only observations between core raters and core items.
    ra, ia, xa = r_obs[active], i_obs[active], x[active]
    core_counts, null_category = _smooth_null_categories(_item_counts(ia, xa, m, n_items))
    converged, iterations = _fit(
        ra,
        ia,
        theta,
        delta,
        np.bincount(ra, xa, n_raters),
        _at_least(core_counts),
        core_raters,
        core_items,
        centre=True,
        max_iter=max_iter,
        tol=tol,
    )
    bias_factor = 1.0
    if bias_correction and core_raters.any():
        items_per_rater = float(np.mean(np.bincount(ra, minlength=n_raters)[core_raters]))
        if items_per_rater > 1:
            bias_factor = (items_per_rater - 1) / items_per_rater
        delta[core_items] *= bias_factor
        no_items = np.zeros(n_items, dtype=bool)
        ok, more = _fit(
            ra,
            ia,
            theta,
            delta,
            np.bincount(ra, xa, n_raters),
            _at_least(core_counts),
            core_raters,
            no_items,
            centre=False,
            max_iter=max_iter,
            tol=tol,
        )
        converged, iterations = converged and ok, iterations + more

    # Extreme raters and items, from all their responses, with the core anchored.
    if rater_extreme.any() or item_extreme.any():
        target = raw.astype(float)
        low, high = rater_extreme & (raw == 0), rater_extreme & (raw == m * rater_n)
        target[low] += EXTREME_SCORE_ADJUSTMENT
        target[high] -= EXTREME_SCORE_ADJUSTMENT
        counts, _ = _smooth_null_categories(_extreme_item_counts(counts_all))
        no_core = not core_items.any()
        ok, more = _fit(
            r_obs,
            i_obs,
            theta,
            delta,
            target,
            _at_least(counts),
            rater_extreme,
            item_extreme,
            centre=no_core,
            max_iter=max_iter,
            tol=tol,
        )
        converged, iterations = converged and ok, iterations + more

    rated_items = item_n > 0
    shift = delta[rated_items].mean()
    delta -= shift
    theta -= shift

    # Model-based standard errors at the final estimates, from all responses.
    p = _category_probs(theta[r_obs], _cumulative(delta)[i_obs])
    scores = np.arange(m + 1)
    variance = p @ scores**2 - (p @ scores) ** 2
    with np.errstate(divide="ignore"):
        ability_se = 1 / np.sqrt(np.bincount(r_obs, variance, n_raters))
    _, info = _item_information(p, i_obs, n_items)
    step_se = np.full((n_items, m), np.nan)
    step_se[rated_items] = np.sqrt(np.diagonal(np.linalg.inv(info[rated_items]), axis1=1, axis2=2))

    theta[rater_n == 0] = np.nan
    ability_se[rater_n == 0] = np.nan
    delta[~rated_items] = np.nan
    # Map the fitted steps back to the rubric's two steps (LA -> AA, AA -> EA).
    thresholds = np.full((n_items, MAX_SCORE), np.nan)
    threshold_se = np.full((n_items, MAX_SCORE), np.nan)
    for j in range(1, MAX_SCORE + 1):
        step = int(np.searchsorted(categories, j))  # first observed category >= j
        if 1 <= step <= m:
            thresholds[:, j - 1] = delta[:, step - 1]
            threshold_se[:, j - 1] = step_se[:, step - 1]

    null_category &= core_items
    for array in (theta, ability_se, thresholds, threshold_se, rater_extreme, item_extreme, null_category):
        array.flags.writeable = False  # a frozen result: its arrays cannot be changed in place
    return PCMResult(
        abilities=theta,
        ability_se=ability_se,
        thresholds=thresholds,
        threshold_se=threshold_se,
        converged=converged,
        iterations=iterations,
        rater_extreme=rater_extreme,
        item_extreme=item_extreme,
        item_null_category=null_category,
        categories=categories,
        bias_factor=bias_factor,
    )


def thurstonian_thresholds(thresholds: np.ndarray) -> np.ndarray:
    """Competency at which P(X >= AA) = 0.5 and P(X = EA) = 0.5, per item (items x 2).

    These are the paper's reading of the Wright map ("the level of rater competence for
    which we expect a 50% chance of achieving EA"), as ConQuest plots them. For m = 2 they
    have a closed form: with u = exp(theta) and t = exp(delta1 - delta2), P(X = 0) = 1/2
    and P(X = 2) = 1/2 are quadratics in u, giving
    tau1 = delta1 + ln 2 - ln(1 + sqrt(1 + 4t)), tau2 = delta2 - ln 2 + ln(1 + sqrt(1 + 4t)).
    NaN steps (a structurally absent category) pass through: the other threshold is then
    the single step itself.
    """
    delta = np.asarray(thresholds, dtype=float)
    d1, d2 = delta[:, 0], delta[:, 1]
    log_term = np.log1p(np.sqrt(1 + 4 * np.exp(d1 - d2))) - np.log(2)
    both = np.isfinite(d1) & np.isfinite(d2)
    tau1 = np.where(both, d1 - log_term, d1)
    tau2 = np.where(both, d2 + log_term, d2)
    return np.stack([tau1, tau2], axis=1)


def latent_regression(
    abilities: np.ndarray, training_scores_percent: np.ndarray, ability_se: np.ndarray | None = None
) -> dict:
    """Regress rater competency (logits) on tutorial score (percent, 0-100).

    The paper fits a latent regression (population model) in ConQuest and reports 0.017
    logits per 1% (SE 0.003), i.e. 0.17 per 10%. Here, a two-step approximation on the JML
    point estimates: ordinary least squares (statsmodels OLS), or weighted least squares
    with weights 1/se^2 when ability_se is given. Error in the dependent variable leaves the
    OLS slope unbiased and widens its standard error. Raters with a NaN ability or score are
    left out.
    """
    y = np.asarray(abilities, dtype=float)
    score = np.asarray(training_scores_percent, dtype=float)
    keep = np.isfinite(y) & np.isfinite(score)
    if keep.sum() < 3:
        raise ValueError("the regression needs at least 3 raters with a competency and a tutorial score")
    design = sm.add_constant(score[keep], has_constant="add")
    if ability_se is None:
        fit = sm.OLS(y[keep], design).fit()
        method = "OLS"
    else:
        se = np.asarray(ability_se, dtype=float)
        keep_se = np.isfinite(se[keep]) & (se[keep] > 0)
        design = design[keep_se]
        fit = sm.WLS(y[keep][keep_se], design, weights=1 / se[keep][keep_se] ** 2).fit()
        method = "WLS"
    coef, coef_se = float(fit.params[1]), float(fit.bse[1])
    return {
        "method": method,
        "n": int(fit.nobs),
        "intercept": float(fit.params[0]),
        "intercept_se": float(fit.bse[0]),
        "coef_per_percent": coef,
        "se_per_percent": coef_se,
        "coef_per_10_percent": 10 * coef,
        "se_per_10_percent": 10 * coef_se,
        "p_value": float(fit.pvalues[1]),
        "r_squared": float(fit.rsquared),
    }
