"""The latent regression of competency on tutorial score (annotators/competency/regression.py).

Pure module: simulated raters with a known link (or none) between tutorial score and game
competency; each test states the truth and its tolerance.
"""

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

from annotators.competency.regression import REGRESSION_MIN_RATERS, game_competency_regression, latent_regression
from tests.annotators.competency.test_pcm import pcm_probabilities


def test_latent_regression_recovers_a_known_slope_by_hand_least_squares():
    rng = np.random.default_rng(16)
    score = rng.uniform(50, 100, 113)
    ability = -1.2 + 0.017 * score + rng.normal(0, 0.3, 113)
    ability[:3] = np.nan  # raters without a fitted competency are left out
    fit = latent_regression(ability, score)
    x, y = score[3:], ability[3:]
    sxx = ((x - x.mean()) ** 2).sum()
    slope = ((x - x.mean()) * (y - y.mean())).sum() / sxx
    residual = y - (y.mean() + slope * (x - x.mean()))
    slope_se = np.sqrt((residual**2).sum() / (x.size - 2) / sxx)
    assert fit["n"] == 110 and fit["method"] == "OLS"
    assert fit["coef_per_percent"] == pytest.approx(slope)
    assert fit["se_per_percent"] == pytest.approx(slope_se)
    assert fit["coef_per_10_percent"] == pytest.approx(10 * slope)
    assert fit["intercept"] == pytest.approx(y.mean() - slope * x.mean())
    assert abs(fit["coef_per_percent"] - 0.017) < 3 * fit["se_per_percent"]
    assert fit["p_value"] < 0.05


def test_latent_regression_weights_by_inverse_squared_standard_error():
    rng = np.random.default_rng(17)
    score = rng.uniform(50, 100, 60)
    se = rng.uniform(0.1, 0.6, 60)
    ability = 0.02 * score + rng.normal(0, se)
    fit = latent_regression(ability, score, ability_se=se)
    # Weights 1 / (tau^2 + se^2), tau^2 the residual variance the errors do not explain.
    ols = sm.OLS(ability, sm.add_constant(score)).fit()
    tau_squared = max(0.0, np.var(ols.resid, ddof=2) - np.mean(se**2))
    assert fit["tau_squared"] == pytest.approx(tau_squared)
    w = 1 / (tau_squared + se**2)
    xm, ym = np.average(score, weights=w), np.average(ability, weights=w)
    slope = (w * (score - xm) * (ability - ym)).sum() / (w * (score - xm) ** 2).sum()
    assert fit["method"] == "WLS"
    assert fit["coef_per_percent"] == pytest.approx(slope)


TUTORIAL_ITEMS = 10


def simulated_game(seed: int, slope: float, n_raters: int = 113, n_pairs: int = 3000):
    """Rubric scores on 10 tutorial pairs (everyone) and n_pairs game pairs (3-7 raters each).

    Tutorial skill drives the tutorial pairs; the tutorial score is their rubric total, as on
    the site (2 points per exact agreement). Game competency = slope x tutorial percent + an
    independent part, so with slope 0 the game says nothing about the tutorial.
    Returns (responses, is_game_item, tutorial percent).
    """
    rng = np.random.default_rng(seed)
    skill = rng.normal(0.8, 0.8, n_raters)
    tutorial_delta = np.stack([rng.normal(-1.0, 0.5, TUTORIAL_ITEMS), rng.normal(0.5, 0.5, TUTORIAL_ITEMS)], axis=1)
    p = pcm_probabilities(skill[:, None], tutorial_delta[None])
    tutorial = (rng.random((n_raters, TUTORIAL_ITEMS))[..., None] > np.cumsum(p, axis=-1)[..., :2]).sum(axis=-1)
    percent = tutorial.sum(axis=1) / (2 * TUTORIAL_ITEMS) * 100
    theta = slope * (percent - percent.mean()) + rng.normal(0.8, 0.4, n_raters)
    step1 = rng.normal(-1.5, 0.8, n_pairs)
    game_delta = np.stack([step1, step1 + rng.normal(1.5, 0.6, n_pairs)], axis=1)
    game = np.full((n_raters, n_pairs), np.nan)
    for pair, size in enumerate(rng.integers(3, 8, n_pairs)):
        raters = rng.choice(n_raters, size, replace=False)
        q = pcm_probabilities(theta[raters], game_delta[pair])
        game[raters, pair] = (rng.random(size)[:, None] > np.cumsum(q, axis=-1)[:, :2]).sum(axis=-1)
    responses = np.hstack([tutorial.astype(float), game])
    is_game = np.r_[np.zeros(TUTORIAL_ITEMS, dtype=bool), np.ones(n_pairs, dtype=bool)]
    return responses, is_game, percent


