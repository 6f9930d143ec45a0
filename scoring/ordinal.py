"""The ordinal rater model behind the "settled" assignment policy (SPEC 5.1) and the export's
model-based label. No Django.

Each rater has a **precision** ``a``, a **severity** ``b`` and a **lapse** rate ``e`` on the 5-level
scale: a rater shown a pair of true level ``t`` answers at random with probability ``e`` and
otherwise answers ``k`` with probability proportional to ``exp(-a (k - t - b)²)``, a Gaussian
around ``t + b`` cut to the five levels. A careful rater has a large ``a`` and ``e`` near 0; a
rater who clicks at random has ``e`` near 1, so their ratings move a pair's label by almost
nothing; a harsh rater has ``b < 0``; an honest rater's rare slip (a lapse) costs a pair one more
rating rather than many, as a Gaussian alone would make it. It is Dawid & Skene's model (1979)
with each rater's 5x5 confusion matrix tied to these three numbers, which makes it ordinal (one
level off is far likelier than three off) and lets a rater seen on 20 pairs be estimated well
enough to use. The nominal Dawid-Skene of ``scoring.aggregation`` needs 20 free numbers per rater
and treats "off by one" like "off by four".

A pair's **evidence** is the sum over its counted ratings of ``log P(rating | t)``, one number per
level: adding a rating is adding five numbers, so the rating path keeps it on the pair's row
under the same row lock as its counters. The posterior over the true level is the softmax of the
evidence plus the log of a **level prior**: how common each level is among the study's pairs,
fitted with the raters (``RaterFit.levels``; Dawid and Skene's class prior), flat before the
first fit. A [4, 4, 5] is then read knowing that 4s are common and 1s rare, as the study's own
pairs say. Its **label** is the most probable level; the label is **settled** when the probability
that more ratings would change it, ``1 - max posterior`` (with enough ratings the label becomes
the true level, so this is the chance the current one is not), is at most the policy's threshold.

Rater parameters are fitted by EM over the study's ratings (``raters_fit``), with control
ratings' expert levels as known truth, each rater's parameters drawn to the population's by a
prior worth ``PRIOR_RATINGS`` ratings; a rater the fit has not seen yet gets ``POPULATION``.
The grid search (rather than an optimiser) is written here because three parameters on a fixed
grid are found exactly and fast with numpy, and no library fits this tied confusion model.
"""

import functools
import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

LEVELS = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class RaterModel:
    precision: float
    severity: float = 0.0
    lapse: float = 0.0


# The crowd of the VICR sample (../shared/external/vicr_sample250, 1,118 ratings of 249 pairs,
# anonymous raters) fitted as one population by ``raters_fit``; tests/scoring/test_ordinal.py
# refits the sample and checks these figures.
POPULATION = RaterModel(precision=0.831, severity=0.0, lapse=0.0)
# How many ratings' worth of weight the population's parameters have in a rater's fit.
PRIOR_RATINGS = 10
NO_EVIDENCE = (0.0, 0.0, 0.0, 0.0, 0.0)


@functools.lru_cache(maxsize=8192)  # a study has few distinct (answer, rater model) pairs
def rating_evidence(value: int, rater: RaterModel | None) -> tuple[float, ...]:
    """``log P(value | t)`` for t = 1..5 under the rater's model (the population's when None)."""
    rater = rater or POPULATION
    out = []
    for truth in LEVELS:
        weights = [math.exp(-rater.precision * (k - truth - rater.severity) ** 2) for k in LEVELS]
        chance = (1 - rater.lapse) * weights[value - 1] / sum(weights) + rater.lapse / 5
        out.append(math.log(chance))
    return tuple(out)


def evidence_add(evidence: Sequence[float] | None, value: int, rater: RaterModel | None) -> list[float]:
    """The pair's evidence after one more rating (rounded: it is stored as JSON)."""
    before = evidence or NO_EVIDENCE
    return [round(a + b, 6) for a, b in zip(before, rating_evidence(value, rater), strict=True)]


def posterior(evidence: Sequence[float] | None, levels: Sequence[float] | None = None) -> list[float]:
    """P(true level = t | the pair's ratings), t = 1..5, under the level prior ``levels`` (the
    shares of the five levels; flat when None)."""
    values = list(evidence or NO_EVIDENCE)
    if levels is not None:
        values = [v + math.log(share) for v, share in zip(values, levels, strict=True)]
    top = max(values)
    weights = [math.exp(v - top) for v in values]
    total = sum(weights)
    return [w / total for w in weights]


