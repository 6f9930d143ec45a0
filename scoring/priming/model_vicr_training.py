"""Training the learned rating predictor (``scoring.priming.model_vicr``) on this project's ratings.

VICR paper section 6: MSE loss; the data is split 64/16/20 and Kendall's tau_c ("method A")
is reported on the test split. The paper trains 4,000 epochs at lr 1e-5 with 80% dropout;
retraining online we use Adam at lr 1e-3, dropout 0.5 and early stopping on the validation MSE
(patience in epochs), all configurable.

Split by image with scoring.splits.split_for_image (no image in two splits). A run is activated
for priming only when its test tau_c beats the calibrated CLIP-S on the same test rows. That
CLIP-S calibration is fitted here on the training split only, by the same rule as the priming
calibration (scoring.priming.calibration.choose_knots: isotonic from MIN_PAIRS_FOR_FIT pairs, else the
documented default map), so no test rating reaches either side of the comparison. Worker code:
torch is imported inside functions only (``manage.py train_predictor``, ``scoring.tasks``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings
from django.db import transaction

from ratinggame.models import CaptionPair, Rating
from scoring.agreement import tau_c
from scoring.models import PredictorRun
from scoring.pictures import image_loader
from scoring.priming.calibration import apply_knots, choose_knots
from scoring.priming.clip_metrics import clip_identity
from scoring.priming.clipscore import clip_s
from scoring.priming.configuration import PrimingModels
from scoring.priming.model_vicr import HIDDEN, build_mlp, features_from_embeddings, predict
from scoring.priming.scorer import ScorerLoadError
from scoring.splits import TEST, TRAIN, VAL, split_for_image

if TYPE_CHECKING:
    import torch

    from scoring.priming.clip_scorer import ClipScorer

log = logging.getLogger(__name__)

MIN_PAIRS_PER_SPLIT = 2


@dataclass
class Dataset:
    """Validated pairs: features (n, d), raw CLIP-S (n,), human ratings per pair, image hashes."""

    pair_ids: list[int]
    image_sha256: list[str]
    features: np.ndarray
    clip_raw: np.ndarray
    ratings: list[list[int]]
    splits: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.splits:
            self.splits = [split_for_image(sha) for sha in self.image_sha256]


def tau_method_a(predictions: np.ndarray, ratings: list[list[int]]) -> float:
    """tau_c with each human rating its own row against the pair's prediction (method A, SPEC section 6)."""
    x = np.concatenate([np.full(len(r), p, dtype=float) for p, r in zip(predictions, ratings, strict=True)])
    y = np.concatenate([np.asarray(r, dtype=float) for r in ratings])
    return tau_c(x, y)


def train_mlp(
    x_train: np.ndarray,
    y_train: np.ndarray,
    x_val: np.ndarray,
    y_val: np.ndarray,
    *,
    seed: int = 0,
    dropout: float = 0.5,
    lr: float = 1e-3,
    batch_size: int = 256,
    max_epochs: int = 500,
    patience: int = 30,
) -> tuple[torch.nn.Module, dict[str, float]]:
    """Train with MSE and Adam; keep the weights of the epoch with the lowest validation MSE."""
    import torch

    torch.manual_seed(seed)
    model = build_mlp(x_train.shape[1], dropout)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    xt, yt = torch.from_numpy(x_train).float(), torch.from_numpy(y_train).float()
    xv, yv = torch.from_numpy(x_val).float(), torch.from_numpy(y_val).float()
    generator = torch.Generator().manual_seed(seed)
    best, best_state, best_epoch, epoch = float("inf"), None, 0, 0
    for epoch in range(1, max_epochs + 1):
        model.train()
        for rows in torch.randperm(len(xt), generator=generator).split(batch_size):
            optimiser.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xt[rows]).squeeze(1), yt[rows])
            loss.backward()
            optimiser.step()
        model.eval()
        with torch.no_grad():
            val = float(torch.nn.functional.mse_loss(model(xv).squeeze(1), yv))
        if val < best:
            best, best_epoch = val, epoch
            best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        elif epoch - best_epoch >= patience:
            break
    model.load_state_dict(best_state)
    model.eval()
    return model, {"val_mse": best, "best_epoch": best_epoch, "epochs_run": epoch}


def dataset_from_db(scorer: ClipScorer, batch_size: int = 64) -> Dataset:
    """The validated game pairs (``CaptionPair.objects.validated()``), embedded by the priming scorer."""
    pairs = list(CaptionPair.objects.validated().select_related("image").order_by("pk"))
    ratings: dict[int, list[int]] = {p.pk: [] for p in pairs}
    for pair_id, value in Rating.objects.counted().filter(pair_id__in=list(ratings)).values_list("pair_id", "value"):
        ratings[pair_id].append(value)
    images, errors = scorer.image_features(
        [(p.image.sha256, image_loader(p.image.file), p.caption, None) for p in pairs], batch_size
    )
    pairs = [p for p in pairs if p.image.sha256 in images]
    if errors:
        log.warning("predictor data: %d image(s) could not be decoded, their pairs are left out", len(errors))
    image = np.stack([images[p.image.sha256] for p in pairs]) if pairs else np.zeros((0, 1))
    text = scorer.encode_texts([p.caption for p in pairs], batch_size) if pairs else np.zeros((0, 1))
    return Dataset(
        pair_ids=[p.pk for p in pairs],
        image_sha256=[p.image.sha256 for p in pairs],
        features=features_from_embeddings(image, text) if pairs else np.zeros((0, 2), dtype=np.float32),
        clip_raw=clip_s(image, text, scorer.w) if pairs else np.zeros(0),
        ratings=[ratings[p.pk] for p in pairs],
    )