def test_no_link_gives_a_slope_within_noise_of_zero_and_the_circular_fit_does_not():
    """True slope 0. The competency fitted with the tutorial pairs in it finds a slope (the audit:
    +0.0136 per 1%); fitted on game pairs only, the slope is within 2 SE of 0 in every seed."""
    circular, circular_se = [], []
    for seed in range(3):
        responses, is_game, percent = simulated_game(40 + seed, slope=0.0)
        fit = game_competency_regression(responses, is_game, percent)
        assert fit["converged"] and fit["n"] >= 100 and not fit["too_few"]
        assert abs(fit["coef_per_percent"]) < 2 * fit["se_per_percent"], seed
        everything = game_competency_regression(responses, np.ones_like(is_game), percent)
        circular.append(everything["coef_per_percent"])
        circular_se.append(everything["se_per_percent"])
    # The tutorial pairs inside the competency make a slope out of nothing: the mean of the
    # three circular slopes is more than 3 standard errors (of that mean) above 0.
    assert np.mean(circular) > 3 * np.sqrt(np.sum(np.square(circular_se))) / 3


def test_the_paper_slope_is_recovered_within_its_standard_error():
    """True slope 0.017 per 1% (the paper). Tolerance: 2 SE in each of 3 seeds, and the mean of
    the three within 1 SE (the estimates of independent seeds average the noise away)."""
    estimates, errors = [], []
    for seed in range(3):
        responses, is_game, percent = simulated_game(50 + seed, slope=0.017)
        fit = game_competency_regression(responses, is_game, percent)
        assert abs(fit["coef_per_percent"] - 0.017) < 2 * fit["se_per_percent"], seed
        estimates.append(fit["coef_per_percent"])
        errors.append(fit["se_per_percent"])
    assert abs(np.mean(estimates) - 0.017) < np.mean(errors)


def test_raters_with_few_game_responses_are_left_out_and_counted():
    responses, is_game, percent = simulated_game(60, slope=0.017, n_raters=40, n_pairs=400)
    counts = (~np.isnan(responses[:, is_game])).sum(axis=1)
    fit = game_competency_regression(responses, is_game, percent, min_responses=45)
    assert fit["n"] == int(np.sum(counts >= 45))
    assert fit["raters_too_few_responses"] == int(np.sum((counts > 0) & (counts < 45)))
    assert fit["min_responses"] == 45


def test_a_regression_over_few_raters_is_marked_too_few_to_interpret():
    rng = np.random.default_rng(61)
    score = rng.uniform(50, 100, 8)
    fit = latent_regression(rng.normal(0, 1, 8), score)
    assert fit["n"] == 8 and fit["too_few"] is True and fit["min_raters"] == REGRESSION_MIN_RATERS
    assert latent_regression(rng.normal(0, 1, 30), rng.uniform(50, 100, 30))["too_few"] is False


def test_the_coefficient_has_its_95_percent_interval_from_the_t_distribution():
    rng = np.random.default_rng(62)
    score = rng.uniform(50, 100, 40)
    fit = latent_regression(0.017 * score + rng.normal(0, 0.3, 40), score)
    half = stats.t.ppf(0.975, fit["n"] - 2) * fit["se_per_10_percent"]
    assert fit["ci_low_per_10_percent"] == pytest.approx(fit["coef_per_10_percent"] - half)
    assert fit["ci_high_per_10_percent"] == pytest.approx(fit["coef_per_10_percent"] + half)


def test_on_another_fits_scale_the_intercept_moves_with_its_origin_and_the_slope_stays():
    # The Wright map draws the regression over the whole analysis's fit, whose origin is not the
    # game-only fit's: put on a scale 3 logits higher, the line moves up 3 and keeps its slope.
    from annotators.competency.pcm import fit_pcm

    responses, is_game, percent = simulated_game(70, slope=0.017, n_raters=60, n_pairs=600)
    own = game_competency_regression(responses, is_game, percent)
    game = responses[:, is_game]
    rated = (~np.isnan(game)).sum(axis=1) > 0
    abilities = np.full(len(percent), np.nan)
    abilities[rated] = fit_pcm(game[rated]).abilities
    moved = game_competency_regression(responses, is_game, percent, scale_of=abilities + 3.0)
    assert moved["intercept"] == pytest.approx(own["intercept"] + 3.0, abs=1e-9)
    assert (moved["coef_per_percent"], moved["se_per_percent"]) == pytest.approx(
        (own["coef_per_percent"], own["se_per_percent"]), abs=1e-12
    )


def test_not_estimated_says_how_many_raters_lack_enough_scored_game_ratings():
    """40 raters, each with fewer than 45 game responses but 2: the fit is refused, and the
    reason names the requirement they miss (scored game ratings), not a generic one."""
    responses, is_game, percent = simulated_game(62, slope=0.017, n_raters=40, n_pairs=300)
    counts = (~np.isnan(responses[:, is_game])).sum(axis=1)
    threshold = int(np.sort(counts)[-2])  # exactly 2 raters reach it (no tie in this seed)
    assert int(np.sum(counts >= threshold)) == 2
    with pytest.raises(ValueError) as refused:
        game_competency_regression(responses, is_game, percent, min_responses=threshold)
    assert str(refused.value) == (
        f"2 raters with a tutorial score and at least {threshold} scored game ratings (game ratings with a "
        "consensus to score against), 3 needed; 38 raters have fewer scored game ratings"
    )
