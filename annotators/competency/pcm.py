"""Rater competency with Masters' Partial Credit Model (VICR paper, section 4).

Each rating is scored against the pair's reference with the paper's rubric: Exact
Agreement (EA) = 2, Adjacent Agreement (AA) = 1, Lack of Agreement (LA) = 0. The scores
form a raters x items matrix that is fitted with the Partial Credit Model (Masters, 1982,
"A Rasch model for partial credit scoring", Psychometrika 47, 149-174):

    P(X_ni = k) ∝ exp(sum_{j<=k} (theta_n - delta_ij)),  k = 0..m,  empty sum for k = 0,

theta_n the rater's competency and delta_ij the step difficulties of item (pair) i, in logits.

The paper cites Masters (1988), "The analysis of partial credit scoring", Applied
Measurement in Education 1, 279-297.

Estimator. Game pairs have 3 to 7 raters each. Joint maximum likelihood (JML) estimates
each pair's two thresholds from those few responses, and their small-sample error leaks
into every competency: at VICR scale the JML competencies were spread 6-8% too wide and their
95% intervals missed the truth too often (bench/bench_pcm.py). So competencies are fitted by
**conditional maximum likelihood** with the items of at most ``CONDITIONAL_MAX_RATERS``
responses conditioned out: given an item's category counts (its sufficient statistics), which
rater got which category depends on the competencies alone,

    P(x_i | counts_i) = prod_n exp(x_ni theta_n) / sum over the arrangements with those counts,

so those items' thresholds leave the likelihood (Andersen 1970, "Asymptotic properties of
conditional maximum-likelihood estimators", JRSS B 32, 283-301; here with the roles of
persons and items exchanged: the pairs are the incidental parameters). The sum runs over
assignments of categories to the item's raters; a dynamic programme over the raters counts it
in O(L^3) for L raters. Items with more responses (tutorial and probation pairs, rated by
everyone) keep their thresholds in the likelihood (JML, with the Wright & Douglas bias
correction below): their thresholds rest on many responses. Each rater's standard error is
1/sqrt(information), the conditional information from the conditioned items (smaller than
JML's, since an item's thresholds are not taken as known) plus the model information from the
others. A rater's competency is found by Newton steps on the (concave) conditional log-
likelihood. Thresholds are estimated afterwards, item by item, with the competencies anchored
(model-based standard errors); with 3-7 responses they are noisy, and read best as the Wright
map shows them. No library fits a sparse PCM by CML or JML (statsmodels has no Rasch/PCM
model; its ConditionalLogit is the dichotomous case, which the tests compare against; the
psychometric packages are R), hence this module.

Identification: the mean competency of the core raters (below) is 0 logits. Pinning the mean
threshold instead would move every competency by the small-sample error of the pairs'
thresholds (-0.25 logits at VICR scale).

Extreme and null-category data (a statistic at its minimum or maximum has no finite MLE):

* Extreme items (all their responses in one category) and extreme raters (every response at
  the lowest category possible, or every one at the highest: 0 and m on a JML item; on a
  conditioned item, the lowest and highest category that item received) are removed,
  repeatedly, since removing one can make another extreme; all of these are flagged extreme.
  Such a rater is a spammer answering LA throughout, or one using the scale backwards, or a
  rater who always agreed exactly. The rest (the core) is fitted and identified as above.
* Extreme raters are then estimated one by one against the core (the other extreme raters'
  responses left out), from all their responses, with their score moved 0.3 score points
  toward the centre of what was possible (Winsteps' default extreme-score adjustment,
  EXTRSC=0.3; Linacre, "A User's Guide to Winsteps"). This keeps them finite at any count and
  leaves the core untouched: an all-LA rater cannot pull the other raters or the pairs it rated.
* Thresholds of extreme items: 0.2 responses move from their one category, 0.1 to each other
  one (counts N-0.2, 0.1, 0.1 for an all-LA item): the score moves by 0.3 and both thresholds
  are finite. Step difficulties of such items are reversed by construction; their Thurstonian
  thresholds (:func:`thurstonian_thresholds`) are the readable summary.
* A category that is never observed anywhere in the data is structural: the scores are
  renumbered consecutively (Winsteps' "ordinal" rescoring, STKEEP=NO) and the rubric
  thresholds it spans are reported as one step: with only LA and EA observed both
  thresholds are that step; with only LA and AA the EA threshold is NaN; with only AA and
  EA the AA threshold is NaN. With two categories the model is the dichotomous Rasch model.
* A category never observed on one non-extreme item (e.g. nobody scored AA) is an
  incidental zero. The item's category counts n are smoothed by eps = 0.3 along the
  direction that keeps its count and its total score: n + eps * (1, -2, 1) when AA was
  observed, n + eps * (-1, 2, -1) when AA is the missing one. Keeping the score keeps the
  estimating equations consistent, so the fit is still the maximum of the likelihood with
  these sufficient statistics. This is the epsilon-adjustment idea of Bertoli-Barsotti,
  Lando & Punzo (2014), as used by R immer::immer_jml (eps = 0.3), applied only where a
  category count is zero.

Bias correction of the JML items: JML item estimates are spread too far by about L/(L-1), L
the number of items per person (Wright & Douglas 1977, "Best procedures for sample-free item
analysis", Applied Psychological Measurement 1, 281-295; Wright 1988, "The efficacy of
unconditional maximum likelihood bias correction", Rasch memo 45). As in Winsteps
(STBIAS=YES) and immer_jml's "jml_bc", the JML items' thresholds are multiplied by (L-1)/L, L
the mean number of JML-item responses per core rater, and the raters are re-estimated with
them anchored. Conditioned items need no correction.

``converged`` is False when max_iter was reached: data with no finite solution even after
these adjustments (a perfect Guttman pattern, such as every rater scoring higher than every
other on every shared item); the estimates then keep drifting apart and should not be read.
The competency analysis stores it and every page that shows the analysis warns when it is
False.
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MAX_SCORE = 2  # the rubric: LA = 0, AA = 1, EA = 2
EXTREME_SCORE_ADJUSTMENT = 0.3
NULL_CATEGORY_EPS = 0.3
MAX_STEP = 1.0  # logits per Newton step; keeps early iterations from overshooting
# Items with at most this many responses are conditioned out. The dynamic programme costs
# O(L^3) per item; every game pair (3 to 7 raters, SPEC section 5) is below it, and an item
# with more responses has thresholds firm enough for JML.
CONDITIONAL_MAX_RATERS = 10
_CATEGORY_STEPS = ((0, 0), (1, 0), (0, 1))  # category k removes one count of AA (k = 1) or EA (k = 2)


@dataclass(frozen=True, eq=False)
class PCMResult:
    """A fitted Partial Credit Model. All measures are in logits.

    abilities, ability_se: one per rater; NaN for a rater with no response, or none that
    compares it with anyone (only pairs nobody else in the core rated).
    thresholds, threshold_se: items x 2, the step difficulties delta_i1 (LA -> AA) and
    delta_i2 (AA -> EA); NaN for an item with no response, or for a step of a category
    never observed in the whole data set.
    rater_extreme, item_extreme: all scores at the lowest or highest possible (directly, or
    once other extreme ones are removed), or an item with one category only; estimated with
    the 0.3-point adjustment (see module).
    item_null_category: non-extreme items with a category never observed on them (smoothed).
    item_conditional: items conditioned out of the competency fit (at most
    CONDITIONAL_MAX_RATERS responses).
    categories: the rubric scores observed in the data; bias_factor: the (L-1)/L applied to
    the JML items (1.0 without any).
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
    item_conditional: np.ndarray
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