def label_of(evidence: Sequence[float] | None, levels: Sequence[float] | None = None) -> tuple[int, float]:
    """(the most probable level, its probability); ties go to the lower level."""
    probabilities = posterior(evidence, levels)
    best = max(range(5), key=lambda i: (probabilities[i], -i))
    return best + 1, probabilities[best]


def change_probability(evidence: Sequence[float] | None, levels: Sequence[float] | None = None) -> float:
    """The probability that more ratings would change the pair's label: 1 - max posterior."""
    return 1.0 - label_of(evidence, levels)[1]


def exact_share(rater: RaterModel | None) -> float:
    """The share of the rater's answers the model expects on the true level (levels alike):
    about 0.2 for a rater who answers at random."""
    return sum(math.exp(rating_evidence(level, rater)[level - 1]) for level in LEVELS) / len(LEVELS)


def is_settled(evidence: Sequence[float] | None, threshold: float, levels: Sequence[float] | None = None) -> bool:
    return change_probability(evidence, levels) <= threshold


# --- Fitting the raters (the periodic competency job) ---------------------------------------------

PRECISIONS = np.geomspace(0.05, 12.0, 40)
SEVERITIES = np.linspace(-1.5, 1.5, 21)
LAPSES = np.array([0.0, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.7, 0.85, 1.0])
GRID_SHAPE = (len(PRECISIONS), len(SEVERITIES), len(LAPSES))
NO_SHIFT = len(SEVERITIES) // 2


def _log_confusion() -> np.ndarray:
    """log P(k | t) at every grid point: shape (grid points, t, k)."""
    k = np.arange(1, 6)[None, None, None, :]
    t = np.arange(1, 6)[None, None, :, None]
    energies = -PRECISIONS[:, None, None, None] * (k - t - SEVERITIES[None, :, None, None]) ** 2
    gauss = np.exp(energies - np.logaddexp.reduce(energies, axis=3, keepdims=True))
    mixed = (1 - LAPSES[None, None, :, None, None]) * gauss[:, :, None] + LAPSES[None, None, :, None, None] / 5
    return np.log(mixed).reshape(-1, 5, 5)


LOG_CONFUSION = _log_confusion()


def _grid_map(counts: np.ndarray, prior: np.ndarray | float, allowed: np.ndarray | None = None) -> int:
    """The grid point maximising expected log-likelihood of ``counts`` (t x k) plus ``prior``."""
    score = np.einsum("tk,gtk->g", counts, LOG_CONFUSION) + prior
    if allowed is not None:
        score = np.where(allowed, score, -np.inf)
    return int(np.argmax(score))


def _point_of(model: RaterModel) -> int:
    return int(
        np.ravel_multi_index(
            (
                np.argmin(np.abs(PRECISIONS - model.precision)),
                np.argmin(np.abs(SEVERITIES - model.severity)),
                np.argmin(np.abs(LAPSES - model.lapse)),
            ),
            GRID_SHAPE,
        )
    )


@dataclass(frozen=True)
class RaterFit:
    population: RaterModel
    raters: dict[Hashable, RaterModel]
    iterations: int
    # The level prior: the shares of the five levels among the pairs of unknown level, given the
    # fitted raters (each share at least LEVEL_FLOOR).
    levels: tuple[float, ...] = (0.2, 0.2, 0.2, 0.2, 0.2)


