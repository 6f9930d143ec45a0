"""Raw score -> 1-5 calibration (SPEC section 4): default map, isotonic fit, stored per prime."""

import numpy as np
import pytest
from sklearn.isotonic import IsotonicRegression

from scoring.priming.calibration import MIN_PAIRS_FOR_FIT, apply_knots, choose_knots, default_knots, fit_isotonic


def test_default_map_is_linear_from_half_to_one_clipped():
    # Hand values of rating = 1 + 8 * (raw - 0.5), clipped to [1, 5].
    x, y = default_knots()
    assert apply_knots([0.2, 0.5, 0.625, 0.75, 1.0, 1.3], x, y).tolist() == [1.0, 1.0, 2.0, 3.0, 5.0, 5.0]


def test_isotonic_fit_pools_adjacent_violators_by_hand():
    # Targets 1, 3, 2, 4 at raw 1..4: the violating pair (3, 2) pools to 2.5 (PAVA).
    x, y = fit_isotonic([1, 2, 3, 4], [1, 3, 2, 4])
    assert apply_knots([1, 2, 3, 4], x, y).tolist() == [1.0, 2.5, 2.5, 4.0]
    # Between knots: linear (1.5 -> halfway between 1 and 2.5); outside: the end values.
    assert apply_knots([1.5, 0.0, 9.0], x, y).tolist() == [1.75, 1.0, 4.0]


def test_fit_is_monotone_bounded_and_equals_sklearn_predict():
    rng = np.random.default_rng(3)
    raw = rng.uniform(0.3, 1.1, 300)
    target = np.clip(1 + 6 * (raw - 0.4) + rng.normal(0, 1.2, 300), 0, 6)
    x, y = fit_isotonic(raw, target)
    grid = np.linspace(0, 1.5, 400)
    calibrated = apply_knots(grid, x, y)
    assert np.all(np.diff(calibrated) >= 0)
    assert calibrated.min() >= 1 and calibrated.max() <= 5
    reference = IsotonicRegression(increasing=True, y_min=1, y_max=5, out_of_bounds="clip").fit(raw, target)
    assert calibrated == pytest.approx(reference.predict(grid))


def test_default_until_200_pairs_then_isotonic():
    rng = np.random.default_rng(0)
    raw, target = rng.uniform(0, 1, 200), rng.uniform(1, 5, 200)
    assert choose_knots(raw[:199], target[:199]) == ("default", *default_knots())
    assert MIN_PAIRS_FOR_FIT == 200 and choose_knots(raw, target)[0] == "isotonic"


def test_knots_must_be_monotone():
    with pytest.raises(ValueError):
        apply_knots([0.5], [0.0, 1.0], [5.0, 1.0])


@pytest.mark.django_db
def test_refit_stores_a_default_then_an_isotonic_calibration():
    from ratinggame.models import CaptionPair
    from scoring.models import Calibration, ModelRating
    from scoring.priming.calibration_service import calibration_key, current_calibration, refit, refit_all
    from tests.factories import CaptionPairFactory, ImageFactory

    images = [ImageFactory() for _ in range(5)]
    identity = "tiny weights=abc w=2.5"
    # Pairs with 3 human ratings whose mean rises with the raw score: 1 for raw < 0.5, else 5.
    for n in range(199):
        raw = n / 199
        mean = 1 if raw < 0.5 else 5
        pair = CaptionPairFactory(image=images[n % 5], human_count=3, human_sum=3 * mean, human_sumsq=3 * mean * mean)
        ModelRating.objects.create(pair=pair, slot=1, model_identity=identity, metric="clip_s", raw_score=raw, value=1)
    key = calibration_key("clip_s", identity)
    first = current_calibration("clip_s", identity)
    assert first.method == Calibration.Method.DEFAULT and first.model_identity == key
    assert refit(key).pk == first.pk  # 199 pairs: still the default, no new row
    extra = CaptionPairFactory(image=images[0], human_count=3, human_sum=15, human_sumsq=75)
    ModelRating.objects.create(pair=extra, slot=1, model_identity=identity, metric="clip_s", raw_score=0.99, value=1)
    # A pair with 2 human ratings is not validated and is left out of the fit.
    unvalidated = CaptionPairFactory(image=images[1], human_count=2, human_sum=10, human_sumsq=50)
    ModelRating.objects.create(
        pair=unvalidated, slot=1, model_identity=identity, metric="clip_s", raw_score=0.1, value=1
    )
    (fitted,) = refit_all()
    assert fitted.method == Calibration.Method.ISOTONIC and fitted.fitted_on_pairs == 200
    assert current_calibration("clip_s", identity).pk == fitted.pk
    assert apply_knots([0.2, 0.9], fitted.x_knots, fitted.y_knots).tolist() == [1.0, 5.0]
    assert CaptionPair.objects.count() == 201


@pytest.mark.django_db
def test_predictor_keeps_its_identity_map_and_demo_primes_are_not_refitted():
    from scoring.models import Calibration, ModelRating
    from scoring.priming.calibration_service import calibration_key, current_calibration, refit_all
    from scoring.priming.model_vicr import LearnedPredictor
    from scoring.priming.registry import DEMO_METRIC
    from tests.factories import CaptionPairFactory

    pair = CaptionPairFactory(human_count=3, human_sum=9, human_sumsq=27)
    # The learned predictor is already on the 1-5 scale: its default map is the identity (clip
    # only), and refitting never replaces it by a fit to human ratings.
    predictor = current_calibration(LearnedPredictor.metric, "run1:tiny")
    assert (predictor.x_knots, predictor.y_knots) == ([1.0, 5.0], [1.0, 5.0])
    # The demo's primes come from the written level, not from a model: there is nothing to refit.
    ModelRating.objects.create(pair=pair, slot=1, model_identity="demo", metric=DEMO_METRIC, raw_score=3, value=3)
    fitted = refit_all()
    assert [c.model_identity for c in fitted] == [calibration_key(LearnedPredictor.metric, "run1:tiny")]
    assert fitted[0].pk == predictor.pk
    assert not Calibration.objects.filter(model_identity=calibration_key(DEMO_METRIC, "demo")).exists()
