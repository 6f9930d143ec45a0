"""The ordinal rater model (scoring.ordinal): its probabilities, the VICR sample's fit, and the
recovery of known raters from a simulation drawn from the model itself."""

import math

import numpy as np
import pytest

from scoring import ordinal
from scoring.ordinal import RaterModel
from scoring.rating_files import read_ratings_file
from tests.shared_data import VICR_SAMPLE


@pytest.mark.parametrize("rater", [None, RaterModel(2.0, -0.5, 0.1), RaterModel(0.05, 1.2, 1.0)])
def test_each_level_gives_a_distribution_over_the_answers(rater):
    for truth in range(5):
        assert math.fsum(math.exp(ordinal.rating_evidence(k, rater)[truth]) for k in range(1, 6)) == pytest.approx(1)


def test_the_posterior_follows_the_ratings_and_a_random_clicker_counts_for_nothing():
    careful, clicker = RaterModel(2.0), RaterModel(2.0, 0.0, 1.0)
    evidence = None
    for value in (4, 4, 5):
        evidence = ordinal.evidence_add(evidence, value, careful)
    label, probability = ordinal.label_of(evidence)
    assert label == 4 and probability > 0.8
    # A rater whose every answer is random moves no pair's posterior.
    after = ordinal.evidence_add(evidence, 1, clicker)
    assert ordinal.posterior(after) == pytest.approx(ordinal.posterior(evidence))
    # The same rating from a careful rater moves it.
    assert ordinal.posterior(ordinal.evidence_add(evidence, 1, careful))[3] < ordinal.posterior(evidence)[3]


def test_no_rating_is_not_settled_and_a_harsh_raters_twos_read_as_threes():
    assert ordinal.change_probability(None) == pytest.approx(0.8)
    harsh = RaterModel(3.0, -1.0)
    evidence = None
    for _ in range(3):
        evidence = ordinal.evidence_add(evidence, 2, harsh)
    assert ordinal.label_of(evidence)[0] == 3


def vicr_rows():
    rows = []
    for pair, values in read_ratings_file(VICR_SAMPLE, format="wide").items():
        rows += [(pair, (pair, index), value) for index, value in enumerate(values)]
    return rows


@pytest.mark.skipif(not VICR_SAMPLE.is_file(), reason="the VICR sample is not at hand")
def test_the_population_model_is_the_vicr_samples_fit():
    rows = vicr_rows()
    assert len(rows) == 1118
    fit = ordinal.raters_fit(rows, rater_specific=False)
    assert fit.population == ordinal.POPULATION


