"""The learned rating predictor: the VICR paper's Model_VICR, as the registry's priming scorer.

VICR paper section 6: the concatenated image and text embeddings of a pair feed a dense
network with hidden layers of 1,024 and 64 ReLU units, dropout on both, one output. Here the
embeddings are the priming scorer's (open_clip) instead of ViLBERT, each L2-normalised before
concatenation (as CLIP-S normalises them). The network is trained on this project's validated
ratings by ``scoring.priming.model_vicr_training``, which activates a run for priming only when
it beats calibrated CLIP-S on held-out ratings; the active run fills priming slot 2, the prime
kept longest (``scoring.priming.runner``). torch is imported inside functions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from django.conf import settings

from scoring.priming.calibration import identity_knots
from scoring.priming.clip_metrics import clip_identity
from scoring.priming.scorer import Knots, PrimingPair, RawScore

if TYPE_CHECKING:
    import torch

    from scoring.models import PredictorRun
    from scoring.priming.clip_scorer import ClipScorer
    from scoring.priming.configuration import PrimingModels

HIDDEN = (1024, 64)
_LOADED: dict[str, Any] = {}


def features_from_embeddings(image: np.ndarray, text: np.ndarray) -> np.ndarray:
    """Row-wise [image / |image|, text / |text|] (float32)."""
    image = image / np.maximum(np.linalg.norm(image, axis=1, keepdims=True), 1e-12)
    text = text / np.maximum(np.linalg.norm(text, axis=1, keepdims=True), 1e-12)
    return np.concatenate([image, text], axis=1).astype(np.float32)


def build_mlp(in_dim: int, dropout: float) -> torch.nn.Module:
    import torch

    return torch.nn.Sequential(
        torch.nn.Linear(in_dim, HIDDEN[0]),
        torch.nn.ReLU(),
        torch.nn.Dropout(dropout),
        torch.nn.Linear(HIDDEN[0], HIDDEN[1]),
        torch.nn.ReLU(),
        torch.nn.Dropout(dropout),
        torch.nn.Linear(HIDDEN[1], 1),
    )


def predict(model: torch.nn.Module, features: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return model(torch.from_numpy(np.asarray(features, dtype=np.float32))).squeeze(1).numpy().astype(float)


def active_predictor(base_identity: str) -> PredictorRun | None:
    # Imported here: scoring.models builds its metric choices from the registry, which imports this module.
    from scoring.models import PredictorRun

    return PredictorRun.objects.filter(active=True, base_model_identity=base_identity).order_by("-created_at").first()


def load_run(run: PredictorRun) -> torch.nn.Module:
    import torch

    # Keyed by the checkpoint file (timestamped, never reused), not the run id: a database
    # rebuilt under a live worker (as tests do) may give another run the same id.
    if run.checkpoint not in _LOADED:
        saved = torch.load(Path(settings.MEDIA_ROOT) / run.checkpoint, map_location="cpu", weights_only=True)
        model = build_mlp(saved["in_dim"], saved["dropout"])
        model.load_state_dict(saved["state_dict"])
        _LOADED[run.checkpoint] = model.eval()
    return _LOADED[run.checkpoint]


class LearnedPredictor:
    """The registry's learned predictor: the active Model_VICR run over the configured open_clip
    model's embeddings (the image embeddings come from that model's cache, filled by CLIP-S)."""

    metric = "predictor"
    label = "Learned predictor (Model_VICR)"
    explains = False
    refit = False  # trained on human ratings and already on the 1-5 scale (clipped only)

    def __init__(self, run: PredictorRun, clip: ClipScorer, batch_size: int) -> None:
        self.run = run
        self.clip = clip
        self.batch_size = batch_size
        self.identity = f"run{run.pk}:{clip_identity(clip)}"[:300]

    @classmethod
    def build(cls, models: PrimingModels) -> LearnedPredictor | None:
        if not models.model:
            return None
        clip = models.clip()
        run = active_predictor(clip_identity(clip))
        return cls(run, clip, models.batch_size) if run is not None else None

    @classmethod
    def default_knots(cls) -> Knots:
        return identity_knots()

    def score_pairs(self, pairs: Sequence[PrimingPair]) -> list[RawScore]:
        items = [(p.image_key, p.load_image, p.caption, None) for p in pairs]
        images, errors = self.clip.image_features(items, self.batch_size)
        results = [RawScore(error=errors.get(p.image_key, "image not scored")) for p in pairs]
        ready = [i for i, p in enumerate(pairs) if p.image_key in images]
        if not ready:
            return results
        text = self.clip.text_features([pairs[i].caption for i in ready], self.batch_size)
        features = features_from_embeddings(np.stack([images[pairs[i].image_key] for i in ready]), text)
        for i, value in zip(ready, np.clip(predict(load_run(self.run), features), 1.0, 5.0), strict=True):
            finite = bool(np.isfinite(value))
            results[i] = RawScore(value=float(value)) if finite else RawScore(error="non-finite prediction")
        return results