def clip_calibration_on_train(dataset: Dataset) -> tuple[str, list[float], list[float]]:
    """(method, x_knots, y_knots) of CLIP-S calibrated on the training split only.

    The same rule as the priming calibration (isotonic from MIN_PAIRS_FOR_FIT pairs, else
    the default map), fitted on the raw CLIP-S and mean human rating of the training rows.
    """
    rows = np.flatnonzero(np.asarray(dataset.splits) == TRAIN)
    target = [float(np.mean(dataset.ratings[i])) for i in rows]
    return choose_knots(dataset.clip_raw[rows], target)


def train_and_record(dataset: Dataset, *, base_identity: str, seed: int = 0, **train_kwargs: Any) -> PredictorRun:
    """Train, evaluate on the test split against calibrated CLIP-S, save, store a PredictorRun.

    CLIP-S is calibrated on the training split (``clip_calibration_on_train``). The run
    becomes the active predictor (and any other is deactivated) only when its test tau_c is
    strictly higher than calibrated CLIP-S's. Raises ValueError with too little data.
    """
    import torch

    splits = np.asarray(dataset.splits)
    index = {name: np.flatnonzero(splits == name) for name in (TRAIN, VAL, TEST)}
    sizes = {name: len(rows) for name, rows in index.items()}
    if min(sizes.values()) < MIN_PAIRS_PER_SPLIT:
        raise ValueError(f"not enough validated pairs to train: {sizes} (need {MIN_PAIRS_PER_SPLIT} per split)")
    target = np.array([np.mean(r) for r in dataset.ratings], dtype=np.float32)
    x = dataset.features.astype(np.float32)
    model, info = train_mlp(
        x[index[TRAIN]], target[index[TRAIN]], x[index[VAL]], target[index[VAL]], seed=seed, **train_kwargs
    )
    test_rows = index[TEST]
    test_ratings = [dataset.ratings[i] for i in test_rows]
    predicted = np.clip(predict(model, x[test_rows]), 1.0, 5.0)
    clip_method, *clip_knots = clip_calibration_on_train(dataset)
    clip_calibrated = apply_knots(dataset.clip_raw[test_rows], *clip_knots)
    tau_predictor = tau_method_a(predicted, test_ratings)
    tau_clip = tau_method_a(clip_calibrated, test_ratings)
    better = bool(np.isfinite(tau_predictor) and (not np.isfinite(tau_clip) or tau_predictor > tau_clip))
    metrics = {
        "pairs": sizes,
        "test_human_ratings": int(sum(len(r) for r in test_ratings)),
        "tau_c_test_predictor": None if not np.isfinite(tau_predictor) else tau_predictor,
        "tau_c_test_clip_s": None if not np.isfinite(tau_clip) else tau_clip,
        "test_mse_predictor": float(np.mean((predicted - target[test_rows]) ** 2)),
        "beats_clip_s": better,
        "clip_s_calibration": {
            "method": clip_method,
            "fitted_on": "train",
            "x_knots": clip_knots[0],
            "y_knots": clip_knots[1],
        },
        "seed": seed,
        "hidden": list(HIDDEN),
        **info,
        **{k: v for k, v in train_kwargs.items() if isinstance(v, int | float)},
    }
    directory = Path(settings.MEDIA_ROOT) / "predictors"
    directory.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%f")
    path = directory / f"predictor-{stamp}.pt"
    dropout = float(train_kwargs.get("dropout", 0.5))
    torch.save({"state_dict": model.state_dict(), "in_dim": int(x.shape[1]), "dropout": dropout}, path)
    with transaction.atomic():
        if better:
            PredictorRun.objects.filter(active=True).update(active=False)
        return PredictorRun.objects.create(
            checkpoint=str(path.relative_to(settings.MEDIA_ROOT)),
            base_model_identity=base_identity,
            metrics=metrics,
            active=better,
        )


def train_from_db(seed: int = 0, **train_kwargs: Any) -> PredictorRun:
    """The periodic / command entry point: embed validated pairs with the priming scorer and train."""
    models = PrimingModels.from_settings()
    try:
        scorer = models.clip()
    except ScorerLoadError as exc:
        raise ValueError(str(exc)) from exc
    dataset = dataset_from_db(scorer, models.batch_size)
    return train_and_record(dataset, base_identity=clip_identity(scorer), seed=seed, **train_kwargs)
