"""The learned rating predictor (VICR paper section 6) on synthetic embeddings."""

import hashlib
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import kendalltau

from scoring.models import PredictorRun
from scoring.priming.model_vicr_training import Dataset, tau_method_a, train_and_record
from scoring.splits import TEST, TRAIN, split_for_image
from tests.scoring.priming.modules import needs_module

needs_module("torch", reason="torch is not installed (the predictor trains on workers)")

FAST = {"max_epochs": 150, "patience": 20, "dropout": 0.1}


def test_tau_method_a_puts_each_human_rating_on_its_own_row():
    predictions, ratings = np.array([1.0, 2.0, 4.0]), [[1, 2], [2, 3, 3], [5]]
    rows_x = [1, 1, 2, 2, 2, 4]
    rows_y = [1, 2, 2, 3, 3, 5]
    expected = kendalltau(rows_x, rows_y, variant="c").statistic
    assert tau_method_a(predictions, ratings) == pytest.approx(expected)


def synthetic(n_images: int, clip_informative: bool, seed: int = 0) -> Dataset:
    """Two captions per image; the rating is a function of the features (or of clip_raw)."""
    rng = np.random.default_rng(seed)
    shas = [hashlib.sha256(f"img{seed}-{i}".encode()).hexdigest() for i in range(n_images)]
    image_sha = [sha for sha in shas for _ in range(2)]
    features = rng.normal(size=(2 * n_images, 8)).astype(np.float32)
    quality = features[:, 0] + 0.5 * features[:, 1]
    if clip_informative:
        features = rng.normal(size=features.shape).astype(np.float32)  # features carry nothing
        clip_raw = 0.75 + 0.1 * quality
    else:
        clip_raw = rng.uniform(0.5, 1.0, len(quality))  # CLIP-S carries nothing
    mean = np.clip(3 + quality, 1, 5)
    ratings = [[int(np.clip(round(m + d), 1, 5)) for d in (-0.4, 0.0, 0.4)] for m in mean]
    return Dataset(
        pair_ids=list(range(len(mean))), image_sha256=image_sha, features=features, clip_raw=clip_raw, ratings=ratings
    )


@pytest.mark.django_db
def test_predictor_is_stored_and_activated_only_when_it_beats_clip_s(settings):
    good = synthetic(150, clip_informative=False)
    # The split is by image: both captions of an image land in the same split.
    assert all(split == split_for_image(sha) for split, sha in zip(good.splits, good.image_sha256, strict=True))
    run = train_and_record(good, base_identity="tiny", **FAST)
    m = run.metrics
    assert m["tau_c_test_predictor"] > m["tau_c_test_clip_s"] and m["beats_clip_s"] and run.active
    assert sum(m["pairs"].values()) == 300 and m["test_human_ratings"] == 3 * m["pairs"]["test"]
    assert (Path(settings.MEDIA_ROOT) / run.checkpoint).is_file() and run.checkpoint.startswith("predictors/")

    worse = train_and_record(synthetic(150, clip_informative=True, seed=1), base_identity="tiny", **FAST)
    assert worse.metrics["tau_c_test_predictor"] < worse.metrics["tau_c_test_clip_s"]
    assert not worse.active
    assert list(PredictorRun.objects.filter(active=True).values_list("pk", flat=True)) == [run.pk]
    assert PredictorRun.objects.count() == 2  # every run's metrics are kept


@pytest.mark.django_db
def test_too_little_data_is_refused():
    with pytest.raises(ValueError, match="not enough validated pairs"):
        train_and_record(synthetic(2, clip_informative=False), base_identity="tiny")


def with_ratings(dataset: Dataset, rows, ratings_for) -> Dataset:
    """A copy of the dataset with the human ratings of ``rows`` replaced (ratings_for(i) -> list)."""
    ratings = [ratings_for(i) if i in rows else list(r) for i, r in enumerate(dataset.ratings)]
    return Dataset(
        pair_ids=dataset.pair_ids,
        image_sha256=dataset.image_sha256,
        features=dataset.features,
        clip_raw=dataset.clip_raw,
        ratings=ratings,
    )


@pytest.mark.django_db
def test_clip_s_is_calibrated_on_the_training_split_only():
    from sklearn.isotonic import IsotonicRegression

    data = synthetic(200, clip_informative=True, seed=4)  # 400 pairs: over 200 in the training split
    splits = np.asarray(data.splits)
    train, test = set(np.flatnonzero(splits == TRAIN)), np.flatnonzero(splits == TEST)
    assert len(train) >= 200  # so the calibration is an isotonic fit, not the default map
    quick = {"max_epochs": 2, "patience": 1}

    run = train_and_record(data, base_identity="tiny", **quick)
    calibration = run.metrics["clip_s_calibration"]
    assert calibration["method"] == "isotonic" and calibration["fitted_on"] == "train"
    # By hand: isotonic regression of the mean rating on raw CLIP-S over the training rows,
    # applied to the test rows, against the test rows' human ratings (tau_c, method A).
    rows = sorted(train)
    regression = IsotonicRegression(increasing=True, y_min=1, y_max=5, out_of_bounds="clip")
    regression.fit(data.clip_raw[rows], [np.mean(data.ratings[i]) for i in rows])
    by_hand = tau_method_a(regression.predict(data.clip_raw[test]), [data.ratings[i] for i in test])
    assert run.metrics["tau_c_test_clip_s"] == pytest.approx(by_hand)

    # Ratings outside the training split (here all turned upside down) leave the calibration as it was ...
    outside = set(range(len(data.ratings))) - train
    flipped = with_ratings(data, outside, lambda i: [6 - r for r in data.ratings[i]])
    again = train_and_record(flipped, base_identity="tiny", **quick).metrics["clip_s_calibration"]
    assert (again["x_knots"], again["y_knots"]) == (calibration["x_knots"], calibration["y_knots"])
    # ... while the training ratings do move it (the check above can fail).
    moved = with_ratings(data, train, lambda i: [6 - r for r in data.ratings[i]])
    changed = train_and_record(moved, base_identity="tiny", **quick).metrics["clip_s_calibration"]
    assert changed["y_knots"] != calibration["y_knots"]