def raters_fit(
    ratings: Iterable[tuple[Hashable, Hashable, int]],
    known: dict[Hashable, int] | None = None,
    *,
    iterations: int = 20,
    rater_specific: bool = True,
) -> RaterFit:
    """Fit every rater's model by EM over ``(pair, rater, value)`` ratings.

    ``known`` maps pairs of known true level (control pairs: their expert rating) to it; the other
    pairs' levels are latent. With ``rater_specific`` False every rater shares the population's
    model (how ``POPULATION`` is fitted from anonymous ratings). Raises ValueError on no ratings.
    """
    known = known or {}
    rows = [(pair, rater, int(value)) for pair, rater, value in ratings]
    if not rows:
        raise ValueError("no ratings to fit")
    pairs = {pair: i for i, pair in enumerate(dict.fromkeys(pair for pair, _, _ in rows))}
    raters = {rater: i for i, rater in enumerate(dict.fromkeys(rater for _, rater, _ in rows))}
    pair_index = np.array([pairs[pair] for pair, _, _ in rows])
    rater_index = np.array([raters[rater] for _, rater, _ in rows]) if rater_specific else np.zeros(len(rows), int)
    values = np.array([value - 1 for _, _, value in rows])
    n_raters = len(raters) if rater_specific else 1
    fixed = np.full(len(pairs), -1)
    for pair, level in known.items():
        if pair in pairs:
            fixed[pairs[pair]] = level - 1
    grid = np.full(n_raters, _point_of(POPULATION))
    # Without known levels a shift of every rater is a shift of the truth: the crowd on average
    # defines the scale, so the population's severity is 0.
    unshifted = (
        None if (fixed >= 0).any() else np.unravel_index(np.arange(LOG_CONFUSION.shape[0]), GRID_SHAPE)[1] == NO_SHIFT
    )
    population = grid[0]
    levels = np.full(5, 0.2)
    fitted_in = 0
    for fitted_in in range(1, iterations + 1):  # noqa: B007 (the count is returned)
        # E step: each pair's posterior over its level (under the level prior), known pairs fixed.
        log_post = np.tile(np.log(levels), (len(pairs), 1))
        np.add.at(log_post, pair_index, LOG_CONFUSION[grid[rater_index], :, values])
        post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        latent = post[fixed < 0]
        levels = _levels_update(latent.sum(axis=0), len(latent))
        post[fixed >= 0] = np.eye(5)[fixed[fixed >= 0]]
        # M step: the expected confusion counts of each rater, then its grid MAP.
        counts = np.zeros((n_raters, 5, 5))
        np.add.at(counts, (rater_index, slice(None), values), post[pair_index])
        population = _grid_map(counts.sum(axis=0), 0.0, unshifted)
        if rater_specific:
            prior = _prior(population)
            updated = np.array([_grid_map(counts[r], prior) for r in range(n_raters)])
        else:
            updated = np.array([population])
        done = np.array_equal(updated, grid)
        grid = updated
        if done:
            break
    model = {rater: _model(grid[i if rater_specific else 0]) for rater, i in raters.items()}
    evidence = np.zeros((len(pairs), 5))
    np.add.at(evidence, pair_index, LOG_CONFUSION[grid[rater_index], :, values])
    return RaterFit(
        population=_model(population), raters=model, iterations=fitted_in, levels=levels_fit(evidence[fixed < 0])
    )


def _levels_update(posterior_sums: np.ndarray, pairs: int) -> np.ndarray:
    """The level shares from the latent pairs' summed posteriors, with one pseudo-pair per level."""
    shares = np.maximum((posterior_sums + 1.0) / (pairs + 5.0), LEVEL_FLOOR)
    return shares / shares.sum()


LEVEL_FLOOR = 0.01  # no level is ruled out by the prior, however rare in the study so far


def levels_fit(evidence: np.ndarray, iterations: int = 50) -> tuple[float, ...]:
    """The level prior that best explains pairs of these evidences (pairs x 5), by EM: each pair's
    posterior under the shares, the shares the mean of the posteriors, with one pseudo-pair per
    level so that a small study keeps every level possible. Flat without pairs."""
    shares = np.full(5, 0.2)
    if len(evidence) == 0:
        return tuple(shares.tolist())
    for _ in range(iterations):
        log_post = evidence + np.log(shares)
        post = np.exp(log_post - log_post.max(axis=1, keepdims=True))
        post /= post.sum(axis=1, keepdims=True)
        updated = _levels_update(post.sum(axis=0), len(evidence))
        if np.allclose(updated, shares, atol=1e-6):
            shares = updated
            break
        shares = updated
    return tuple(round(float(share), 4) for share in shares)


def _prior(population: int) -> np.ndarray:
    """The population's pull on a rater's grid point: the log-likelihood of ``PRIOR_RATINGS``
    pseudo-ratings answered as the population's model expects, spread evenly over the levels."""
    expected = np.exp(LOG_CONFUSION[population]) * (PRIOR_RATINGS / 5)
    return np.einsum("tk,gtk->g", expected, LOG_CONFUSION)


def _model(point: int) -> RaterModel:
    a, b, e = np.unravel_index(int(point), GRID_SHAPE)
    return RaterModel(
        precision=round(float(PRECISIONS[a]), 4), severity=round(float(SEVERITIES[b]), 4), lapse=float(LAPSES[e])
    )