# --- the model's probabilities ------------------------------------------------------------


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


def _arrangement_step(table: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Add one rater to tables (G, s, s) of summed weights by (count of AA, count of EA)."""
    out = table * weights[:, 0, None, None]
    out[:, 1:, :] += table[:, :-1, :] * weights[:, 1, None, None]
    out[:, :, 1:] += table[:, :, :-1] * weights[:, 2, None, None]
    return out


def _conditional_probs(theta: np.ndarray, x: np.ndarray, m: int) -> np.ndarray:
    """P(X_n = k | the item's category counts), items x raters x 3, for G items of L raters each.

    theta, x: (G, L). P(X_n = k | c) ∝ exp(k theta_n) g_n(c - e_k), g_n summing exp(sum of
    k theta) over the arrangements of the other raters; g_n is the convolution of the tables
    of the raters before n (prefix) and after n (suffix). Each rater's weights are scaled to
    a maximum of 1, which cancels in the ratio and keeps the tables in range.
    """
    n_items, size = x.shape
    log_weights = np.arange(3) * theta[..., None]
    if m == 1:
        log_weights[..., 2] = -np.inf
    weights = np.exp(log_weights - log_weights.max(axis=-1, keepdims=True))
    side = size + 1
    prefix = np.zeros((size + 1, n_items, side, side))
    suffix = np.zeros((size + 1, n_items, side, side))
    prefix[0, :, 0, 0] = suffix[size, :, 0, 0] = 1.0
    for j in range(size):
        prefix[j + 1] = _arrangement_step(prefix[j], weights[:, j])
        suffix[size - 1 - j] = _arrangement_step(suffix[size - j], weights[:, size - 1 - j])
    counts = np.stack([(x == 1).sum(axis=1), (x == 2).sum(axis=1)], axis=1)
    steps = np.arange(side)
    item = np.arange(n_items)[:, None, None]
    others = np.empty((size, n_items, 3))
    for k, step in enumerate(_CATEGORY_STEPS):
        target = counts - np.asarray(step)  # counts the other raters must make up
        aa = target[:, 0, None] - steps  # (G, s): AA count needed from the suffix
        ea = target[:, 1, None] - steps
        valid = (aa >= 0)[:, :, None] & (ea >= 0)[:, None, :]
        gathered = suffix[1:][:, item, np.clip(aa, 0, size)[:, :, None], np.clip(ea, 0, size)[:, None, :]]
        others[:, :, k] = (prefix[:-1] * gathered * valid).sum(axis=(2, 3))
    p = weights * others.transpose(1, 0, 2)
    return p / p.sum(axis=-1, keepdims=True)


@dataclass(frozen=True)
class _Conditioned:
    """Responses on conditioned items: rater and score per response, grouped by item size L.

    groups: one (G, L) array of response positions per item size (an "item" may also be one
    extreme rater's unit: its response plus the core's on that pair, see _extreme_raters_fit).
    """

    rater: np.ndarray
    x: np.ndarray
    groups: list[np.ndarray]

    @classmethod
    def build(cls, rater: np.ndarray, unit: np.ndarray, x: np.ndarray) -> "_Conditioned":
        order = np.argsort(unit, kind="stable")
        _, starts, lengths = np.unique(unit[order], return_index=True, return_counts=True)
        groups = [order[starts[lengths == size][:, None] + np.arange(size)] for size in np.unique(lengths)]
        return cls(rater=rater, x=x, groups=groups)

    def moments(self, theta: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """Conditional expected score and variance of every response."""
        expected, variance = np.zeros(self.x.size), np.zeros(self.x.size)
        scores = np.arange(3)
        for positions in self.groups:
            p = _conditional_probs(theta[self.rater[positions]], self.x[positions], m)
            mean = p @ scores
            expected[positions] = mean
            variance[positions] = p @ scores**2 - mean**2
        return expected, variance

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lowest and highest score each response could have had, given its item's counts."""
        low, high = np.empty(self.x.size), np.empty(self.x.size)
        for positions in self.groups:
            values = self.x[positions]
            low[positions] = values.min(axis=1, keepdims=True)
            high[positions] = values.max(axis=1, keepdims=True)
        return low, high


@dataclass(frozen=True)
class _Joint:
    """Responses on items whose thresholds stay in the likelihood (JML)."""

    rater: np.ndarray
    item: np.ndarray
    x: np.ndarray


def _rater_moments(
    theta: np.ndarray, delta: np.ndarray, conditioned: _Conditioned, joint: _Joint, m: int
) -> tuple[np.ndarray, np.ndarray]:
    """Each rater's expected raw score and information, from both kinds of items."""
    n_raters = theta.size
    expected, information = np.zeros(n_raters), np.zeros(n_raters)
    if conditioned.x.size:
        e, v = conditioned.moments(theta, m)
        expected += np.bincount(conditioned.rater, e, n_raters)
        information += np.bincount(conditioned.rater, v, n_raters)
    if joint.x.size:
        p = _category_probs(theta[joint.rater], _cumulative(delta)[joint.item])
        scores = np.arange(m + 1)
        e = p @ scores
        expected += np.bincount(joint.rater, e, n_raters)
        information += np.bincount(joint.rater, p @ scores**2 - e**2, n_raters)
    return expected, information


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


# --- fitting ------------------------------------------------------------------------------


def _fit(
    theta: np.ndarray,
    delta: np.ndarray,
    conditioned: _Conditioned,
    joint: _Joint,
    rater_target: np.ndarray,
    item_target: np.ndarray,
    free_raters: np.ndarray,
    free_items: np.ndarray,
    *,
    m: int,
    centre: bool,
    max_iter: int,
    tol: float,
) -> tuple[bool, int]:
    """Newton steps (in place) for the free raters, then the free JML items, alternating.

    rater_target: the raw score each rater must reproduce; item_target: items x m counts of
    'score >= j' (JML items). With centre, the free raters are shifted to mean 0 after every
    round, and the free items with them (the likelihood is unchanged).
    """
    n_items = delta.shape[0]
    fit_raters, fit_items = free_raters.any(), free_items.any()
    for iteration in range(1, max_iter + 1):
        change = 0.0
        if fit_raters:
            expected, information = _rater_moments(theta, delta, conditioned, joint, m)
            informed = free_raters & (information > 0)
            step = np.clip((rater_target - expected)[informed] / information[informed], -MAX_STEP, MAX_STEP)
            theta[informed] += step
            change = max(change, float(np.abs(step).max(initial=0.0)))
        if fit_items:
            p = _category_probs(theta[joint.rater], _cumulative(delta)[joint.item])
            expected, info = _item_information(p, joint.item, n_items)
            step = _solve_items(info[free_items], expected[free_items] - item_target[free_items])
            step = np.clip(step, -MAX_STEP, MAX_STEP)
            delta[free_items] += step
            change = max(change, float(np.abs(step).max()))
        if centre and fit_raters:
            shift = theta[free_raters].mean()
            theta[free_raters] -= shift
            delta[free_items] -= shift
        if change < tol:
            return True, iteration
    return False, max_iter


def _prune_extremes(
    r_obs: np.ndarray, i_obs: np.ndarray, x: np.ndarray, m: int, conditional: np.ndarray, sizes: tuple[int, int]
) -> np.ndarray:
    """Mask of observations left once extreme raters and items are removed, repeatedly.

    An item goes when all its responses are in one category (a JML item: at the minimum or
    maximum, an all-AA one is smoothed instead); a rater when every response is at its
    lowest possible score, or every one at its highest (module docstring).
    """
    n_raters, n_items = sizes
    on_conditioned = conditional[i_obs]
    active = np.ones(x.size, dtype=bool)
    while True:
        removed = False
        low, high = _item_ranges(i_obs[active], x[active], n_items, m)
        one_category = (low == high) & (conditional | (low == 0) | (low == m))
        drop = active & one_category[i_obs]
        if drop.any():
            active &= ~drop
            removed = True
        low, high = _item_ranges(i_obs[active], x[active], n_items, m)
        at_low = x == np.where(on_conditioned, low[i_obs], 0)
        at_high = x == np.where(on_conditioned, high[i_obs], m)
        count = np.bincount(r_obs[active], minlength=n_raters)
        extreme = (count > 0) & (
            (np.bincount(r_obs[active], at_low[active], n_raters) == count)
            | (np.bincount(r_obs[active], at_high[active], n_raters) == count)
        )
        drop = active & extreme[r_obs]
        if drop.any():
            active &= ~drop
            removed = True
        if not removed:
            return active


def _item_ranges(i_obs: np.ndarray, x: np.ndarray, n_items: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    low, high = np.full(n_items, m + 1), np.full(n_items, -1)
    np.minimum.at(low, i_obs, x)
    np.maximum.at(high, i_obs, x)
    return low, high


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
    low, high = (counts[:, 0] == n) & (n > 0), (counts[:, m] == n) & (n > 0)
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


def _adjusted_targets(raw: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """Raw scores at a bound moved 0.3 points toward the centre; NaN where nothing was possible."""
    target = raw.astype(float)
    target[raw <= low] = low[raw <= low] + EXTREME_SCORE_ADJUSTMENT
    target[raw >= high] = high[raw >= high] - EXTREME_SCORE_ADJUSTMENT
    target[high <= low] = np.nan
    return target


def fit_pcm(
    responses: np.ndarray,
    *,
    max_iter: int = 500,
    tol: float = 1e-6,
    bias_correction: bool = True,
    conditional_max_raters: int = CONDITIONAL_MAX_RATERS,
) -> PCMResult:
    """Fit Masters' Partial Credit Model to rubric scores (see the module docstring).

    responses: raters x items floats, 0 (LA), 1 (AA), 2 (EA) or NaN (not rated).
    conditional_max_raters: items with at most this many responses are conditioned out
    (0: plain JML for every item).
    Raises ValueError for other values, or when fewer than two categories are observed.
    """
    (n_raters, n_items), observations, categories = _observed_scores(responses)
    r_obs, i_obs, x = observations
    m = len(categories) - 1
    settings = {"m": m, "max_iter": max_iter, "tol": tol}

    rater_n = np.bincount(r_obs, minlength=n_raters)
    item_n = np.bincount(i_obs, minlength=n_items)
    conditional = (item_n > 0) & (item_n <= conditional_max_raters)
    active = _prune_extremes(r_obs, i_obs, x, m, conditional, (n_raters, n_items))
    core_raters = np.bincount(r_obs[active], minlength=n_raters) > 0
    core_items = np.bincount(i_obs[active], minlength=n_items) > 0
    rater_extreme = (rater_n > 0) & ~core_raters
    item_extreme = (item_n > 0) & ~core_items
    joint_items = core_items & ~conditional
    theta, delta = _starting_values(observations, m, rater_n, item_n)

    # Core fit: only observations between core raters and core items.
    converged, iterations, bias_factor, ability_se, null_category = _core_fit(
        theta, delta, observations, active, conditional, core_raters, joint_items, bias_correction, settings
    )

    # Extreme raters, one by one against the core, after the extreme JML items they rated.
    if rater_extreme.any():
        ok, more = _extremes_fit(
            theta, delta, ability_se, observations, active, rater_extreme, item_extreme, conditional, settings
        )
        converged, iterations = converged and ok, iterations + more

    # Thresholds of the conditioned and the extreme items, with every competency anchored.
    estimable = np.isfinite(theta) & (rater_n > 0)
    others = (item_n > 0) & ~joint_items
    ok, more, others_null = _anchored_items_fit(theta, delta, observations, estimable[r_obs], others, settings)
    converged, iterations = converged and ok, iterations + more
    null_category |= others_null

    _identify(theta, delta, core_raters)

    # Model-based standard errors of the thresholds, from the responses each item was fitted on.
    used = np.where(joint_items[i_obs], active, estimable[r_obs])
    step_se, rated_items = _step_se(theta, delta, observations, used, m)

    theta[~estimable] = np.nan
    ability_se[~estimable] = np.nan
    delta[~rated_items] = np.nan
    thresholds, threshold_se = _rubric_steps(delta, categories), _rubric_steps(step_se, categories)

    null_category &= ~item_extreme & (item_n > 0)
    arrays = (theta, ability_se, thresholds, threshold_se, rater_extreme, item_extreme, null_category, conditional)
    for array in arrays:
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
        item_conditional=conditional,
        categories=categories,
        bias_factor=bias_factor,
    )


def _observed_scores(responses) -> tuple[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray], tuple[int, ...]]:
    """The matrix's shape, its responses as (rater, item, score) and the rubric scores observed.

    Scores are renumbered 0..m over the observed categories, so a category nobody used is a
    structural zero the model does not see (module docstring). Raises ValueError as fit_pcm says.
    """
    data = np.asarray(responses, dtype=float)
    if data.ndim != 2:
        raise ValueError("responses must be a raters x items array")
    r_obs, i_obs = np.nonzero(~np.isnan(data))
    values = data[r_obs, i_obs]
    if not np.isin(values, np.arange(MAX_SCORE + 1)).all():
        raise ValueError("scores must be 0 (LA), 1 (AA), 2 (EA) or NaN")
    categories = tuple(int(c) for c in np.unique(values))
    if len(categories) < 2:
        raise ValueError("the PCM needs at least two different scores in the data")
    x = np.searchsorted(categories, values)  # structural zeros removed: scores 0..m
    return data.shape, (r_obs, i_obs, x), categories


def _starting_values(observations, m: int, rater_n: np.ndarray, item_n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Starting competencies and thresholds: the log-odds of each rater's and each item's mean score."""
    r_obs, i_obs, x = observations
    n_raters, n_items = rater_n.size, item_n.size
    raw = np.bincount(r_obs, x, n_raters)
    theta = np.log((raw + 0.5) / (m * rater_n - raw + 0.5))
    counts_all = _item_counts(i_obs, x, m, n_items)
    delta = -np.log((_at_least(counts_all) + 0.5) / (item_n[:, None] - _at_least(counts_all) + 0.5))
    return theta, delta


def _core_fit(theta, delta, observations, active, conditional, core_raters, joint_items, bias_correction, settings):
    """The core raters and the JML items (in place), from the core's responses only.

    Returns converged, iterations, the bias factor, the core's ability_se (NaN elsewhere) and
    the JML items with a null category (smoothed for the fit).
    """
    r_obs, i_obs, x = observations
    m = settings["m"]
    n_raters, n_items = theta.size, delta.shape[0]
    ra, ia, xa = r_obs[active], i_obs[active], x[active]
    on_conditioned = conditional[ia]
    conditioned = _Conditioned.build(ra[on_conditioned], ia[on_conditioned], xa[on_conditioned])
    joint = _Joint(ra[~on_conditioned], ia[~on_conditioned], xa[~on_conditioned])
    joint_counts, null_category = _smooth_null_categories(_item_counts(joint.item, joint.x, m, n_items))
    rater_target = np.bincount(ra, xa, n_raters)
    item_target = _at_least(joint_counts)
    converged, iterations = _fit(
        theta, delta, conditioned, joint, rater_target, item_target, core_raters, joint_items,
        centre=True, **settings,
    )  # fmt: skip
    bias_factor = 1.0
    if bias_correction and joint_items.any():
        bias_factor = _shrink_joint_items(delta, joint, core_raters, joint_items)
        ok, more = _fit(
            theta, delta, conditioned, joint, rater_target, item_target, core_raters,
            np.zeros(n_items, dtype=bool), centre=False, **settings,
        )  # fmt: skip
        converged, iterations = converged and ok, iterations + more
    _, information = _rater_moments(theta, delta, conditioned, joint, m)
    ability_se = np.full(n_raters, np.nan)
    ability_se[core_raters] = 1 / np.sqrt(information[core_raters])
    return converged, iterations, bias_factor, ability_se, null_category


def _shrink_joint_items(delta: np.ndarray, joint: _Joint, core_raters: np.ndarray, joint_items: np.ndarray) -> float:
    """Wright & Douglas's (L-1)/L correction of the JML items' thresholds (in place), returned.

    L is the mean number of JML-item responses per core rater; the thresholds shrink about
    their mean, so the core's centring is kept (module docstring).
    """
    bias_factor = 1.0
    joint_per_rater = np.bincount(joint.rater, minlength=core_raters.size)
    items_per_rater = float(np.mean(joint_per_rater[core_raters & (joint_per_rater > 0)]))
    if items_per_rater > 1:
        bias_factor = (items_per_rater - 1) / items_per_rater
    centre = delta[joint_items].mean()
    delta[joint_items] = centre + bias_factor * (delta[joint_items] - centre)
    return bias_factor


def _extremes_fit(
    theta, delta, ability_se, observations, active, rater_extreme, item_extreme, conditional, settings
) -> tuple[bool, int]:
    """The extreme raters, one by one against the core (in place), after the extreme JML items.

    The raters' fit anchors every JML item, so those items are fitted first, from the
    responses in ``active``. Returns converged and iterations of both fits together.
    """
    r_obs, i_obs, x = observations
    converged, iterations = True, 0
    outside = ~conditional & item_extreme
    if outside.any():
        ok, more = _items_fit(theta, delta, r_obs, i_obs, x, active, outside, settings["m"], settings)
        converged, iterations = converged and ok, iterations + more
    ok, more = _extreme_raters_fit(theta, delta, ability_se, observations, active, rater_extreme, conditional, settings)
    return converged and ok, iterations + more


def _anchored_items_fit(theta, delta, observations, use, free_items, settings) -> tuple[bool, int, np.ndarray]:
    """Thresholds of ``free_items`` from the responses in ``use`` (every competency anchored).

    Returns converged, iterations and which of these items have a category never observed on
    them (smoothed for the fit).
    """
    r_obs, i_obs, x = observations
    m = settings["m"]
    converged, iterations = _items_fit(theta, delta, r_obs, i_obs, x, use, free_items, m, settings)
    null_category = free_items & _smooth_null_categories(_item_counts(i_obs[use], x[use], m, delta.shape[0]))[1]
    return converged, iterations, null_category


def _identify(theta: np.ndarray, delta: np.ndarray, core_raters: np.ndarray) -> None:
    """Shift every measure (in place) so that the core raters' mean competency is 0 logits.

    Pinning the core's mean keeps the competencies free of the pairs' small-sample threshold
    error (module docstring).
    """
    if core_raters.any():
        shift = theta[core_raters].mean()
        theta -= shift
        delta -= shift


def _step_se(theta, delta, observations, used, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Model-based standard errors of the fitted steps (items x m) and which items were rated.

    Each item's information comes from the responses in ``used``, those it was fitted on;
    NaN for an item with none.
    """
    r_obs, i_obs, _ = observations
    n_items = delta.shape[0]
    p = _category_probs(theta[r_obs[used]], _cumulative(delta)[i_obs[used]])
    _, info = _item_information(p, i_obs[used], n_items)
    rated_items = np.bincount(i_obs[used], minlength=n_items) > 0
    step_se = np.full((n_items, m), np.nan)
    step_se[rated_items] = np.sqrt(np.diagonal(np.linalg.inv(info[rated_items]), axis1=1, axis2=2))
    return step_se, rated_items


def _rubric_steps(steps: np.ndarray, categories: tuple[int, ...]) -> np.ndarray:
    """Fitted steps (items x m) mapped back to the rubric's two (LA -> AA, AA -> EA), items x 2.

    A step over a category never observed stands for both rubric steps it spans; a rubric
    step with no fitted step is NaN (module docstring).
    """
    m = len(categories) - 1
    rubric = np.full((steps.shape[0], MAX_SCORE), np.nan)
    for j in range(1, MAX_SCORE + 1):
        step = int(np.searchsorted(categories, j))  # first observed category >= j
        if 1 <= step <= m:
            rubric[:, j - 1] = steps[:, step - 1]
    return rubric


def _items_fit(theta, delta, r_obs, i_obs, x, use, free_items, m, settings) -> tuple[bool, int]:
    """Thresholds of ``free_items`` from the responses in ``use``, competencies anchored.

    Extreme items get the 0.3-point adjustment, items with an empty category the smoothing.
    """
    n_items = delta.shape[0]
    counts = _item_counts(i_obs[use], x[use], m, n_items)
    counts, _ = _smooth_null_categories(_extreme_item_counts(counts))
    free = free_items & (counts.sum(axis=1) > 0)
    if not free.any():
        return True, 0
    joint = _Joint(r_obs[use], i_obs[use], x[use])
    none = _Conditioned.build(np.zeros(0, dtype=int), np.zeros(0, dtype=int), np.zeros(0, dtype=int))
    return _fit(
        theta, delta, none, joint, np.zeros(theta.size), _at_least(counts), np.zeros(theta.size, dtype=bool), free,
        centre=False, **settings,
    )  # fmt: skip


def _extreme_raters_fit(theta, delta, ability_se, observations, active, rater_extreme, conditional, settings):
    """Each extreme rater against the core: its responses, the core's on its conditioned items.

    Its score is moved 0.3 points toward the centre of what was possible; the core and the
    JML items stay anchored. Sets ability_se of these raters; NaN where nothing compares them.
    """
    r_obs, i_obs, x = observations
    m = settings["m"]
    n_raters = theta.size
    own = rater_extreme[r_obs]
    on_conditioned = conditional[i_obs]
    # One unit per (extreme rater, conditioned item): its own response plus the core's there.
    mine = np.flatnonzero(own & on_conditioned)
    core_by_item = {}
    for position in np.flatnonzero(active & on_conditioned):
        core_by_item.setdefault(int(i_obs[position]), []).append(position)
    positions, units = [], []
    for unit, position in enumerate(mine):
        members = [position, *core_by_item.get(int(i_obs[position]), [])]
        positions.extend(members)
        units.extend([unit] * len(members))
    positions = np.asarray(positions, dtype=int)
    units = np.asarray(units, dtype=int)
    conditioned = _Conditioned.build(r_obs[positions], units, x[positions])
    self_response = np.zeros(positions.size, dtype=bool)
    self_response[np.searchsorted(units, np.arange(mine.size))] = True  # each unit starts with its own response
    low, high = conditioned.bounds()

    joint_mine = own & ~on_conditioned
    joint = _Joint(r_obs[joint_mine], i_obs[joint_mine], x[joint_mine])
    rater_of = np.concatenate([r_obs[positions][self_response], joint.rater])
    raw = np.bincount(rater_of, np.concatenate([x[positions][self_response], joint.x]), n_raters)
    lowest = np.bincount(rater_of, np.concatenate([low[self_response], np.zeros(joint.x.size)]), n_raters)
    highest = np.bincount(rater_of, np.concatenate([high[self_response], np.full(joint.x.size, m)]), n_raters)
    target = _adjusted_targets(raw, lowest, highest)
    free = rater_extreme & np.isfinite(target)
    theta[rater_extreme & ~free] = np.nan

    # The core's responses in the units only condition them (the core is not free): the rater
    # half of _fit, and _rater_moments for the information, on these units.
    n_items = delta.shape[0]
    converged, iterations = _fit(
        theta, delta, conditioned, joint, target, np.zeros((n_items, m)), free, np.zeros(n_items, dtype=bool),
        centre=False, **settings,
    )  # fmt: skip
    _, information = _rater_moments(theta, delta, conditioned, joint, m)
    ability_se[free] = 1 / np.sqrt(information[free])
    return converged, iterations


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