def simulated(raters: dict[str, RaterModel], pairs: int, seed: int, per_pair: int = 5, shares=None):
    """Ratings drawn from the model itself: (pair, rater, value) and the true levels (drawn with
    ``shares``, equally likely by default)."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(np.arange(1, 6), size=pairs, p=shares)
    names = list(raters)
    rows = []
    for pair, level in enumerate(truth):
        for name in rng.choice(names, size=per_pair, replace=False):
            chances = np.array([math.exp(ordinal.rating_evidence(k, raters[name])[level - 1]) for k in range(1, 6)])
            rows.append((pair, name, int(rng.choice(5, p=chances / chances.sum())) + 1))
    return rows, truth


def test_the_fit_finds_the_careless_the_harsh_and_the_careful_raters_of_a_known_crowd():
    crowd = {f"good{i}": RaterModel(2.0) for i in range(12)}
    crowd |= {f"clicker{i}": RaterModel(0.5, 0.0, 1.0) for i in range(3)}
    crowd |= {"harsh": RaterModel(2.0, -0.8), "sloppy": RaterModel(0.4)}
    rows, truth = simulated(crowd, pairs=400, seed=1)
    fit = ordinal.raters_fit(rows)
    good = [fit.raters[f"good{i}"] for i in range(12)]
    # A random clicker is found to answer on the true level about as often as chance (1 in 5).
    for name in ("clicker0", "clicker1", "clicker2"):
        assert ordinal.exact_share(fit.raters[name]) < 0.3, fit.raters[name]
    assert min(ordinal.exact_share(model) for model in good) > ordinal.exact_share(crowd["good0"]) - 0.1
    assert fit.raters["harsh"].severity <= -0.5
    assert fit.raters["sloppy"].precision < min(fit.raters[f"good{i}"].precision for i in range(12))
    # The labels from the fitted models beat the rounded mean against the truth.
    evidence: dict[int, list] = {}
    means: dict[int, list] = {}
    for pair, name, value in rows:
        evidence[pair] = ordinal.evidence_add(evidence.get(pair), value, fit.raters[name])
        means.setdefault(pair, []).append(value)
    labels = np.array([ordinal.label_of(evidence[pair])[0] for pair in range(len(truth))])
    rounded = np.array([math.floor(np.mean(means[pair]) + 0.5) for pair in range(len(truth))])
    assert np.mean(labels == truth) > np.mean(rounded == truth) + 0.05


def test_the_posterior_is_calibrated_on_a_crowd_drawn_from_the_model():
    crowd = {f"r{i}": RaterModel(precision, 0.0, lapse) for i, (precision, lapse) in enumerate(
        [(0.6, 0.0), (1.0, 0.05), (1.5, 0.0), (2.5, 0.02), (0.8, 0.2)] * 3
    )}  # fmt: skip
    rows, truth = simulated(crowd, pairs=1500, seed=2, per_pair=3)
    evidence: dict[int, list] = {}
    for pair, name, value in rows:
        evidence[pair] = ordinal.evidence_add(evidence.get(pair), value, crowd[name])
    found = [ordinal.label_of(evidence[pair]) for pair in range(len(truth))]
    probability = np.array([p for _, p in found])
    correct = np.array([label for label, _ in found]) == truth
    # Where the model says 80% or more, about that share is right (with the true models).
    sure = probability >= 0.8
    assert correct[sure].mean() == pytest.approx(probability[sure].mean(), abs=0.03)
    assert correct.mean() == pytest.approx(probability.mean(), abs=0.03)


def test_fitting_nothing_is_a_clear_error():
    with pytest.raises(ValueError, match="no ratings"):
        ordinal.raters_fit([])


def test_the_level_prior_is_the_studys_own_and_its_labels_are_calibrated_and_better():
    """A study whose levels are far from even (most pairs 3 or 4, few 1): the fit finds the shares,
    and labels read with them are right more often than with a flat prior, and as often as they say."""
    crowd = {f"r{i}": RaterModel(precision, 0.0, lapse) for i, (precision, lapse) in enumerate(
        [(0.6, 0.0), (1.0, 0.05), (1.5, 0.0), (2.5, 0.02), (0.8, 0.2)] * 3
    )}  # fmt: skip
    shares = [0.02, 0.08, 0.20, 0.50, 0.20]
    rows, truth = simulated(crowd, pairs=2000, seed=3, per_pair=3, shares=shares)
    fit = ordinal.raters_fit(rows)
    assert fit.levels == pytest.approx(shares, abs=0.04)
    evidence: dict[int, list] = {}
    for pair, name, value in rows:
        evidence[pair] = ordinal.evidence_add(evidence.get(pair), value, fit.raters[name])
    flat = [ordinal.label_of(evidence[pair]) for pair in range(len(truth))]
    read = [ordinal.label_of(evidence[pair], fit.levels) for pair in range(len(truth))]
    accuracy = {
        name: np.mean([label for label, _ in found] == truth) for name, found in (("flat", flat), ("prior", read))
    }
    assert accuracy["prior"] > accuracy["flat"], accuracy
    probability = np.array([p for _, p in read])
    assert accuracy["prior"] == pytest.approx(probability.mean(), abs=0.03)


def test_the_level_prior_keeps_every_level_possible_and_is_flat_without_pairs():
    assert ordinal.levels_fit(np.zeros((0, 5))) == (0.2, 0.2, 0.2, 0.2, 0.2)
    # Ten pairs, every one a sure 4: the other levels keep a share (one pseudo-pair each).
    sure_four = np.tile(np.log([1e-6, 1e-6, 1e-6, 1.0, 1e-6]), (10, 1))
    levels = ordinal.levels_fit(sure_four)
    assert levels[3] == pytest.approx(11 / 15, abs=0.01) and min(levels) >= ordinal.LEVEL_FLOOR
    # The prior moves a pair's label only as far as its ratings leave room.
    evidence = ordinal.evidence_add(ordinal.evidence_add(None, 5, None), 4, None)
    assert ordinal.label_of(evidence)[0] == 5  # the top level's answers are likelier at the top
    assert ordinal.label_of(evidence, (0.05, 0.05, 0.1, 0.6, 0.2))[0] == 4
