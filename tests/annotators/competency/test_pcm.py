"""Partial Credit Model, latent regression and Wright map (annotators/pcm.py, wright_map.py).

Pure modules: these tests need no Django (`pytest -p no:django` works).
"""

import xml.etree.ElementTree as ET

import numpy as np
import pytest
import statsmodels.api as sm

from annotators.competency.pcm import (
    fit_pcm,
    latent_regression,
    rubric_score,
    rubric_scores,
    thurstonian_thresholds,
)
from annotators.competency.wright_map import wright_map_svg

SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(autouse=True)
def _isolated_media():
    """Overrides the suite-wide Django media fixture: nothing here touches Django."""
    yield


def pcm_probabilities(theta: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Masters (1982): P(X = k) ∝ exp(sum_{j<=k} (theta - delta_j)), written out for m = 2."""
    step1 = theta - delta[..., 0]
    numerators = np.stack([np.ones_like(step1), np.exp(step1), np.exp(step1 + theta - delta[..., 1])], axis=-1)
    return numerators / numerators.sum(axis=-1, keepdims=True)


def simulate(seed: int, theta: np.ndarray, delta: np.ndarray, observed: float) -> np.ndarray:
    """Scores drawn from the PCM for a random share `observed` of rater x item cells, NaN elsewhere."""
    rng = np.random.default_rng(seed)
    p = pcm_probabilities(theta[:, None], delta[None, :, :])
    u = rng.random(p.shape[:2])
    scores = (u[..., None] > np.cumsum(p, axis=-1)[..., :2]).sum(axis=-1).astype(float)
    scores[rng.random(scores.shape) >= observed] = np.nan
    return scores


def random_parameters(seed: int, n_raters: int, n_items: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, n_raters)
    step1 = rng.normal(-0.5, 1.5, n_items)
    delta = np.stack([step1, step1 + rng.normal(1.0, 0.5, n_items)], axis=1)
    return theta, delta


def test_recovers_known_abilities_and_thresholds_from_sparse_data():
    theta, delta = random_parameters(1, 200, 300)
    result = fit_pcm(simulate(2, theta, delta, observed=0.3))
    assert result.converged
    assert np.corrcoef(result.abilities, theta)[0, 1] > 0.9
    assert np.corrcoef(result.thresholds[:, 0], delta[:, 0])[0, 1] > 0.9
    assert np.corrcoef(result.thresholds[:, 1], delta[:, 1])[0, 1] > 0.9
    # Identification: the thresholds are centred.
    assert np.nanmean(result.thresholds) == pytest.approx(0.0, abs=1e-9)


def test_estimates_solve_the_jml_equations_with_null_category_smoothing():
    """Masters & Wright's JML equations: observed score = expected score for every rater,
    observed count of 'score >= j' = expected count for every item. An item where nobody
    scored AA is fitted to its documented smoothed counts n + 0.3 * (-1, 2, -1)."""
    theta, delta = random_parameters(3, 60, 40)
    scores = simulate(4, theta, delta, observed=0.6)
    column = scores[:, 0]
    column[column == 1] = 2  # item 0: LA and EA only
    assert {0.0, 2.0} <= set(column[~np.isnan(column)])
    result = fit_pcm(scores, bias_correction=False, tol=1e-10)
    assert not result.rater_extreme.any() and not result.item_extreme.any()
    assert result.item_null_category[0]

    observed = ~np.isnan(scores)
    p = pcm_probabilities(result.abilities[:, None], result.thresholds[None, :, :])
    expected_score = np.where(observed, p[..., 1] + 2 * p[..., 2], 0).sum(axis=1)
    np.testing.assert_allclose(expected_score, np.nansum(scores, axis=1), atol=1e-6)

    expected_counts = np.where(observed[..., None], p, 0).sum(axis=0)  # items x 3
    counts = np.stack([(scores == k).sum(axis=0) for k in range(3)], axis=1).astype(float)
    smoothed = counts.copy()
    null = (counts == 0).any(axis=1)
    assert np.array_equal(np.flatnonzero(null), np.flatnonzero(result.item_null_category))
    for item in np.flatnonzero(null):
        direction = np.array([1.0, -2.0, 1.0]) if counts[item, 1] > 0 else np.array([-1.0, 2.0, -1.0])
        smoothed[item] += 0.3 * direction
    np.testing.assert_allclose(expected_counts, smoothed, atol=1e-6)
    assert np.all(np.isfinite(result.thresholds[0]))


def test_bias_correction_is_the_wright_douglas_factor():
    theta, delta = random_parameters(5, 80, 30)
    scores = simulate(6, theta, delta, observed=0.5)
    plain = fit_pcm(scores, bias_correction=False)
    corrected = fit_pcm(scores)
    assert not plain.rater_extreme.any() and not plain.item_extreme.any()
    items_per_rater = (~np.isnan(scores)).sum(axis=1).mean()
    factor = (items_per_rater - 1) / items_per_rater
    assert corrected.bias_factor == pytest.approx(factor)
    np.testing.assert_allclose(corrected.thresholds, factor * plain.thresholds, atol=1e-5)
    # Raters are re-estimated against the corrected thresholds: shrunk toward the centre too.
    assert np.std(corrected.abilities) < np.std(plain.abilities)


def test_dichotomous_scores_reduce_to_the_rasch_model_fitted_by_logit_with_dummies():
    """With only LA/AA observed the PCM is the Rasch model; its JML estimate is the logistic
    regression on rater and item dummies, logit P(1) = theta_n - delta_i."""
    rng = np.random.default_rng(7)
    theta, difficulty = rng.normal(0, 1, 40), rng.normal(0, 1, 25)
    p = 1 / (1 + np.exp(-(theta[:, None] - difficulty[None, :])))
    scores = (rng.random(p.shape) < p).astype(float)
    scores[rng.random(p.shape) < 0.2] = np.nan
    result = fit_pcm(scores, bias_correction=False, tol=1e-10)
    assert result.categories == (0, 1)
    assert not result.rater_extreme.any() and not result.item_extreme.any()
    assert np.isnan(result.thresholds[:, 1]).all()

    raters, items = np.nonzero(~np.isnan(scores))
    design = np.hstack([np.eye(40)[raters], -np.eye(25)[items][:, 1:]])  # item 0 is the reference
    logit = sm.Logit(scores[raters, items], design).fit(method="newton", maxiter=100, disp=0)
    ours = result.abilities[raters] - result.thresholds[items, 0]
    np.testing.assert_allclose(ours, design @ logit.params, atol=1e-5)


def test_only_la_and_ea_observed_collapses_to_one_step_for_both_thresholds():
    theta, delta = random_parameters(8, 50, 20)
    dichotomous = np.minimum(simulate(9, theta, delta, observed=0.8), 1)
    as_la_ea = fit_pcm(2 * dichotomous)
    as_la_aa = fit_pcm(dichotomous)
    assert as_la_ea.categories == (0, 2)
    np.testing.assert_allclose(as_la_ea.abilities, as_la_aa.abilities)
    np.testing.assert_allclose(as_la_ea.thresholds[:, 0], as_la_aa.thresholds[:, 0])
    np.testing.assert_allclose(as_la_ea.thresholds[:, 1], as_la_aa.thresholds[:, 0])


def test_rater_with_all_ea_gets_a_finite_ability_above_everyone_else():
    theta, delta = random_parameters(10, 60, 50)
    scores = simulate(11, theta, delta, observed=0.5)
    rated = ~np.isnan(scores[0])
    scores[0, rated] = 2
    result = fit_pcm(scores)
    assert result.extreme_raters == [0]
    assert np.isfinite(result.abilities[0]) and np.isfinite(result.ability_se[0])
    assert result.abilities[0] > np.max(result.abilities[1:])
    # Winsteps' adjustment: the estimate reproduces the maximum score less 0.3 points.
    p = pcm_probabilities(result.abilities[0], result.thresholds[rated])
    assert (p[:, 1] + 2 * p[:, 2]).sum() == pytest.approx(2 * rated.sum() - 0.3, abs=1e-5)


def test_item_everyone_scores_ea_gets_finite_thresholds_and_the_easiest_ea():
    theta, delta = random_parameters(12, 60, 50)
    scores = simulate(13, theta, delta, observed=0.5)
    scores[~np.isnan(scores[:, 0]), 0] = 2
    result = fit_pcm(scores)
    assert result.extreme_items == [0]
    assert np.all(np.isfinite(result.thresholds[0])) and np.all(np.isfinite(result.threshold_se[0]))
    # 50%-chance (Thurstonian) thresholds: the all-EA item is the easiest to reach EA on (the
    # Wright map's sort key). Its AA threshold is low too, though an item nobody scored LA
    # on, rated by weaker raters, can be lower still.
    tau = thurstonian_thresholds(result.thresholds)
    assert tau[0, 1] < tau[1:, 1].min()
    assert tau[0, 0] < np.median(tau[1:, 0])


def test_unrated_raters_and_items_are_nan_and_do_not_change_the_others():
    theta, delta = random_parameters(14, 40, 30)
    scores = simulate(15, theta, delta, observed=0.6)
    padded = np.full((42, 31), np.nan)
    padded[1:41, :30] = scores
    base, with_gaps = fit_pcm(scores), fit_pcm(padded)
    assert np.isnan(with_gaps.abilities[[0, 41]]).all() and np.isnan(with_gaps.ability_se[[0, 41]]).all()
    assert np.isnan(with_gaps.thresholds[30]).all()
    assert not with_gaps.rater_extreme[[0, 41]].any() and not with_gaps.item_extreme[30]
    np.testing.assert_allclose(with_gaps.abilities[1:41], base.abilities)
    np.testing.assert_allclose(with_gaps.thresholds[:30], base.thresholds)


@pytest.mark.parametrize(
    "scores",
    [np.array([[0.0, 3.0], [1.0, 2.0]]), np.array([[0.5, 1.0], [1.0, 2.0]]), np.array([[2.0, 2.0], [2.0, np.nan]])],
)
def test_rejects_scores_outside_the_rubric_or_a_single_category(scores):
    with pytest.raises(ValueError):
        fit_pcm(scores)


def test_thurstonian_thresholds_by_hand():
    # delta = (0, 0): P(X >= 1) = 1/2 gives u^2 + u - 1 = 0, u = exp(theta) = 1/phi (golden ratio).
    golden = (1 + np.sqrt(5)) / 2
    np.testing.assert_allclose(thurstonian_thresholds(np.array([[0.0, 0.0]])), [[-np.log(golden), np.log(golden)]])
    delta = np.array([[-1.2, 0.4], [0.8, -0.5], [30.0, -30.0]])
    tau = thurstonian_thresholds(delta)
    at_tau1 = pcm_probabilities(tau[:, 0], delta)
    at_tau2 = pcm_probabilities(tau[:, 1], delta)
    np.testing.assert_allclose(1 - at_tau1[:, 0], 0.5)
    np.testing.assert_allclose(at_tau2[:, 2], 0.5)


def test_rubric_scores_exact_adjacent_and_lack_of_agreement():
    pairs = [(3, 3), (2, 3), (4, 3), (1, 3), (5, 1)]  # (rating, reference)
    assert [rubric_score(rating, reference) for rating, reference in pairs] == [2, 1, 1, 0, 0]
    np.testing.assert_array_equal(rubric_scores([3, 2, 5, np.nan], [3, 3, 2, 4]), [2, 1, 0, np.nan])
    with pytest.raises(ValueError):
        rubric_score(2.5, 3)


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
    w = 1 / se**2
    xm, ym = np.average(score, weights=w), np.average(ability, weights=w)
    slope = (w * (score - xm) * (ability - ym)).sum() / (w * (score - xm) ** 2).sum()
    assert fit["method"] == "WLS"
    assert fit["coef_per_percent"] == pytest.approx(slope)


def parse_svg(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output, parsed to prove it is well-formed XML


def svg_items(svg: str) -> list[ET.Element]:
    return [g for g in parse_svg(svg).iter(f"{SVG}g") if g.get("class") == "item"]


def test_wright_map_samples_many_items_sorted_by_ea_threshold():
    rng = np.random.default_rng(18)
    thresholds = np.sort(rng.normal(0, 1, (400, 2)), axis=1)
    regression = {"intercept": -0.9, "coef_per_percent": 0.017, "coef_per_10_percent": 0.17}
    regression |= {"se_per_10_percent": 0.03, "n": 113}
    svg = wright_map_svg(rng.normal(0, 1, 113), thresholds, regression=regression, max_items=50)
    root = parse_svg(svg)
    assert root.find(f"{SVG}title").text
    assert "Showing 50 of 400 pairs" in root.find(f"{SVG}desc").text
    items = svg_items(svg)
    assert len(items) == 50
    marks = [[m for m in item if "threshold" in (m.get("class") or "")] for item in items]
    assert all(sorted(m.get("class") for m in ms) == ["threshold aa", "threshold ea"] for ms in marks)
    # Ascending EA threshold = rising marks = falling SVG y coordinates; the extremes are kept.
    ea_y = [float(next(m for m in ms if m.get("class") == "threshold ea").get("y")) for ms in marks]
    assert ea_y == sorted(ea_y, reverse=True)
    assert f"{thresholds[:, 1].min():.2f}" in items[0].find(f"{SVG}title").text
    assert f"{thresholds[:, 1].max():.2f}" in items[-1].find(f"{SVG}title").text
    predictions = [g for g in root.iter(f"{SVG}g") if g.get("class") == "prediction"]
    assert [p.find(f"{SVG}title").text.split(":")[0] for p in predictions] == [
        f"Tutorial score {score}%" for score in (50, 60, 70, 80, 90, 100)
    ]
    # Predicted means rise with the tutorial score (positive slope): falling y.
    tick_y = [float(p.find(f"{SVG}line").get("y1")) for p in predictions]
    assert tick_y == sorted(tick_y, reverse=True) and tick_y[0] > tick_y[-1]


def test_wright_map_escapes_labels_and_skips_missing_thresholds():
    labels = ['dog <on> "sofa" & cat', "plain", "no EA"]
    thresholds = np.array([[-1.0, 0.5], [0.2, 1.0], [-0.3, np.nan]])
    svg = wright_map_svg(np.array([0.0, 0.4, np.nan]), thresholds, item_labels=labels)
    items = svg_items(svg)
    assert [i.find(f"{SVG}title").text.split(":")[0] for i in items] == ["no EA", labels[0], "plain"]
    shown_labels = [t.text for t in parse_svg(svg).iter(f"{SVG}text") if t.get("class") == "item-label"]
    assert labels[0] in shown_labels
    assert [len(list(i.iter(f"{SVG}rect"))) for i in items] == [0, 1, 1]
